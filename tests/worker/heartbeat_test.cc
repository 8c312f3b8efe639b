#include "worker/heartbeat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpubench::measure {
namespace {

// A fake clock that the heartbeat's thread may read while the test's moves it.
class AtomicClock : public Clock {
 public:
  int64_t NowNs() override { return now_ns.load(); }
  std::atomic<int64_t> now_ns{0};
};

// What the heartbeat reported, for the test's thread to wait on.
class Beats {
 public:
  void Add(const Progress& p) {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.push_back(p);
    cv_.notify_all();
  }
  // Waits until `count` beats pass `test`, for 60 s at most (a loaded
  // machine): a test asserts that they came, never how fast.
  bool WaitFor(size_t count, const std::function<bool(const Progress&)>& test) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] {
      return static_cast<size_t>(std::count_if(seen_.begin(), seen_.end(), test)) >= count;
    });
  }
  std::vector<Progress> Seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Progress> seen_;
};

// Steps of 1 ms on the fake clock, but one, which takes 2.5 s and does not
// return before the heartbeat has beaten twice during it (as it would in a
// step of seconds).
class SlowStepper : public Stepper {
 public:
  SlowStepper(AtomicClock* clock, Beats* beats, int slow_step)
      : clock_(clock), beats_(beats), slow_step_(slow_step) {}
  absl::Status Step(double* wait) override {
    *wait = 0;
    if (++steps == slow_step_) {
      clock_->now_ns += 2'500'000'000;
      const int64_t now_ns = clock_->now_ns;
      beats_during_slow_step = beats_->WaitFor(2, [&](const Progress& p) {
        return p.eta_ms == (10'000'000'000 - now_ns) / 1e6 && p.iterations == 2;  // this step's
      });
    } else {
      clock_->now_ns += 1'000'000;
    }
    return absl::OkStatus();
  }
  absl::Status Flush(std::vector<double>*) override { return absl::OkStatus(); }
  int steps = 0;
  bool beats_during_slow_step = false;

 private:
  AtomicClock* const clock_;
  Beats* const beats_;
  const int slow_step_;
};

MeasureConfig HeartbeatConfig() {
  MeasureConfig c;
  c.warmup_iterations = 5;
  c.min_iterations = 20;
  c.min_time_ms = 100;
  c.max_time_ms = 10000;
  c.window_iterations = 10;
  return c;
}

// A step that takes seconds reports nothing from the loop (it reports per
// window); the heartbeat still does, from its own thread, naming the phase
// and the steps done.
TEST(Heartbeat, BeatsWhileTheLoopIsInsideASlowStep) {
  AtomicClock clock;
  RunState state;
  Beats beats;
  // The 8th step: the cold start, 4 warm-up steps, then the third measured.
  SlowStepper stepper(&clock, &beats, 8);
  auto out = [&] {
    Heartbeat heartbeat(&state, &clock, /*interval_ms=*/5, [&](const Progress& p) { beats.Add(p); });
    return Measure(HeartbeatConfig(), 1, &clock, &stepper, nullptr, nullptr, &state);
  }();
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(stepper.beats_during_slow_step);
  // The slow step's beats: measuring, 2 steps done, 2.502 s into the
  // trial (after 5 steps of warm-up), the bound 10 s less 2.507 s away.
  int during = 0;
  for (const Progress& p : beats.Seen()) {
    if (p.eta_ms != 10000 - 2507 || p.iterations != 2) continue;
    ++during;
    EXPECT_EQ(p.phase, "measure");
    EXPECT_NEAR(p.elapsed_ms, 2502, 1e-6);
  }
  EXPECT_GE(during, 2);
}

TEST(Heartbeat, BeatsOnlyOnceTheRunHasAPhaseAndNoneAfterStop) {
  AtomicClock clock;
  RunState state;
  Beats beats;
  Heartbeat heartbeat(&state, &clock, /*interval_ms=*/1, [&](const Progress& p) { beats.Add(p); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_TRUE(beats.Seen().empty());  // no phase yet: nothing to say
  clock.now_ns = 2'500'000'000;
  state.Begin(int64_t{3'000'000'000});
  state.SetPhase(RunState::Phase::kProfile, int64_t{1'000'000'000});
  state.SetIterations(2);
  ASSERT_TRUE(beats.WaitFor(1, [](const Progress& p) { return p.iterations == 2; }));
  heartbeat.Stop();
  const size_t stopped = beats.Seen().size();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(beats.Seen().size(), stopped);
  const Progress p = beats.Seen().back();
  EXPECT_EQ(p.phase, "profile");
  EXPECT_EQ(p.iterations, 2);
  EXPECT_NEAR(p.elapsed_ms, 1500, 1e-6);
  EXPECT_NEAR(p.eta_ms, 500, 1e-6);
  heartbeat.Stop();  // again: nothing
}

TEST(Heartbeat, ProgressPastTheBoundHasNoTimeLeft) {
  RunState::View view;
  view.phase = RunState::Phase::kNumerics;
  view.phase_start_ns = 4'000'000'000;
  view.deadline_ns = 3'000'000'000;
  const Progress p = ProgressOf(view, 5'000'000'000);
  EXPECT_EQ(p.phase, "numerics");
  EXPECT_EQ(p.eta_ms, 0);
  EXPECT_NEAR(p.elapsed_ms, 1000, 1e-6);
}

}  // namespace
}  // namespace gpubench::measure
