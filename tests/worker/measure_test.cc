#include "worker/measure.h"

#include <gtest/gtest.h>

#include <random>

namespace gpubench::measure {
namespace {

class FakeClock : public Clock {
 public:
  int64_t NowNs() override { return now_ns; }
  int64_t now_ns = 0;
};

// Each step advances the fake clock by a duration the test chooses.
class FakeStepper : public Stepper {
 public:
  FakeStepper(FakeClock* clock, std::function<int64_t()> step_ns)
      : clock_(clock), step_ns_(std::move(step_ns)) {}
  absl::Status Step(double* wait) override {
    *wait = 0;
    clock_->now_ns += step_ns_();
    ++steps;
    return absl::OkStatus();
  }
  absl::Status Flush(std::vector<double>*) override { return absl::OkStatus(); }
  int steps = 0;

 private:
  FakeClock* clock_;
  std::function<int64_t()> step_ns_;
};

engine::MeasureConfig Config() {
  engine::MeasureConfig c;
  c.warmup_iterations = 5;
  c.min_iterations = 20;
  c.min_time_ms = 100;
  c.max_time_ms = 10000;
  c.window_iterations = 10;
  c.cv_threshold = 0.02;
  return c;
}

TEST(Measure, SteadyClockStopsEarlyAndStable) {
  FakeClock clock;
  FakeStepper stepper(&clock, [] { return int64_t{2'000'000}; });  // 2 ms
  auto out = Measure(Config(), 16, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->stable);
  // 100 ms at 2 ms a step is 50 steps: stops at the first window past it.
  EXPECT_EQ(out->iterations, 50);
  EXPECT_NEAR(out->measured_ms, 100, 1e-6);
  EXPECT_NEAR(out->window_throughput.back(), 16 / 0.002, 1e-3);
  EXPECT_DOUBLE_EQ(out->device_ms.front(), 2.0);
}

TEST(Measure, NoisyClockRunsToMaxTimeAndIsUnstable) {
  FakeClock clock;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> ns(1'000'000, 6'000'000);
  FakeStepper stepper(&clock, [&] { return ns(rng); });
  engine::MeasureConfig c = Config();
  c.window_iterations = 2;  // short windows keep the noise visible
  c.max_time_ms = 1000;
  auto out = Measure(c, 1, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->stable);
  EXPECT_GE(out->measured_ms, 1000);
  EXPECT_GT(out->window_cv, c.cv_threshold);
}

TEST(Measure, CancelKeepsPartialResults) {
  FakeClock clock;
  std::atomic<bool> cancel{false};
  FakeStepper* self = nullptr;
  FakeStepper stepper(&clock, [&] {
    if (self != nullptr && self->steps >= 30) cancel = true;
    return int64_t{1'000'000};
  });
  self = &stepper;
  auto out = Measure(Config(), 1, &clock, &stepper, nullptr, &cancel);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->cancelled);
  EXPECT_FALSE(out->stable);
  EXPECT_GT(out->iterations, 0);
  EXPECT_LT(out->iterations, 50);
}

TEST(Measure, TrialsAreIndependentWindows) {
  FakeClock clock;
  FakeStepper stepper(&clock, [] { return int64_t{1'000'000}; });
  engine::MeasureConfig c = Config();
  c.trials = 3;
  auto out = Measure(c, 4, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->trials.size(), 3u);
  for (const auto& t : out->trials) EXPECT_NEAR(t.throughput_samples_per_s, 4000, 1e-6);
}

}  // namespace
}  // namespace gpubench::measure
