// The measurement loop: warm-up, windows, the stability rule and trials.
// Torch-free, so it is tested with a fake clock and a fake step.
#ifndef GPUBENCH_WORKER_MEASURE_H_
#define GPUBENCH_WORKER_MEASURE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpubench::measure {

// Measurement rules, all defaults filled.
struct MeasureConfig {
  int warmup_iterations = 10;
  int64_t warmup_ms = 0;
  int min_iterations = 20;
  int64_t min_time_ms = 1000;
  int64_t max_time_ms = 30000;
  int window_iterations = 10;
  double cv_threshold = 0.02;
  int trials = 1;
  int max_iterations = 100000;
  uint64_t seed = 0;
  bool profile = false;            // a separate profiled window after measuring
  int profile_iterations = 5;
  bool profile_shapes = false;
  bool profile_memory = false;
  int profile_top_operators = 20;
  bool telemetry = true;           // sample NVML (CUDA) or /proc (CPU, MPS)
  int telemetry_interval_ms = 100;
  bool check_numerics = false;     // a model run's numbers against fp64 on the CPU
};

// Monotonic time source. Implementations must be thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowNs() = 0;
};

// std::chrono::steady_clock.
Clock* SteadyClock();

// One benchmark iteration, issued by the loop. Not called concurrently.
class Stepper {
 public:
  virtual ~Stepper() = default;
  // Issues one iteration. It may return before the device finishes; it sets
  // *data_wait_ms to the host time spent waiting for input.
  virtual absl::Status Step(double* data_wait_ms) = 0;
  // Waits until every issued iteration has finished. Appends the device time
  // of each iteration issued since the last Flush, in order, or nothing where
  // the device has no timer of its own (the loop then uses host times).
  virtual absl::Status Flush(std::vector<double>* device_ms) = 0;
  // Called once before the first Step with the iterations per window, so a
  // stepper can allocate what it needs for a window (e.g. timing events)
  // outside the timed windows.
  virtual void Reserve(int /*window_iterations*/) {}
  // Called once after warm-up, right before the first measured window.
  virtual void OnMeasureBegin() {}
  // Named ranges on a timeline (NVTX for Nsight Systems on CUDA): the loop
  // opens one around the warm-up ("warm-up"), each measured window
  // ("window", numbered from 0 over all trials) and each iteration
  // ("iteration", numbered from 0 within its window). Ranges nest; every
  // Begin has its End, on the thread that runs the loop.
  virtual void BeginRange(const char* /*kind*/, int /*index*/) {}
  virtual void EndRange() {}
  // The loop's decision to stop (warming up, a trial) as every rank of a
  // distributed run takes it, so that all of them issue the same steps:
  // true when `stop` is true on any rank. Called at the same points on every
  // rank: after each warm-up step and after each measured window, never
  // inside a timed window. A single process returns `stop`.
  virtual bool Agree(bool stop) { return stop; }
  // One rank of several: its loop stops only where Agree is called (window
  // boundaries), never between two steps of a window.
  virtual bool Ranked() const { return false; }
};

// Progress inside a run, reported once per window.
struct Progress {
  std::string phase;  // "warmup" or "measure"
  int iterations = 0;
  double throughput_samples_per_s = 0;
  double elapsed_ms = 0;
  double eta_ms = 0;
};
using ProgressFn = std::function<void(const Progress&)>;

struct Trial {
  int iterations = 0;
  double measured_ms = 0;
  double throughput_samples_per_s = 0;
  double p50_ms = 0;
};

struct Outcome {
  // Per iteration, all trials, in order.
  std::vector<double> device_ms;
  std::vector<double> host_ms;
  std::vector<double> data_wait_ms;
  // Throughput of each window, all trials.
  std::vector<double> window_throughput;
  // 95% interval of the throughput (samples/s), consistent with
  // iterations / measured_ms: from the spread of the trials' time per sample
  // when there are several trials, else of the windows', else (one window)
  // of the iterations'.
  double throughput_ci_low = 0;
  double throughput_ci_high = 0;
  std::vector<Trial> trials;
  double cold_start_ms = 0;  // first warm-up iteration, issue to finish
  double measured_ms = 0;    // sum of the trials' windows
  int iterations = 0;
  bool stable = false;       // every trial met the stability rule
  double window_cv = 0;      // CV of the last 3 windows of the last trial
  bool cancelled = false;
  // max_time_ms ended the run before its trials were done (they are not
  // stable then).
  bool stopped_at_max_time = false;
};

// Warms up (warmup_iterations, for at most half of max_time_ms, and at least
// warmup_ms), then measures config.trials windows of iterations. A trial ends
// when it has min_iterations and min_time_ms and the CV of its last 3
// windows' throughput is under cv_threshold (stable), or at max_iterations
// (stable if the CV rule holds then).
// max_time_ms bounds the whole run, warm-up and every trial: no step starts
// after it, so a run passes it by one step at most (on ranks, by one window:
// they stop together at window boundaries), but for one measured step after
// a first step that alone outlasted it. Warm-up leaves time for a measured
// step. What the bound cut short is stopped_at_max_time, unstable.
// Where the stepper has no device timer, an iteration's device time is its
// host time less its data wait. *cancel, when set, stops at the next iteration
// boundary with what was measured so far. A Step or Flush error is returned.
absl::StatusOr<Outcome> Measure(const MeasureConfig& config,
                                int64_t samples_per_iteration, Clock* clock,
                                Stepper* stepper, const ProgressFn& progress,
                                const std::atomic<bool>* cancel);

}  // namespace gpubench::measure

#endif  // GPUBENCH_WORKER_MEASURE_H_
