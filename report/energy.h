// The energy Pareto curve of a power-limit sweep (`--power-limit
// 700,500,350`): for each config run at several GPU settings, each
// setting's throughput and samples per joule, and which settings no other
// beats on both. Shared by `gpubench show` and its JSON.
#ifndef GPUBENCH_REPORT_ENERGY_H_
#define GPUBENCH_REPORT_ENERGY_H_

#include <string>
#include <vector>

#include "gpubench/v1/result.pb.h"

namespace gpubench::report {

struct EnergyPoint {
  const v1::Run* run = nullptr;
  double power_limit_w = 0;       // as set (the fingerprint's), else as asked; 0: unknown
  std::string gpu_clocks;         // the run's asked lock, "" for free
  double samples_per_s = 0;
  double samples_per_joule = 0;   // the telemetry's: samples / (mean power * time)
  double power_w = 0;             // mean board power while measuring
  // No other point of the curve has at least as much of both figures and
  // more of one.
  bool on_curve = false;
};

struct EnergyCurve {
  std::string config;               // the config without its GPU setting
  std::vector<EnergyPoint> points;  // highest power limit first
};

// The configs of runs (measured, with GPU energy figures) run at two or more
// GPU settings, in the order of their first run.
std::vector<EnergyCurve> EnergyCurves(const std::vector<const v1::Run*>& runs);

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_ENERGY_H_
