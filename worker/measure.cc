#include "worker/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "common/stats.h"

namespace gpubench::measure {
namespace {

class SteadyClockImpl : public Clock {
 public:
  int64_t NowNs() override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

constexpr double kNsPerMs = 1e6;

// A profiled step against a measured one, for the share of the bound kept
// for the profiled window: the profiler's own cost (operator events, shapes,
// memory events) on a step of many small operators.
constexpr int64_t kProfiledStepFactor = 2;

bool Cancelled(const std::atomic<bool>* cancel) {
  return cancel != nullptr && cancel->load(std::memory_order_relaxed);
}

// A stepper's timeline range for the life of a scope, closed on every path.
class Range {
 public:
  Range(Stepper* stepper, const char* kind, int index) : stepper_(stepper) {
    stepper_->BeginRange(kind, index);
  }
  ~Range() { stepper_->EndRange(); }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  Stepper* const stepper_;
};

}  // namespace

Clock* SteadyClock() {
  static SteadyClockImpl clock;
  return &clock;
}

namespace {

// One Measure call: warm-up, the trials' windows, then the interval.
class Measurer {
 public:
  Measurer(const MeasureConfig& config, int64_t samples_per_iteration, Clock* clock,
           Stepper* stepper, const ProgressFn& progress, const std::atomic<bool>* cancel,
           RunState* state)
      : config_(config),
        samples_per_iteration_(samples_per_iteration),
        clock_(clock),
        stepper_(stepper),
        progress_(progress),
        cancel_(cancel),
        state_(state),
        window_(std::max(1, config.window_iterations)) {
    stepper_->Reserve(window_);
    // Sized up front so that no timed window reallocates.
    const int64_t per_trial = config.max_iterations > 0 ? config.max_iterations : 1 << 16;
    const size_t expected = static_cast<size_t>(
        std::min<int64_t>(per_trial * std::max(1, config.trials) + window_, 1 << 20));
    for (auto* v : {&out_.device_ms, &out_.host_ms, &out_.data_wait_ms}) v->reserve(expected);
    device_ms_.reserve(window_);
  }

  absl::StatusOr<Outcome> Run() {
    deadline_ns_ = clock_->NowNs() + config_.max_time_ms * int64_t{1'000'000};
    out_.deadline_ns = deadline_ns_;
    if (state_ != nullptr) state_->Begin(deadline_ns_);
    {
      Range warmup(stepper_, "warm-up", 0);
      if (auto s = WarmUp(); !s.ok()) return s;
    }
    stepper_->OnMeasureBegin();
    const int trials = std::max(1, config_.trials);
    out_.stable = true;
    for (int t = 0; t < trials && !Cancelled(cancel_); ++t) {
      // Every rank asks, so that all of them run the same trials. The first
      // trial always runs: a run measures at least one step.
      if (t > 0 && stepper_->Agree(PastDeadline())) {
        out_.stopped_at_max_time = true;
        out_.stable = false;
        break;
      }
      if (auto s = MeasureTrial(); !s.ok()) return s;
    }
    Interval();
    out_.cancelled = Cancelled(cancel_);
    if (out_.cancelled) out_.stable = false;
    return std::move(out_);
  }

