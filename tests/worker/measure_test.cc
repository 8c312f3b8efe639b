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
  c.trials = 5;
  int trial = 0;
  FakeStepper varying(&clock, [&] { return int64_t{1'000'000} + 100'000 * trial; });
  auto progress = [&](const Progress& p) {
    // A trial of this config is 100 iterations (100 ms at 1 ms); move on.
    trial = p.iterations / 100;
  };
  auto out = Measure(c, 1, &clock, &varying, progress, nullptr);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->trials.size(), 5u);
  EXPECT_GT(out->trials[0].throughput_samples_per_s, out->trials[4].throughput_samples_per_s);
  EXPECT_EQ(out->interval_basis, "trials");
  EXPECT_EQ(out->interval_samples, 5);
  const double throughput = out->iterations / (out->measured_ms / 1e3);
  EXPECT_LT(out->throughput_ci_low, throughput);
  EXPECT_GT(out->throughput_ci_high, throughput);
  // The trials are 7-9% apart: the interval spans about that, not the
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

// A run of one, two or four measured steps (a slow model against its
// bound) has no interval: a t interval on so few says nothing (two windows
// 10% apart gave 1089-18009 around 2054), and one step has no spread at all
// (it printed 6.2-6.2). It says what it rests on instead.
TEST(Measure, FewerThanFiveStepsHaveNoInterval) {
  for (int64_t step_ms : {700, 1'300, 2'600, 4'000}) {
    FakeClock clock;
    int n = 0;
    // Alternate 10% apart, the spread a t interval on two inverts absurdly.
    FakeStepper stepper(&clock, [&] { return (n++ % 2 ? 11 : 10) * step_ms * 100'000; });
    measure::MeasureConfig c = Config();
    c.window_iterations = 1;
    c.max_time_ms = 3000;
    auto out = Measure(c, 32, &clock, &stepper, nullptr, nullptr);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_LT(out->iterations, kMinIntervalSamples) << step_ms;
    EXPECT_EQ(out->throughput_ci_low, 0) << step_ms;
    EXPECT_EQ(out->throughput_ci_high, 0) << step_ms;
    EXPECT_EQ(out->interval_basis, "steps");
    EXPECT_EQ(out->interval_samples, out->iterations);
  }
}

// Three trials are too few; their windows, pooled, are the basis, and the
// interval says so.
TEST(Measure, TooFewTrialsFallBackToWindowsAndSaySo) {
  FakeClock clock;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int64_t> ns(1'800'000, 2'200'000);
  FakeStepper stepper(&clock, [&] { return ns(rng); });
  measure::MeasureConfig c = Config();
  c.trials = 3;
  c.max_time_ms = 900;
  auto out = Measure(c, 4, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok());
  ASSERT_GE(out->window_throughput.size(), 5u);
  EXPECT_EQ(out->interval_basis, "windows");
  EXPECT_EQ(out->interval_samples, static_cast<int>(out->window_throughput.size()));
  const double throughput = out->iterations * 4 / (out->measured_ms / 1e3);
  EXPECT_LT(out->throughput_ci_low, throughput);
  EXPECT_GT(out->throughput_ci_high, throughput);
  // 2 ms +/- 10% a step, windows of 10: the mean is known to a few percent,
  // never to a factor of several.
  EXPECT_GT(out->throughput_ci_low, 0.95 * throughput);
  EXPECT_LT(out->throughput_ci_high, 1.05 * throughput);
}

// With profiling on, the bound holds the profiled window too: measuring
// stops early enough to leave it its share (here half the bound: 20
// profiled steps would not fit), and the profiled window stops where its
// next step would pass the bound, with fewer steps than asked.
TEST(Measure, ProfilingLeavesTheProfiledWindowItsShareOfTheBound) {
  FakeClock clock;
  FakeStepper stepper(&clock, [] { return int64_t{100'000'000}; });  // 100 ms
  measure::MeasureConfig c = Config();
  c.min_time_ms = 5000;  // never reached: the bound ends it
  c.max_time_ms = 1500;
  c.profile = true;
  c.profile_iterations = 20;
  auto out = Measure(c, 1, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->deadline_ns, int64_t{1'500'000'000});
  EXPECT_TRUE(out->stopped_at_max_time);
  EXPECT_GE(out->iterations, 1);
  EXPECT_LE(clock.now_ns, int64_t{(750 + 100) * 1'000'000});  // half the bound, and a step
  const int before = stepper.steps;
  auto profiled = ProfiledSteps(c.profile_iterations, out->deadline_ns, &clock, &stepper, nullptr);
  ASSERT_TRUE(profiled.ok()) << profiled.status();
  EXPECT_EQ(stepper.steps - before, *profiled);
  EXPECT_GE(*profiled, 2);
  EXPECT_LT(*profiled, c.profile_iterations);
  EXPECT_LE(clock.now_ns, out->deadline_ns);  // within the bound: no step started past it
}

// Where every profiled step fits, profiling takes no measured time that
// the bound did not need, and the window runs every step asked for.
TEST(Measure, ProfiledWindowThatFitsRunsEveryStep) {
  FakeClock clock;
  FakeStepper stepper(&clock, [] { return int64_t{2'000'000}; });  // 2 ms
  measure::MeasureConfig c = Config();
  c.profile = true;
  auto out = Measure(c, 16, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->stable);
  EXPECT_FALSE(out->stopped_at_max_time);
  EXPECT_EQ(out->iterations, 50);  // as without profiling
  auto profiled = ProfiledSteps(c.profile_iterations, out->deadline_ns, &clock, &stepper, nullptr);
  ASSERT_TRUE(profiled.ok());
  EXPECT_EQ(*profiled, c.profile_iterations);
}

// A first step that alone outlasts the bound: one measured step after it,
// one profiled step, and the run ends (not profile_iterations more).
TEST(Measure, ASlowFirstStepIsMeasuredOnceAndProfiledOnce) {
  FakeClock clock;
  FakeStepper stepper(&clock, [] { return int64_t{2'000'000'000}; });  // 2 s
  measure::MeasureConfig c = Config();
  c.max_time_ms = 1000;
  c.profile = true;
  c.profile_iterations = 5;
  auto out = Measure(c, 1, &clock, &stepper, nullptr, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->iterations, 1);
  auto profiled = ProfiledSteps(c.profile_iterations, out->deadline_ns, &clock, &stepper, nullptr);
  ASSERT_TRUE(profiled.ok());
  EXPECT_EQ(*profiled, 1);
  EXPECT_EQ(stepper.steps, 3);
  EXPECT_EQ(clock.now_ns, int64_t{6'000'000'000});
}

// The profiled window's first step is flushed: on a device that queues
// steps, the pace is the device's, not the time Step took to return.
TEST(Measure, ProfiledStepsKeepToTheDevicesPaceWhereStepsQueue) {
  class QueueingStepper : public FakeStepper {
   public:
    using FakeStepper::FakeStepper;
    absl::Status Step(double* wait) override {
      *wait = 0;
      clock->now_ns += 1'000'000;  // issuing: 1 ms
      ++queued;
      ++steps;
      return absl::OkStatus();
    }
    absl::Status Flush(std::vector<double>*) override {
      clock->now_ns += queued * int64_t{100'000'000};  // the device: 100 ms a step
      queued = 0;
      return absl::OkStatus();
    }
    FakeClock* clock = nullptr;
    int queued = 0;
  };
  FakeClock clock;
  QueueingStepper stepper(&clock, [] { return int64_t{0}; });
  stepper.clock = &clock;
  auto profiled = ProfiledSteps(50, int64_t{1'000'000'000}, &clock, &stepper, nullptr);
  ASSERT_TRUE(profiled.ok());
  // About 1 s at 100 ms a step, not 50 issued in 50 ms.
  EXPECT_GE(*profiled, 8);
  EXPECT_LE(*profiled, 10);
  EXPECT_LE(clock.now_ns + stepper.queued * int64_t{100'000'000}, int64_t{1'000'000'000});
}

// Ranks issue the same profiled steps: one decision, through Agree, after
// the first: all of them where they fit, else the first alone.
TEST(Measure, RanksProfileEveryStepOrTheFirstAlone) {
  class RankStepper : public FakeStepper {
   public:
    using FakeStepper::FakeStepper;
    bool Ranked() const override { return true; }
    bool Agree(bool stop) override {
      ++agreed;
      return stop;
    }
    int agreed = 0;
  };
  for (const int64_t deadline_ms : {10'000, 300}) {
    FakeClock clock;
    RankStepper stepper(&clock, [] { return int64_t{100'000'000}; });  // 100 ms
    auto profiled = ProfiledSteps(5, deadline_ms * 1'000'000, &clock, &stepper, nullptr);
    ASSERT_TRUE(profiled.ok());
    EXPECT_EQ(*profiled, deadline_ms == 300 ? 1 : 5) << deadline_ms;
    EXPECT_EQ(stepper.agreed, 1) << deadline_ms;
  }
}

TEST(Measure, CancelStopsTheProfiledWindowAfterItsFirstStep) {
  FakeClock clock;
  FakeStepper stepper(&clock, [] { return int64_t{1'000'000}; });
  std::atomic<bool> cancel{true};
  auto profiled = ProfiledSteps(5, int64_t{10'000'000'000}, &clock, &stepper, &cancel);
  ASSERT_TRUE(profiled.ok());
  EXPECT_EQ(*profiled, 1);
}

// RunState follows the loop for a heartbeat on another thread: the phase
// each step runs in, the steps so far, the bound.
TEST(Measure, RunStateFollowsThePhasesAndSteps) {
  class PhaseRecorder : public FakeStepper {
   public:
    using FakeStepper::FakeStepper;
    absl::Status Step(double* wait) override {
      const RunState::View v = state->Read();
      phases[PhaseName(v.phase)]++;
      seen_iterations.push_back(v.iterations);
      return FakeStepper::Step(wait);
    }
    RunState* state = nullptr;
    std::map<std::string, int> phases;
    std::vector<int> seen_iterations;
  };
  FakeClock clock;
  RunState state;
  PhaseRecorder stepper(&clock, [] { return int64_t{2'000'000}; });
  stepper.state = &state;
  auto out = Measure(Config(), 1, &clock, &stepper, nullptr, nullptr, &state);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(stepper.phases["warmup"], 5);  // the cold start and 4 more
  EXPECT_EQ(stepper.phases["measure"], out->iterations);
  const RunState::View after = state.Read();
  EXPECT_EQ(after.phase, RunState::Phase::kMeasure);
  EXPECT_EQ(after.iterations, out->iterations);
  EXPECT_EQ(after.deadline_ns, out->deadline_ns);
  EXPECT_GT(after.throughput_samples_per_s, 0);
  // Each measured step sees the steps before it, counted as they end.
  EXPECT_EQ(stepper.seen_iterations[5], 0);
  EXPECT_EQ(stepper.seen_iterations[6], 1);
  state.SetPhase(RunState::Phase::kProfile, clock.now_ns);
  auto profiled = ProfiledSteps(3, out->deadline_ns, &clock, &stepper, nullptr, &state);
  ASSERT_TRUE(profiled.ok());
  EXPECT_EQ(stepper.phases["profile"], 3);
  EXPECT_EQ(state.Read().iterations, 3);
}

}  // namespace
}  // namespace gpubench::measure
