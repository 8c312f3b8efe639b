#include "worker/measure.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

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
    *wait = wait_ns / 1e6;
    clock_->now_ns += wait_ns + step_ns_();
    ++steps;
    return absl::OkStatus();
  }
  absl::Status Flush(std::vector<double>*) override { return absl::OkStatus(); }
  void Reserve(int window) override { reserved = window; }
  int steps = 0;
  int reserved = 0;
  int64_t wait_ns = 0;  // input wait added before each step's work

 private:
  FakeClock* clock_;
  std::function<int64_t()> step_ns_;
};

measure::MeasureConfig Config() {
  measure::MeasureConfig c;
  c.warmup_iterations = 5;
  c.min_iterations = 20;
  c.min_time_ms = 100;
  c.max_time_ms = 10000;
  c.window_iterations = 10;
  c.cv_threshold = 0.02;
  return c;
}

// Records the timeline ranges the loop opens, and the steps inside them.
class RangeRecorder : public FakeStepper {
 public:
  using FakeStepper::FakeStepper;
  absl::Status Step(double* wait) override {
    ++steps_in[open.empty() ? "" : open.back()];
    if (fail_at > 0 && steps + 1 == fail_at) return absl::InternalError("step failed");
    return FakeStepper::Step(wait);
  }
  void BeginRange(const char* kind, int index) override {
    open.push_back(kind);
    begun.push_back(std::string(kind) + " " + std::to_string(index));
  }
  void EndRange() override {
    ASSERT_FALSE(open.empty());
    open.pop_back();
  }
  std::vector<std::string> open, begun;
  std::map<std::string, int> steps_in;  // by the innermost open range
  int fail_at = 0;                      // the step that fails, from 1
};