 private:
  // The first iteration alone (issued and finished: the cold start), then
  // warmup_iterations for at most half of max_time_ms, and warmup_ms.
  absl::Status WarmUp() {
    double wait_ms = 0;
    run_start_ns_ = clock_->NowNs();
    SetPhase(RunState::Phase::kWarmup);
    {
      const int64_t start = clock_->NowNs();
      if (auto s = stepper_->Step(&wait_ms); !s.ok()) return s;
      if (auto s = stepper_->Flush(&device_ms_); !s.ok()) return s;
      out_.cold_start_ms = (clock_->NowNs() - start) / kNsPerMs;
    }
    const int64_t start = clock_->NowNs();
    // Before a warm-up step is timed, half the cold start stands for a step
    // (the cold start holds one-time set-up too: cuDNN's autotuning, lazy
    // initialisation): a first step that took half the bound or more leaves
    // no room to warm up, and the one measured step still ends within a step
    // of the bound.
    pace_ns_ = (start - run_start_ns_) / 2;
    int done = 1;
    if (state_ != nullptr) state_->SetIterations(done);
    // A slow step (a long model on a CPU) does not spend more than half of
    // max_time_ms warming up by count; warmup_ms, when set, is kept. Neither
    // takes the time of one more step and a measured one past the bound
    // (less the profiled window's share).
    auto warming = [&] {
      const int64_t now = clock_->NowNs();
      const int64_t elapsed = now - start;
      if (now + 2 * pace_ns_ > MeasureDeadlineNs()) return false;
      return (done < config_.warmup_iterations && elapsed < config_.max_time_ms * kNsPerMs / 2) ||
             elapsed < config_.warmup_ms * kNsPerMs;
    };
    while (!stepper_->Agree(Cancelled(cancel_) || !warming())) {
      const int64_t step_start = clock_->NowNs();
      if (auto s = stepper_->Step(&wait_ms); !s.ok()) return s;
      pace_ns_ = clock_->NowNs() - step_start;
      ++done;
      if (state_ != nullptr) state_->SetIterations(done);
      if (done % window_ == 0) {
        device_ms_.clear();
        if (auto s = stepper_->Flush(&device_ms_); !s.ok()) return s;
        if (progress_) {
          progress_({"warmup", done, 0, (clock_->NowNs() - start) / kNsPerMs,
                     std::max(0.0, (deadline_ns_ - clock_->NowNs()) / kNsPerMs)});
        }
      }
    }
    device_ms_.clear();
    return stepper_->Flush(&device_ms_);
  }

  // One window of iterations; its wall time in *wall_ms and its count in *n.
  absl::Status Window(int* n, double* wall_ms) {
    Range window_range(stepper_, "window", window_index_++);
    const int64_t window_start = clock_->NowNs();
    const size_t first = out_.host_ms.size();
    // A single process stops at the bound between any two steps; ranks only
    // where they agree, after the window.
    // The run's first measured step is taken even past it (a first step,
    // cuDNN's autotuning say, that outlasted the bound alone): a run has a
    // figure, marked stopped at max-time.
    const bool ranked = stepper_->Ranked();
    const bool first_window = window_index_ == 1;
    for (*n = 0; *n < window_ && !Cancelled(cancel_) &&
                 (ranked || !PastDeadline() || (first_window && *n == 0));
         ++*n) {
      const int64_t step_start = clock_->NowNs();
      double wait = 0;
      {
        Range iteration(stepper_, "iteration", *n);
        if (auto s = stepper_->Step(&wait); !s.ok()) return s;
      }
      out_.host_ms.push_back((clock_->NowNs() - step_start) / kNsPerMs);
      out_.data_wait_ms.push_back(wait);
      // A relaxed store: what a heartbeat shows during a long window.
      if (state_ != nullptr) state_->SetIterations(static_cast<int>(out_.host_ms.size()));
    }
    device_ms_.clear();
    if (auto s = stepper_->Flush(&device_ms_); !s.ok()) return s;
    *wall_ms = (clock_->NowNs() - window_start) / kNsPerMs;
    if (device_ms_.size() == static_cast<size_t>(*n)) {
      out_.device_ms.insert(out_.device_ms.end(), device_ms_.begin(), device_ms_.end());
    } else {
      // No device timer: the host clock around a synchronous step, less
      // the time it waited for input, is the device time.
      for (size_t i = first; i < out_.host_ms.size(); ++i) {
        out_.device_ms.push_back(std::max(0.0, out_.host_ms[i] - out_.data_wait_ms[i]));
      }
    }
    return absl::OkStatus();
  }

