// A worker that runs as another user (gpubenchd --worker-user): it opens
// its models while it is still the daemon's user, then becomes the worker
// user for good. The user's own rights then bound what a job's code can
// reach, beneath Landlock and on hosts without it: the daemon's files are
// 0600, so the worker user cannot read them whatever the model does.
// Torch-free.
#ifndef GPUBENCH_WORKER_RUN_AS_H_
#define GPUBENCH_WORKER_RUN_AS_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpubench/v1/worker.pb.h"

namespace gpubench::worker {

// Models opened before the switch, by the path the worker located.
struct HeldModels {
  std::map<std::string, int> fds;             // TorchScript: read from the descriptor
  std::map<std::string, std::string> copies;  // AOTInductor packages: a copy in scratch
  // A spec's model_path -> the path located then: the worker user may not
  // pass the folders above it, so it cannot resolve the path again.
  std::map<std::string, std::string> located;
};

// Opens each of paths (TorchScript) as a descriptor, and copies each of
// packages (AOTInductor, which LibTorch loads by path) into scratch_dir,
// owned by run_as. Call as the daemon's user.
absl::StatusOr<HeldModels> HoldModels(const std::map<std::string, bool>& paths_is_package,
                                      const std::string& scratch_dir, const v1::RunAs& run_as);

// Copies from into to (a new file), owned by run_as and readable by it only.
absl::Status CopyForUser(const std::string& from, const std::string& to, const v1::RunAs& run_as);

// Becomes run_as for good: supplementary groups, group, user (real,
// effective and saved), and the parent-death signal again (a change of
// credentials clears it). Fails if any step fails or if the daemon is
// already gone.
absl::Status BecomeUser(const v1::RunAs& run_as);

}  // namespace gpubench::worker

#endif  // GPUBENCH_WORKER_RUN_AS_H_
