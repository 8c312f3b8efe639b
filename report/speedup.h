// The speedup view of a device sweep (`--device cpu,cuda`): for each config
// run on several devices, each device's throughput with its interval, the
// speedup against the first device with its interval, and, where every side
// was profiled, the time per sample of each operator category on each device
// (which categories gained most). Shared by `gpubench show` and the report.
#ifndef GPUBENCH_REPORT_SPEEDUP_H_
#define GPUBENCH_REPORT_SPEEDUP_H_

#include <string>
#include <vector>

#include "gpubench/v1/result.pb.h"

namespace gpubench::report {

// a's throughput over b's, with an interval whose ends are the ratios of the
// two runs' 95% intervals' ends: it holds at least 95%. Without both
// intervals the ratio has none (low = high = 0).
struct ThroughputRatio {
  double ratio = 1, low = 0, high = 0;
  bool has_interval() const { return high > 0; }
  // A difference the interval supports: it leaves out 1x.
  bool faster() const { return has_interval() && low > 1; }
  bool slower() const { return has_interval() && high < 1; }
};
ThroughputRatio RatioOf(const v1::RunResult& a, const v1::RunResult& b);

struct DeviceSide {
  std::string device;  // as the run resolved it ("cuda:0"), else as asked
  const v1::Run* run = nullptr;
  // Against the first side (1 for itself). The interval is the ratio of the
  // two runs' 95% intervals' ends: it holds at least 95%.
  double speedup = 1, speedup_low = 1, speedup_high = 1;
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
// the order of the runs. A device's later run of the same config (a repeat)
// is ignored. profile_iterations: the job's profiled iterations per run
// (JobSpec.profiling.iterations, 0: the default 5).
std::vector<DeviceSpeedup> DeviceSpeedups(const std::vector<const v1::Run*>& runs,
                                          int profile_iterations);

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_SPEEDUP_H_