  // Windows until the trial is done (enough, and stable), out of time or
  // capped; every rank agrees on each stop.
  absl::Status MeasureTrial() {
    std::vector<double> windows;
    std::vector<double> trial_latency;
    double trial_ms = 0;
    int trial_iterations = 0;
    bool stable = false;
    const int64_t trial_start = clock_->NowNs();
    SetPhase(RunState::Phase::kMeasure);
    if (state_ != nullptr) state_->SetIterations(out_.iterations);
    while (true) {
      int n = 0;
      double wall_ms = 0;
      if (auto s = Window(&n, &wall_ms); !s.ok()) return s;
      trial_latency.insert(trial_latency.end(), out_.device_ms.end() - n, out_.device_ms.end());
      if (n == 0) {  // cancelled, or the bound came before a step
        if (!Cancelled(cancel_)) out_.stopped_at_max_time = true;
        break;
      }
      trial_ms += wall_ms;
      trial_iterations += n;
      pace_ns_ = static_cast<int64_t>(wall_ms * kNsPerMs / n);
      windows.push_back(n * samples_per_iteration_ / (wall_ms / 1e3));
      window_ms_per_sample_.push_back(wall_ms / (n * samples_per_iteration_));
      const double elapsed_ms = (clock_->NowNs() - trial_start) / kNsPerMs;
      if (windows.size() >= 3) {
        const std::vector<double> last(windows.end() - 3, windows.end());
        out_.window_cv = stats::CoefficientOfVariation(last);
        stable = out_.window_cv < config_.cv_threshold;
      }
      const double throughput = trial_iterations * samples_per_iteration_ / (trial_ms / 1e3);
      if (state_ != nullptr) state_->SetThroughput(throughput);
      if (progress_) {
        progress_({"measure", out_.iterations + trial_iterations, throughput, elapsed_ms,
                   std::max(0.0, (deadline_ns_ - clock_->NowNs()) / kNsPerMs)});
      }
      const bool done = trial_iterations >= config_.min_iterations &&
                        elapsed_ms >= config_.min_time_ms && stable;
      const bool out_of_time = PastDeadline();
      const bool capped = config_.max_iterations > 0 && trial_iterations >= config_.max_iterations;
      if (!stepper_->Agree(Cancelled(cancel_) || done || out_of_time || capped)) continue;
      if (out_of_time && !done) {
        stable = false;
        out_.stopped_at_max_time = true;
      }
      break;
    }
    out_.window_throughput.insert(out_.window_throughput.end(), windows.begin(), windows.end());
    Trial trial;
    trial.iterations = trial_iterations;
    trial.measured_ms = trial_ms;
    trial.throughput_samples_per_s =
        trial_ms > 0 ? trial_iterations * samples_per_iteration_ / (trial_ms / 1e3) : 0;
    trial.p50_ms = stats::Summarize(trial_latency).p50;
    out_.trials.push_back(trial);
    out_.measured_ms += trial_ms;
    out_.iterations += trial_iterations;
    if (trial_iterations > 0) {
      trial_ms_per_sample_.push_back(trial_ms / (trial_iterations * samples_per_iteration_));
    }
    out_.stable = out_.stable && stable;
    return absl::OkStatus();
  }

  // The point estimate is total samples / total time, i.e. 1 / (mean time
  // per sample). The spread comes from the most independent basis with
  // enough samples: trials (each its own warm state), else windows, else
  // steps (one window of a slow model). Its relative half-width is applied
  // to the point estimate, so that a basis measured by another clock (a
  // step's device time) still fits the wall-clock figure.
  void Interval() {
    out_.interval_basis = "steps";
    out_.interval_samples = out_.iterations;
    if (out_.iterations <= 0 || out_.measured_ms <= 0) return;
    std::vector<double> step_ms_per_sample;
    for (double ms : out_.device_ms) step_ms_per_sample.push_back(ms / samples_per_iteration_);
    const std::pair<const char*, const std::vector<double>*> bases[] = {
        {"trials", &trial_ms_per_sample_},
        {"windows", &window_ms_per_sample_},
        {"steps", &step_ms_per_sample}};
    for (const auto& [name, values] : bases) {
      if (values->size() < static_cast<size_t>(kMinIntervalSamples)) continue;
      const double mean = stats::Mean(*values);
      if (!(mean > 0)) return;
      const double relative_half =
          stats::TCritical95(static_cast<int>(values->size()) - 1) * stats::Stddev(*values) /
          std::sqrt(static_cast<double>(values->size())) / mean;
      out_.interval_basis = name;
      out_.interval_samples = static_cast<int>(values->size());
      // A spread that reaches a zero time per sample says nothing: none.
      if (relative_half >= 1) return;
      const double per_sample = out_.measured_ms / (out_.iterations * samples_per_iteration_);
      out_.throughput_ci_high = 1e3 / (per_sample * (1 - relative_half));
      out_.throughput_ci_low = 1e3 / (per_sample * (1 + relative_half));
      return;
    }
  }