TEST(Measure, EachPhaseWindowAndIterationIsARange) {
  FakeClock clock;
  RangeRecorder stepper(&clock, [] { return int64_t{2'000'000}; });
  auto out = Measure(Config(), 16, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(stepper.open.empty());
  // Warm-up's 5 steps run in its range; each measured step in its own.
  EXPECT_EQ(stepper.steps_in["warm-up"], 5);
  EXPECT_EQ(stepper.steps_in["iteration"], out->iterations);
  EXPECT_EQ(stepper.steps_in[""], 0);
  ASSERT_GE(stepper.begun.size(), 3u);
  EXPECT_EQ(stepper.begun[0], "warm-up 0");
  EXPECT_EQ(stepper.begun[1], "window 0");
  EXPECT_EQ(stepper.begun[2], "iteration 0");
  EXPECT_EQ(std::count(stepper.begun.begin(), stepper.begun.end(), "window 4"), 1);
  EXPECT_EQ(std::count(stepper.begun.begin(), stepper.begun.end(), "window 5"), 0);
  EXPECT_EQ(std::count(stepper.begun.begin(), stepper.begun.end(), "iteration 9"), 5);
  // A step that fails still closes every range it was in.
  RangeRecorder failing(&clock, [] { return int64_t{2'000'000}; });
  failing.fail_at = 12;
  EXPECT_FALSE(Measure(Config(), 16, &clock, &failing, nullptr, nullptr).ok());
  EXPECT_TRUE(failing.open.empty());
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
  measure::MeasureConfig c = Config();
  c.window_iterations = 2;  // short windows keep the noise visible
  c.max_time_ms = 1000;
  auto out = Measure(c, 1, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->stable);
  EXPECT_TRUE(out->stopped_at_max_time);
  // The bound is the run's, warm-up included: about 1 s, one step over at most.
  EXPECT_GE(out->measured_ms, 900);
  EXPECT_LE(clock.now_ns, int64_t{1'006'000'000});
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
  measure::MeasureConfig c = Config();
  c.trials = 3;
  auto out = Measure(c, 4, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->trials.size(), 3u);
  for (const auto& t : out->trials) EXPECT_NEAR(t.throughput_samples_per_s, 4000, 1e-6);
}

TEST(Measure, IntervalBracketsTheThroughputOnANoisyClock) {
  FakeClock clock;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> ns(1'000'000, 3'000'000);
  FakeStepper stepper(&clock, [&] { return ns(rng); });
  measure::MeasureConfig c = Config();
  c.max_time_ms = 500;
  auto out = Measure(c, 8, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok());
  const double throughput = out->iterations * 8 / (out->measured_ms / 1e3);
  EXPECT_LT(out->throughput_ci_low, throughput);
  EXPECT_GT(out->throughput_ci_high, throughput);
  // About 4000 samples/s (2 ms mean per 8 samples); the interval is narrow
  // but not empty.
  EXPECT_GT(out->throughput_ci_low, 3000);
  EXPECT_LT(out->throughput_ci_high, 5000);
  EXPECT_LT(out->throughput_ci_high - out->throughput_ci_low, 0.2 * throughput);
}

TEST(Measure, SteadyClockHasAnIntervalOfZeroWidth) {
  FakeClock clock;
  FakeStepper stepper(&clock, [] { return int64_t{2'000'000}; });
  auto out = Measure(Config(), 16, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok());
  EXPECT_NEAR(out->throughput_ci_low, 8000, 1e-6);
  EXPECT_NEAR(out->throughput_ci_high, 8000, 1e-6);
}

TEST(Measure, IntervalComesFromTheTrialsWhenThereAreSeveral) {
  FakeClock clock;
  // Trial speeds differ (1, 1.1, 1.2 ms a step), each steady inside.
  measure::MeasureConfig c = Config();
  c.trials = 3;
  int trial = 0;
  FakeStepper varying(&clock, [&] { return int64_t{1'000'000} + 100'000 * trial; });
  auto progress = [&](const Progress& p) {
    // A trial of this config is 100 iterations (100 ms at 1 ms); move on.
    trial = p.iterations / 100;
  };
  auto out = Measure(c, 1, &clock, &varying, progress, nullptr);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->trials.size(), 3u);
  EXPECT_GT(out->trials[0].throughput_samples_per_s, out->trials[2].throughput_samples_per_s);
  const double throughput = out->iterations / (out->measured_ms / 1e3);
  EXPECT_LT(out->throughput_ci_low, throughput);
  EXPECT_GT(out->throughput_ci_high, throughput);
  // The trials are 9% apart: the interval spans about that, not the
  // near-zero spread of windows inside each steady trial.
  EXPECT_GT(out->throughput_ci_high - out->throughput_ci_low, 0.05 * throughput);
}

// A CPU step of a long model takes seconds: warming up 10 of them would
// outlast the run's limit. Warm-up by count leaves time for a measured step,
// and the run keeps to the limit with what it measured.
TEST(Measure, ASlowStepWarmsUpOnlyWhileAMeasuredStepStillFits) {
  FakeClock clock;
  FakeStepper stepper(&clock, [] { return int64_t{1'000'000'000}; });  // 1 s a step
  measure::MeasureConfig c = Config();
  c.warmup_iterations = 10;
  c.min_iterations = 100;
  c.max_time_ms = 4000;
  c.window_iterations = 1;
  auto out = Measure(c, 1, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  // The cold start and two warm-up steps (a third and a measured one would
  // not fit), then one measured step: 4 s in all.
  EXPECT_EQ(stepper.steps - out->iterations, 3);
  EXPECT_EQ(out->iterations, 1);
  EXPECT_FALSE(out->stable);
  EXPECT_TRUE(out->stopped_at_max_time);
  EXPECT_NEAR(out->measured_ms, 1000, 1e-6);
  EXPECT_EQ(clock.now_ns, int64_t{4'000'000'000});
}

// max_time_ms bounds the whole run, warm-up and trials included: whatever a
// step costs, the run passes the bound by one step at most; a first step
// that alone outlasts it is followed by one measured step, no more.
TEST(Measure, MaxTimeBoundsTheWholeRunToOneStep) {
  for (int64_t step_us : {300, 7'000, 130'000, 900'000, 2'500'000, 4'000'000}) {
    FakeClock clock;
    FakeStepper stepper(&clock, [&] { return step_us * 1000; });
    measure::MeasureConfig c = Config();
    c.warmup_iterations = 10;
    c.min_time_ms = 5000;  // never reached: the bound ends it
    c.max_time_ms = 3000;
    c.trials = 2;
    auto out = Measure(c, 1, &clock, &stepper, nullptr, nullptr);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_LE(clock.now_ns, (std::max(c.max_time_ms * 1000, step_us) + step_us) * 1000)
        << step_us << " us a step";
    EXPECT_TRUE(out->stopped_at_max_time) << step_us;
    EXPECT_FALSE(out->stable) << step_us;
    EXPECT_GE(out->iterations, 1) << step_us;  // always a figure
    EXPECT_EQ(out->trials.size(), 1u) << step_us;  // the bound came before the second
  }
}

// Ranks stop together where they agree, after a window: they pass the bound
// by one window at most.
TEST(Measure, RanksPassTheBoundByOneWindowAtMost) {
  class RankStepper : public FakeStepper {
   public:
    using FakeStepper::FakeStepper;
    bool Ranked() const override { return true; }
  };
  FakeClock clock;
  RankStepper stepper(&clock, [] { return int64_t{100'000'000}; });  // 100 ms
  measure::MeasureConfig c = Config();
  c.min_time_ms = 5000;
  c.max_time_ms = 1000;
  auto out = Measure(c, 1, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->stopped_at_max_time);
  EXPECT_EQ(out->iterations % c.window_iterations, 0);  // whole windows
  EXPECT_LE(clock.now_ns, int64_t{(1000 + 10 * 100) * 1'000'000});
}

TEST(Measure, WarmUpBySecondsRunsUntilTheTimeIsUp) {
  FakeClock clock;
  FakeStepper stepper(&clock, [] { return int64_t{10'000'000}; });  // 10 ms
  measure::MeasureConfig c = Config();
  c.warmup_iterations = 1;
  c.warmup_ms = 200;
  auto out = Measure(c, 1, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok());
  // Cold start, then 200 ms of warm-up (20 steps), then the measured ones.
  EXPECT_GE(stepper.steps - out->iterations, 20);
  EXPECT_LE(stepper.steps - out->iterations, 22);
  EXPECT_EQ(stepper.reserved, c.window_iterations);
}

TEST(Measure, WaitForInputIsNotDeviceTimeWithoutADeviceTimer) {
  FakeClock clock;
  FakeStepper stepper(&clock, [] { return int64_t{1'000'000}; });  // 1 ms of work
  stepper.wait_ns = 3'000'000;                                      // 3 ms waiting
  auto out = Measure(Config(), 1, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok());
  ASSERT_FALSE(out->device_ms.empty());
  EXPECT_NEAR(out->device_ms[0], 1.0, 1e-9);
  EXPECT_NEAR(out->host_ms[0], 4.0, 1e-9);
  EXPECT_NEAR(out->data_wait_ms[0], 3.0, 1e-9);
}

TEST(Measure, MaxIterationsWithAStableRateIsStable) {
  FakeClock clock;
  FakeStepper stepper(&clock, [] { return int64_t{1'000'000}; });
  measure::MeasureConfig c = Config();
  c.min_time_ms = 5000;  // not reached before the cap
  c.max_iterations = 60;
  auto out = Measure(c, 1, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->iterations, 60);
  EXPECT_TRUE(out->stable);
}

TEST(Measure, OneSlowWindowStillHasAnInterval) {
  FakeClock clock;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int64_t> ns(1'000'000, 3'000'000);
  FakeStepper stepper(&clock, [&] { return ns(rng); });
  measure::MeasureConfig c = Config();
  c.window_iterations = 50;  // one window outlasts max_time_ms
  c.max_time_ms = 30;
  auto out = Measure(c, 1, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->window_throughput.size(), 1u);
  const double throughput = out->iterations / (out->measured_ms / 1e3);
  EXPECT_LT(out->throughput_ci_low, throughput);
  EXPECT_GT(out->throughput_ci_high, throughput);
  EXPECT_FALSE(out->stable);
}

}  // namespace
}  // namespace gpubench::measure
