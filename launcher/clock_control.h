// Clock and power control of the GPUs, for the runs that ask for it
// (RunConfig.power_limit_w, gpu_clocks) on a daemon whose operator allowed
// it (gpubenchd --allow-clock-control). Each change is written to a state
// file before it is made and removed once undone, so that what a crashed
// daemon left set is undone at its next start. Torch-free and proto-free.
//
//   ClockControl clocks(nvml::Library::Open(&why), data_dir + "/clock_state");
//   clocks.RecoverAtStart();                         // a crashed daemon's leftovers
//   auto applied = clocks.Apply("00000000:1B:00.0", 0, {500, "max"});
//   ... the run ...
//   clocks.Restore("00000000:1B:00.0", 0);
//
// Thread-safe: lanes on several GPUs apply and restore at once.
#ifndef GPUBENCH_LAUNCHER_CLOCK_CONTROL_H_
#define GPUBENCH_LAUNCHER_CLOCK_CONTROL_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "launcher/nvml.h"

namespace gpubench {

// What a run asks of its GPU.
struct GpuSetting {
  double power_limit_w = 0;  // 0: as it is
  std::string clocks;        // "": free; "base", "max", or MHz ("1410")

  bool empty() const { return power_limit_w == 0 && clocks.empty(); }
  bool operator==(const GpuSetting& o) const {
    return power_limit_w == o.power_limit_w && clocks == o.clocks;
  }
};

// What Apply set.
struct AppliedSetting {
  unsigned int power_limit_mw = 0;  // 0: left as it was
  unsigned int locked_mhz = 0;      // 0: clocks left free
};

class ClockControl {
 public:
  // nvml may be null (no driver): Apply then fails saying so, and
  // RecoverAtStart cannot undo anything (it keeps the state file).
  ClockControl(std::shared_ptr<nvml::Library> nvml, std::string state_path);

  // Undoes what the state file says a previous daemon left set, GPU by GPU,
  // and removes the file; what it undid, in words ("GPU-8c1f...: power limit
  // back to 700 W, clocks unlocked"). A GPU it cannot undo stays in the
  // file and fails the call; an entry naming no GPU NVML knows, or a power
  // limit outside the board's range, is dropped unapplied and fails it.
  absl::StatusOr<std::vector<std::string>> RecoverAtStart();

  // Sets `setting` on the GPU device_id names (a UUID "GPU-8c1f..." or a
  // PCI bus id "00000000:1B:00.0"; by NVML's index where empty), having
  // first recorded how it was. InvalidArgument naming the
  // config field for a value outside the board's range; PermissionDenied or
  // FailedPrecondition with NVML's reason where it refuses. A partial change
  // is undone before an error returns.
  absl::StatusOr<AppliedSetting> Apply(const std::string& device_id, int index,
                                       const GpuSetting& setting);

  // Puts the GPU back as it was before Apply (the power limit it had, the
  // clocks unlocked) and drops it from the state file. OK where nothing was
  // applied.
  absl::Status Restore(const std::string& device_id, int index);

 private:
  // How a GPU was before gpubench changed it.
  struct Saved {
    Saved() = default;
    Saved(unsigned int power, bool lock) : power_limit_mw(power), locked(lock) {}
    unsigned int power_limit_mw = 0;  // 0: gpubench did not change it
    bool locked = false;              // gpubench locked its clocks
  };

  absl::Status Find(const std::string& key, nvml::Device* device) const;
  // A state file's entry names a GPU NVML knows and a power limit the
  // board takes (the file is the daemon's own, but it is read before
  // anything it says is set).
  absl::Status CheckSaved(const std::string& key, const Saved& saved) const;
  absl::Status Undo(const std::string& key, const Saved& saved) const;
  absl::Status WriteState() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A failed Apply: undoes `done` (the part that was set) and forgets the
  // GPU; why, with anything that went wrong on the way.
  absl::Status Abandon(const std::string& key, const Saved& done, absl::Status why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<nvml::Library> nvml_;
  const std::string state_path_;
  mutable absl::Mutex mu_;
  std::map<std::string, Saved> saved_ ABSL_GUARDED_BY(mu_);  // by device id, or "#index"
};

}  // namespace gpubench

#endif  // GPUBENCH_LAUNCHER_CLOCK_CONTROL_H_