  // With profiling on, the end of the bound kept for the profiled window
  // (Measure's header): its steps at kProfiledStepFactor times the pace of
  // the last ones, and the profiler's start, at most half the bound unless
  // one such step needs more.
  int64_t ProfileReserveNs() const {
    if (!config_.profile) return 0;
    const int64_t step_ns = kProfiledStepFactor * pace_ns_;
    const int64_t start_ns = kProfilerStartMs * int64_t{1'000'000};
    const int64_t one = start_ns + step_ns;
    const int64_t all = start_ns + step_ns * std::max(1, config_.profile_iterations);
    return std::max(one, std::min(all, config_.max_time_ms * int64_t{1'000'000} / 2));
  }

  // When measuring stops: the run's bound less the profiled window's share.
  int64_t MeasureDeadlineNs() const { return deadline_ns_ - ProfileReserveNs(); }

  bool PastDeadline() const { return clock_->NowNs() >= MeasureDeadlineNs(); }

  void SetPhase(RunState::Phase phase) {
    if (state_ != nullptr) state_->SetPhase(phase, clock_->NowNs());
  }

  const MeasureConfig& config_;
  const int64_t samples_per_iteration_;
  Clock* const clock_;
  Stepper* const stepper_;
  const ProgressFn& progress_;
  const std::atomic<bool>* const cancel_;
  RunState* const state_;  // null: nothing follows the run
  const int window_;
  Outcome out_;
  std::vector<double> device_ms_;  // the last Flush's
  int window_index_ = 0;
  int64_t run_start_ns_ = 0;
  int64_t deadline_ns_ = 0;  // run start + max_time_ms
  // A step's time as last seen: half the cold start, then each warm-up
  // step's, then each measured window's mean.
  int64_t pace_ns_ = 0;
  // Time per sample of each window and of each trial, for the interval.
  std::vector<double> window_ms_per_sample_, trial_ms_per_sample_;
};

}  // namespace

absl::StatusOr<Outcome> Measure(const MeasureConfig& config, int64_t samples_per_iteration,
                                Clock* clock, Stepper* stepper, const ProgressFn& progress,
                                const std::atomic<bool>* cancel, RunState* state) {
  return Measurer(config, samples_per_iteration, clock, stepper, progress, cancel, state).Run();
}

absl::StatusOr<int> ProfiledSteps(int iterations, int64_t deadline_ns, Clock* clock,
                                  Stepper* stepper, const std::atomic<bool>* cancel,
                                  RunState* state) {
  const int n = std::max(1, iterations);
  std::vector<double> flushed;
  double wait = 0;
  const int64_t start = clock->NowNs();
  if (auto s = stepper->Step(&wait); !s.ok()) return s;
  // Finished, so that on a device that queues steps its time is the
  // device's too.
  if (auto s = stepper->Flush(&flushed); !s.ok()) return s;
  const int64_t pace_ns = clock->NowNs() - start;
  int done = 1;
  if (state != nullptr) state->SetIterations(done);
  // When the steps issued so far will have finished: now, where a step
  // ends before Step returns; at the first step's pace, where they queue.
  auto finished_ns = [&] { return std::max(clock->NowNs(), start + done * pace_ns); };
  auto step = [&]() -> absl::Status {
    if (auto s = stepper->Step(&wait); !s.ok()) return s;
    ++done;
    if (state != nullptr) state->SetIterations(done);
    return absl::OkStatus();
  };
  if (stepper->Ranked()) {
    // One decision, the same on every rank: an Agree per step would add a
    // collective to each profiled step.
    if (n == 1 || stepper->Agree(Cancelled(cancel) ||
                                 finished_ns() + (n - 1) * pace_ns > deadline_ns)) {
      return done;
    }
    while (done < n) {
      if (auto s = step(); !s.ok()) return s;
    }
    return done;
  }
  while (done < n && !Cancelled(cancel) && finished_ns() + pace_ns <= deadline_ns) {
    if (auto s = step(); !s.ok()) return s;
  }
  return done;
}

const char* PhaseName(RunState::Phase phase) {
  switch (phase) {
    case RunState::Phase::kWarmup: return "warmup";
    case RunState::Phase::kMeasure: return "measure";
    case RunState::Phase::kProfile: return "profile";
    case RunState::Phase::kNumerics: return "numerics";
    case RunState::Phase::kNone: break;
  }
  return "";
}

}  // namespace gpubench::measure
