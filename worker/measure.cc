#include "worker/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

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
           Stepper* stepper, const ProgressFn& progress, const std::atomic<bool>* cancel)
      : config_(config),
        samples_per_iteration_(samples_per_iteration),
        clock_(clock),
        stepper_(stepper),
        progress_(progress),
        cancel_(cancel),
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
    int64_t last_step_ns = (start - run_start_ns_) / 2;
    int done = 1;
    // A slow step (a long model on a CPU) does not spend more than half of
    // max_time_ms warming up by count; warmup_ms, when set, is kept. Neither
    // takes the time of one more step and a measured one past the bound.
    auto warming = [&] {
      const int64_t now = clock_->NowNs();
      const int64_t elapsed = now - start;
      if (now + 2 * last_step_ns > deadline_ns_) return false;
      return (done < config_.warmup_iterations && elapsed < config_.max_time_ms * kNsPerMs / 2) ||
             elapsed < config_.warmup_ms * kNsPerMs;
    };
    while (!stepper_->Agree(Cancelled(cancel_) || !warming())) {
      const int64_t step_start = clock_->NowNs();
      if (auto s = stepper_->Step(&wait_ms); !s.ok()) return s;
      last_step_ns = clock_->NowNs() - step_start;
      ++done;
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
      windows.push_back(n * samples_per_iteration_ / (wall_ms / 1e3));
      window_ms_per_sample_.push_back(wall_ms / (n * samples_per_iteration_));
      const double elapsed_ms = (clock_->NowNs() - trial_start) / kNsPerMs;
      if (windows.size() >= 3) {
        const std::vector<double> last(windows.end() - 3, windows.end());
        out_.window_cv = stats::CoefficientOfVariation(last);
        stable = out_.window_cv < config_.cv_threshold;
      }
      if (progress_) {
        progress_({"measure", out_.iterations + trial_iterations,
                   trial_iterations * samples_per_iteration_ / (trial_ms / 1e3), elapsed_ms,
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
  // per sample); the interval is that mean's t interval, inverted. Trials
  // are independent; consecutive windows less so, so windows serve only
  // when there is a single trial.
  void Interval() {
    if (out_.iterations <= 0 || out_.measured_ms <= 0) return;
    const double per_sample = out_.measured_ms / (out_.iterations * samples_per_iteration_);
    // Fewer than two windows (a slow model against max_time_ms): the
    // iterations' own spread is all there is.
    std::vector<double> iteration_ms_per_sample;
    if (trial_ms_per_sample_.size() < 2 && window_ms_per_sample_.size() < 2) {
      for (double ms : out_.device_ms) iteration_ms_per_sample.push_back(ms / samples_per_iteration_);
    }
    const std::vector<double>& spread = trial_ms_per_sample_.size() >= 2    ? trial_ms_per_sample_
                                        : window_ms_per_sample_.size() >= 2 ? window_ms_per_sample_
                                                                            : iteration_ms_per_sample;
    double half = 0;
    if (spread.size() >= 2) {
      half = stats::TCritical95(static_cast<int>(spread.size()) - 1) * stats::Stddev(spread) /
             std::sqrt(static_cast<double>(spread.size()));
    }
    // An interval whose time per sample reaches 0 has no upper end: a
    // spread that wide says nothing, so there is none (0, 0).
    if (per_sample - half <= 0) return;
    out_.throughput_ci_high = 1e3 / (per_sample - half);
    out_.throughput_ci_low = 1e3 / (per_sample + half);
  }

  bool PastDeadline() const { return clock_->NowNs() >= deadline_ns_; }

  const MeasureConfig& config_;
  const int64_t samples_per_iteration_;
  Clock* const clock_;
  Stepper* const stepper_;
  const ProgressFn& progress_;
  const std::atomic<bool>* const cancel_;
  const int window_;
  Outcome out_;
  std::vector<double> device_ms_;  // the last Flush's
  int window_index_ = 0;
  int64_t run_start_ns_ = 0;
  int64_t deadline_ns_ = 0;  // run start + max_time_ms
  // Time per sample of each window and of each trial, for the interval.
  std::vector<double> window_ms_per_sample_, trial_ms_per_sample_;
};

}  // namespace

absl::StatusOr<Outcome> Measure(const MeasureConfig& config, int64_t samples_per_iteration,
                                Clock* clock, Stepper* stepper, const ProgressFn& progress,
                                const std::atomic<bool>* cancel) {
  return Measurer(config, samples_per_iteration, clock, stepper, progress, cancel).Run();
}

}  // namespace gpubench::measure
