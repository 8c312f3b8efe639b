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

absl::StatusOr<Outcome> Measure(const measure::MeasureConfig& config,
                                int64_t samples_per_iteration, Clock* clock,
                                Stepper* stepper, const ProgressFn& progress,
                                const std::atomic<bool>* cancel) {
  Outcome out;
  std::vector<double> device_ms;
  double wait_ms = 0;
  const int window = std::max(1, config.window_iterations);
  stepper->Reserve(window);
  // Sized up front so that no timed window reallocates.
  const int64_t per_trial = config.max_iterations > 0 ? config.max_iterations : 1 << 16;
  const size_t expected = static_cast<size_t>(
      std::min<int64_t>(per_trial * std::max(1, config.trials) + window, 1 << 20));
  for (auto* v : {&out.device_ms, &out.host_ms, &out.data_wait_ms}) v->reserve(expected);
  device_ms.reserve(window);

  std::optional<Range> warmup(std::in_place, stepper, "warm-up", 0);
  // Cold start: the first iteration alone, issued and finished.
  {
    const int64_t start = clock->NowNs();
    if (auto s = stepper->Step(&wait_ms); !s.ok()) return s;
    if (auto s = stepper->Flush(&device_ms); !s.ok()) return s;
    out.cold_start_ms = (clock->NowNs() - start) / kNsPerMs;
  }
  {
    const int64_t start = clock->NowNs();
    int done = 1;
    // A slow step (a long model on a CPU) does not spend more than half of
    // max_time_ms warming up by count; warmup_ms, when set, is kept.
    while (!stepper->Agree(Cancelled(cancel) ||
                           !((done < config.warmup_iterations &&
                              clock->NowNs() - start < config.max_time_ms * kNsPerMs / 2) ||
                             clock->NowNs() - start < config.warmup_ms * kNsPerMs))) {
      if (auto s = stepper->Step(&wait_ms); !s.ok()) return s;
      ++done;
      if (done % std::max(1, config.window_iterations) == 0) {
        device_ms.clear();
        if (auto s = stepper->Flush(&device_ms); !s.ok()) return s;
        if (progress) {
          progress({"warmup", done, 0, (clock->NowNs() - start) / kNsPerMs, 0});
        }
      }
    }
    device_ms.clear();
    if (auto s = stepper->Flush(&device_ms); !s.ok()) return s;
  }
  warmup.reset();

  stepper->OnMeasureBegin();
  int window_index = 0;
  const int trials = std::max(1, config.trials);
  // Time per sample of each window and of each trial, for the interval.
  std::vector<double> window_ms_per_sample, trial_ms_per_sample;
  out.stable = true;
  for (int t = 0; t < trials && !Cancelled(cancel); ++t) {
    std::vector<double> windows;
    std::vector<double> trial_latency;
    double trial_ms = 0;
    int trial_iterations = 0;
    bool stable = false;
    const int64_t trial_start = clock->NowNs();
    while (true) {
      Range window_range(stepper, "window", window_index++);
      const int64_t window_start = clock->NowNs();
      int n = 0;
      const size_t first = out.host_ms.size();
      for (; n < window && !Cancelled(cancel); ++n) {
        const int64_t step_start = clock->NowNs();
        double wait = 0;
        {
          Range iteration(stepper, "iteration", n);
          if (auto s = stepper->Step(&wait); !s.ok()) return s;
        }
        out.host_ms.push_back((clock->NowNs() - step_start) / kNsPerMs);
        out.data_wait_ms.push_back(wait);
      }
      device_ms.clear();
      if (auto s = stepper->Flush(&device_ms); !s.ok()) return s;
      const double wall_ms = (clock->NowNs() - window_start) / kNsPerMs;
      if (device_ms.size() == static_cast<size_t>(n)) {
        out.device_ms.insert(out.device_ms.end(), device_ms.begin(),
                             device_ms.end());
      } else {
        // No device timer: the host clock around a synchronous step, less
        // the time it waited for input, is the device time.
        for (size_t i = first; i < out.host_ms.size(); ++i) {
          out.device_ms.push_back(std::max(0.0, out.host_ms[i] - out.data_wait_ms[i]));
        }
      }
      trial_latency.insert(trial_latency.end(), out.device_ms.end() - n,
                           out.device_ms.end());
      if (n == 0) break;
      trial_ms += wall_ms;
      trial_iterations += n;
      windows.push_back(n * samples_per_iteration / (wall_ms / 1e3));
      window_ms_per_sample.push_back(wall_ms / (n * samples_per_iteration));
      const double elapsed_ms = (clock->NowNs() - trial_start) / kNsPerMs;
      if (windows.size() >= 3) {
        const std::vector<double> last(windows.end() - 3, windows.end());
        out.window_cv = stats::CoefficientOfVariation(last);
        stable = out.window_cv < config.cv_threshold;
      }
      if (progress) {
        progress({"measure", out.iterations + trial_iterations,
                  trial_iterations * samples_per_iteration / (trial_ms / 1e3),
                  elapsed_ms,
                  std::max(0.0, config.max_time_ms - elapsed_ms)});
      }
      const bool done = trial_iterations >= config.min_iterations &&
                        elapsed_ms >= config.min_time_ms && stable;
      const bool out_of_time = elapsed_ms >= config.max_time_ms;
      const bool capped = config.max_iterations > 0 && trial_iterations >= config.max_iterations;
      if (!stepper->Agree(Cancelled(cancel) || done || out_of_time || capped)) continue;
      if (out_of_time && !done) stable = false;
      break;
    }
    out.window_throughput.insert(out.window_throughput.end(), windows.begin(),
                                 windows.end());
    Trial trial;
    trial.iterations = trial_iterations;
    trial.measured_ms = trial_ms;
    trial.throughput_samples_per_s =
        trial_ms > 0 ? trial_iterations * samples_per_iteration / (trial_ms / 1e3)
                     : 0;
    trial.p50_ms = stats::Summarize(trial_latency).p50;
    out.trials.push_back(trial);
    out.measured_ms += trial_ms;
    out.iterations += trial_iterations;
    if (trial_iterations > 0) {
      trial_ms_per_sample.push_back(trial_ms / (trial_iterations * samples_per_iteration));
    }
    out.stable = out.stable && stable;
  }
  // The point estimate is total samples / total time, i.e. 1 / (mean time
  // per sample); the interval is that mean's t interval, inverted. Trials
  // are independent; consecutive windows less so, so windows serve only
  // when there is a single trial.
  if (out.iterations > 0 && out.measured_ms > 0) {
    const double per_sample = out.measured_ms / (out.iterations * samples_per_iteration);
    // Fewer than two windows (a slow model against max_time_ms): the
    // iterations' own spread is all there is.
    std::vector<double> iteration_ms_per_sample;
    if (trial_ms_per_sample.size() < 2 && window_ms_per_sample.size() < 2) {
      for (double ms : out.device_ms) iteration_ms_per_sample.push_back(ms / samples_per_iteration);
    }
    const std::vector<double>& spread = trial_ms_per_sample.size() >= 2    ? trial_ms_per_sample
                                        : window_ms_per_sample.size() >= 2 ? window_ms_per_sample
                                                                           : iteration_ms_per_sample;
    double half = 0;
    if (spread.size() >= 2) {
      half = stats::TCritical95(static_cast<int>(spread.size()) - 1) *
             stats::Stddev(spread) / std::sqrt(static_cast<double>(spread.size()));
    }
    out.throughput_ci_high = per_sample - half > 0 ? 1e3 / (per_sample - half)
                                                   : std::numeric_limits<double>::infinity();
    out.throughput_ci_low = 1e3 / (per_sample + half);
  }
  out.cancelled = Cancelled(cancel);
  if (out.cancelled) out.stable = false;
  return out;
}

}  // namespace gpubench::measure
