// The speedup view of a device sweep (`--device cpu,cuda`): for each config
// run on several devices, each device's throughput with its interval, the
// speedup against the first device with the verdict every view gives
// (common/verdict.h), and, where every side
// was profiled, the time per sample of each operator category on each device
// (which categories gained most). Shared by `gpubench show` and the report.
#ifndef GPUBENCH_REPORT_SPEEDUP_H_
#define GPUBENCH_REPORT_SPEEDUP_H_

#include <string>
#include <vector>

#include "common/verdict.h"
#include "gpubench/v1/result.pb.h"

namespace gpubench::report {

// The repetitions of run's config in runs: the measured runs whose config
// (ConfigKey) is run's, run included, in order.
std::vector<const v1::Run*> RepeatsOf(const v1::Run& run, const std::vector<const v1::Run*>& runs);

struct DeviceSide {
  std::string device;  // as the run resolved it ("cuda:0"), else as asked
  const v1::Run* run = nullptr;  // the first run of the config on this device
  std::vector<const v1::Run*> runs;  // every repetition of it (run first)
  // Against the first side, by the one rule of every view
  // (verdict::CompareRuns over the repetitions): its verdict, and its
  // speedup (throughput ratio; 1 for itself) with a bootstrap interval where
  // each side has two runs or more (else low = high = 0).
  verdict::Comparison vs_baseline;
  double speedup = 1, speedup_low = 0, speedup_high = 0;
};

struct CategoryTimes {
  std::string category;
  // Self time per sample in microseconds, one per side; negative where that
  // side's profile has no time in the category.
  std::vector<double> us_per_sample;
};

struct DeviceSpeedup {
  std::string config;  // the config without its device
  std::vector<DeviceSide> sides;
  // Largest first by the first side's time; empty unless every side was
  // profiled.
  std::vector<CategoryTimes> categories;
};

// The configs of runs (succeeded runs only) that ran on two or more devices,
// in the order of their first run. The baseline is the CPU where the config
// ran on it, else the first device of the sweep; the other sides follow in
// the order of the runs. A device's later runs of the same config (repeats)
// are the side's repetitions. profile_iterations: the job's profiled iterations per run
// (JobSpec.profiling.iterations, 0: the default 5).
std::vector<DeviceSpeedup> DeviceSpeedups(const std::vector<const v1::Run*>& runs,
                                          int profile_iterations);

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_SPEEDUP_H_
