// The energy Pareto curve of a power-limit sweep, over seeded runs: which
// settings no other beats on both throughput and samples per joule.
#include "report/energy.h"

#include <gtest/gtest.h>

namespace gpubench::report {
namespace {

v1::Run PowerRun(int index, double watts, double samples_per_s, double per_joule) {
  v1::Run r;
  r.set_index(index);
  r.set_run_id("r" + std::to_string(index));
  r.set_state(v1::RUN_STATE_SUCCEEDED);
  r.mutable_config()->set_workload("resnet50");
  r.mutable_config()->set_device("cuda:0");
  r.mutable_config()->set_batch_size(64);
  r.mutable_config()->set_power_limit_w(watts);
  r.mutable_fingerprint()->set_power_limit_w(watts);
  r.mutable_result()->set_throughput_samples_per_s(samples_per_s);
  r.mutable_result()->mutable_telemetry()->set_samples_per_joule(per_joule);
  r.mutable_result()->mutable_telemetry()->mutable_power_w()->set_mean(samples_per_s / per_joule);
  return r;
}

TEST(Energy, TheCurveHoldsTheSettingsNoOtherBeatsOnBoth) {
  std::vector<v1::Run> runs = {
      PowerRun(0, 250, 50, 0.22),   // beaten by 350 W on both
      PowerRun(1, 700, 100, 0.20),  // fastest
      PowerRun(2, 500, 95, 0.25),
      PowerRun(3, 350, 80, 0.27),   // most per joule
      PowerRun(4, 600, 94, 0.24),   // beaten by 500 W on both
  };
  // Another batch at one limit only: no curve of its own.
  runs.push_back(PowerRun(5, 700, 120, 0.2));
  runs.back().mutable_config()->set_batch_size(128);
  // A CPU run has no energy figure.
  v1::Run cpu = PowerRun(6, 0, 10, 0);
  cpu.mutable_config()->set_device("cpu");
  runs.push_back(cpu);
  std::vector<const v1::Run*> pointers;
  for (const v1::Run& r : runs) pointers.push_back(&r);
  const std::vector<EnergyCurve> curves = EnergyCurves(pointers);
  ASSERT_EQ(curves.size(), 1u);
  EXPECT_EQ(curves[0].config.find("W"), std::string::npos) << curves[0].config;
  ASSERT_EQ(curves[0].points.size(), 5u);
  std::vector<double> limits;
  std::vector<bool> on;
  for (const EnergyPoint& p : curves[0].points) {
    limits.push_back(p.power_limit_w);
    on.push_back(p.on_curve);
  }
  EXPECT_EQ(limits, (std::vector<double>{700, 600, 500, 350, 250}));
  EXPECT_EQ(on, (std::vector<bool>{true, false, true, true, false}));
  EXPECT_DOUBLE_EQ(curves[0].points[3].power_w, 80 / 0.27);
}

}  // namespace
}  // namespace gpubench::report
