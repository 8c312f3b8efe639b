// Device and host telemetry sampled during a run's measured window: NVML on
// NVIDIA GPUs (libnvidia-ml.so.1 loaded at run time, so the binaries start
// on hosts without a driver), /proc for CPU and MPS runs. Torch-free and
// proto-free; convert.cc maps it to gpubench.v1.
#ifndef GPUBENCH_LAUNCHER_TELEMETRY_H_
#define GPUBENCH_LAUNCHER_TELEMETRY_H_

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpubench::telemetry {

// One reading. Fields a source does not have stay 0.
struct Sample {
  int64_t offset_ms = 0;  // since the sampler started
  float gpu_utilization_pct = 0;
  float memory_utilization_pct = 0;
  int64_t memory_used_bytes = 0;
  float sm_clock_mhz = 0;
  float memory_clock_mhz = 0;
  float power_w = 0;
  float temperature_c = 0;
  uint64_t throttle_reasons_mask = 0;  // NVML clocks-event reason bits
  double pcie_rx_bytes_per_s = 0;
  double pcie_tx_bytes_per_s = 0;
  float host_cpu_utilization_pct = 0;  // of this process, 100 = one core
  int64_t host_rss_bytes = 0;
  int gpu_processes = 0;  // compute processes on the GPU besides the job's own
};

// A GPU's health counters (NVML), read as a window starts and as it ends.
struct Health {
  bool ecc_known = false;       // NVML reported the ECC count
  uint64_t ecc_uncorrected = 0;  // uncorrected errors since the driver loaded
  bool rows_known = false;      // NVML reported remapped rows (sm_80+)
  unsigned rows_uncorrectable = 0;  // rows remapped after uncorrectable errors
  bool remap_pending = false;   // a remap waits for the GPU's reset
  bool remap_failed = false;    // a remap failed: the GPU needs service
};

struct Series {
  std::string source;              // "nvml", "host", or "" when unavailable
  std::string unavailable_reason;  // why there is no device telemetry
  int64_t interval_ms = 0;
  std::vector<Sample> samples;
  // CPU cores busy with everything but the job's own processes (see
  // OwnProcessGroup) over the window, on average; -1 where /proc/stat cannot
  // be read.
  double other_cpu_cores = -1;
  // CPU cores busy with the job's own processes but this one (its run's
  // other ranks, its other lanes) over the window, on average.
  double job_cpu_cores = 0;
  // The GPU's health as the window started and ended (NVML; neither known
  // elsewhere), and each XID the driver raised on it in between
  // (xids_watched: NVML let the sampler listen).
  Health health_before, health_after;
  bool xids_watched = false;
  std::vector<uint64_t> xids;
};

struct Field {
  double mean = 0;
  double max = 0;
};

struct Summary {
  bool available = false;
  std::string unavailable_reason;
  int sample_count = 0;
  Field gpu_utilization_pct, memory_utilization_pct, memory_used_bytes, sm_clock_mhz,
      memory_clock_mhz, power_w, temperature_c, pcie_rx_bytes_per_s, pcie_tx_bytes_per_s,
      host_cpu_utilization_pct;
  double energy_j = 0;           // mean power x the measured window
  double samples_per_joule = 0;  // throughput / mean power: both over one interval
  bool throttled = false;        // thermal or power reasons were active
  std::vector<std::string> throttle_reasons;  // every reason seen
  int gpu_processes = 0;         // most other compute processes at one reading
};

// NVML's clocks-event (throttle) reason bits that mean thermal or power
// limits, and their names.
inline constexpr uint64_t kThrottleSwPowerCap = 0x4;
inline constexpr uint64_t kThrottleHwSlowdown = 0x8;
inline constexpr uint64_t kThrottleSwThermal = 0x20;
inline constexpr uint64_t kThrottleHwThermal = 0x40;
inline constexpr uint64_t kThrottleHwPowerBrake = 0x80;
// Names of the bits set in mask ("sw_power_cap", "gpu_idle", ...).
std::vector<std::string> ThrottleReasonNames(uint64_t mask);
// True when mask holds a thermal or power reason (idle or application
// clocks do not count).
bool IsThermalOrPowerThrottle(uint64_t mask);

// Mean and max of each field, and the throttle flag, for a measured window
// of window_ms that ran at samples_per_s. Power is averaged over the time its
// readings span (trapezoid rule); samples per joule is samples_per_s over that
// mean power, so that work and energy are counted over the same interval, and
// energy_j is that mean power over the whole window (the readings start and
// end up to one interval inside it).
Summary Summarize(const Series& series, double samples_per_s, double window_ms);

// A telemetry source. Read may be called from the sampler thread only.
class Source {
 public:
  virtual ~Source() = default;
  virtual std::string name() const = 0;
  // Fills what it can; false when the reading failed.
  virtual bool Read(Sample* sample) = 0;
  // The device's health counters now; what the source does not know stays
  // unknown.
  virtual Health ReadHealth() { return {}; }
  // Whether it listens for XIDs, and those raised since the last call.
  virtual bool WatchesXids() const { return false; }
  virtual void TakeXids(std::vector<uint64_t>* xids) { (void)xids; }
};

// NVML for the GPU with this UUID ("GPU-8c1f...") or PCI bus id
// ("0000:1b:00.0"), else by NVML's index. nullptr with *why set when NVML or
// the GPU cannot be opened. The library is $GPUBENCH_NVML_LIBRARY when set,
// else libnvidia-ml.so.1. Each source initialises NVML once (NVML counts).
std::unique_ptr<Source> OpenNvml(const std::string& device_id, int index, std::string* why);

// This process's CPU utilisation and RSS from /proc/self.
std::unique_ptr<Source> OpenHost();

// Set ("1") by the launcher (launcher/process.h) in a worker's environment:
// the worker's process group holds its job's processes and nothing else.
inline constexpr char kJobProcessGroupEnv[] = "GPUBENCH_JOB_PROCESS_GROUP";

// The process group whose processes are this process's job's own (a
// distributed run's other ranks, a cuda:all job's other lanes): its own
// group where kJobProcessGroupEnv is set, else 0 (this process alone: a
// test binary shares its group with the test runner).
pid_t OwnProcessGroup();

// CPU seconds (user + system, every thread) of each process in process
// group pgid, by PID, from /proc/[pid]/stat; false where /proc cannot be
// listed. A process that ends meanwhile is left out.
bool GroupCpuSeconds(pid_t pgid, std::map<pid_t, double>* cpu_s_by_pid);

// The host's CPU time spent outside the job's own processes between two
// readings: (busy jiffies of /proc/stat's "cpu" line - the CPU time of the
// processes of own_group, or of this process where own_group is 0) / wall
// time, in cores. Linux only; Read is false elsewhere.
class OtherCpuLoad {
 public:
  // The first reading.
  explicit OtherCpuLoad(pid_t own_group = OwnProcessGroup());
  // Cores busy elsewhere since construction, and (job_cores, when not
  // null) those busy in own_group's other processes; false where /proc/stat
  // or /proc/self/stat cannot be read. A process of the group that ended
  // inside the window counts as elsewhere for the part it ran in it.
  bool Read(double* cores, double* job_cores = nullptr) const;

 private:
  // This process's and its group's CPU seconds by PID.
  bool ReadOwn(std::map<pid_t, double>* own_s) const;

  const pid_t own_group_;
  double busy_s_ = -1;
  std::map<pid_t, double> own_s_;
  int64_t start_ms_ = 0;
};

// Reads a source every interval on its own thread between Start and Stop,
// and the CPU load of other processes between the two.
// Start/Stop from one thread; not reusable after Stop.
class Sampler {
 public:
  Sampler(std::unique_ptr<Source> source, int64_t interval_ms);
  ~Sampler();
  void Start();
  Series Stop();

 private:
  void Loop();

  const std::unique_ptr<Source> source_;
  const int64_t interval_ms_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::vector<Sample> samples_;  // written by the thread until Stop joins it
  std::vector<uint64_t> xids_;   // likewise
  Health health_before_;         // from Start
  std::unique_ptr<OtherCpuLoad> other_load_;  // from Start
};

}  // namespace gpubench::telemetry

#endif  // GPUBENCH_LAUNCHER_TELEMETRY_H_
