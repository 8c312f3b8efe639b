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

// Independent samples (trials, windows or steps) a throughput interval
// needs: a t interval on fewer has 3 degrees of freedom or less (t = 3.18 at
// 3), so its ends, inverted into samples/s, run off to absurd figures
// (1089-18009 around 2054 from two windows).
constexpr int kMinIntervalSamples = 5;

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
  int profile_iterations = 5;      // at most: max_time_ms may end the window sooner
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

// Progress inside a run: the loop reports it once per window, and a
// Heartbeat (worker/heartbeat.h) from RunState at least every interval.
struct Progress {
  std::string phase;  // "warmup", "measure", "profile" or "numerics"
  int iterations = 0;
  double throughput_samples_per_s = 0;
  double elapsed_ms = 0;
  double eta_ms = 0;
};
using ProgressFn = std::function<void(const Progress&)>;

// Where a run stands, for a reader on another thread (the worker's
// Heartbeat): the loop and the engine write it with relaxed atomic stores
// only, no lock and no allocation, so a timed region may; anyone may read
// it. Each field is read as last written, not as one snapshot. Thread-safe.
class RunState {
 public:
  enum class Phase { kNone, kWarmup, kMeasure, kProfile, kNumerics };
  struct View {
    Phase phase = Phase::kNone;
    int64_t phase_start_ns = 0;
    int64_t deadline_ns = 0;  // the run's bound: its start + max_time_ms
    int iterations = 0;       // the phase's steps (measure: every trial's)
    double throughput_samples_per_s = 0;  // the last measured window's trial
  };
  // The run's bound on the loop's clock; Measure sets it as the run starts.
  void Begin(int64_t deadline_ns) { deadline_ns_.store(deadline_ns, kOrder); }
  // A phase starts at now_ns, with no step yet.
  void SetPhase(Phase phase, int64_t now_ns) {
    iterations_.store(0, kOrder);
    phase_start_ns_.store(now_ns, kOrder);
    phase_.store(phase, kOrder);
  }
  void SetIterations(int iterations) { iterations_.store(iterations, kOrder); }
  void SetThroughput(double samples_per_s) { throughput_.store(samples_per_s, kOrder); }
  View Read() const {
    return {phase_.load(kOrder), phase_start_ns_.load(kOrder), deadline_ns_.load(kOrder),
            iterations_.load(kOrder), throughput_.load(kOrder)};
  }

 private:
  static constexpr std::memory_order kOrder = std::memory_order_relaxed;
  std::atomic<Phase> phase_{Phase::kNone};
  std::atomic<int64_t> phase_start_ns_{0};
  std::atomic<int64_t> deadline_ns_{0};
  std::atomic<int> iterations_{0};
  std::atomic<double> throughput_{0.0};
};

// "warmup", "measure", "profile", "numerics"; "" for kNone.
const char* PhaseName(RunState::Phase phase);

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
  // 95% interval of the throughput (samples/s) around iterations /
  // measured_ms: the t interval of the mean time per sample of the first of
  // trials, windows and steps that has kMinIntervalSamples or more, its
  // relative half-width applied to the point estimate. Fewer: no interval
  // (0, 0), never a zero-width one.
  double throughput_ci_low = 0;
  double throughput_ci_high = 0;
  // What the interval rests on: "trials", "windows" or "steps", and how
  // many; without an interval, "steps" and the steps measured.
  std::string interval_basis;
  int interval_samples = 0;
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
  // The run's bound on the loop's clock (its start + max_time_ms), which
  // the profiled window after it keeps to (ProfiledSteps).
  int64_t deadline_ns = 0;
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
// With config.profile the bound holds the profiled window too: measuring
// ends early enough to leave it profile_iterations steps at twice the pace
// of the measured ones (the profiler's overhead) and kProfilerStartMs, but
// no more than half of max_time_ms unless one such step needs more (a step
// that slow has one measured step, and one profiled).
// Where the stepper has no device timer, an iteration's device time is its
// host time less its data wait. *cancel, when set, stops at the next iteration
// boundary with what was measured so far. A Step or Flush error is returned.
// *state, when set, follows the run (warm-up, then measuring) for a
// Heartbeat; the caller owns it and sets the phases after Measure.
absl::StatusOr<Outcome> Measure(const MeasureConfig& config,
                                int64_t samples_per_iteration, Clock* clock,
                                Stepper* stepper, const ProgressFn& progress,
                                const std::atomic<bool>* cancel,
                                RunState* state = nullptr);

// What measuring leaves a profiled window beside its steps: the profiler's
// start (Kineto's, CUPTI's on a GPU). Part of the bound's share above.
constexpr int64_t kProfilerStartMs = 500;

// The profiled window's steps, after Measure on the same clock and stepper,
// the profiler already on: the first is issued and flushed, its time the
// window's pace; each further one, up to `iterations`, only where the steps
// issued so far and it end by deadline_ns (Outcome::deadline_ns) at that
// pace (on a device that queues steps, counted from the first's start). So
// the window keeps to the run's bound, but for its first step, which always
// runs: a run past the bound passes it by that step. Ranks (Stepper::Ranked)
// decide once, through Agree after the first step: all `iterations`, or the
// first alone, so that every rank issues the same steps. *cancel, when set,
// stops at the next step. Returns the steps issued (at least 1); the caller
// flushes them. A Step or Flush error is returned. *state, when set, counts
// them.
absl::StatusOr<int> ProfiledSteps(int iterations, int64_t deadline_ns, Clock* clock,
                                  Stepper* stepper, const std::atomic<bool>* cancel,
                                  RunState* state = nullptr);

}  // namespace gpubench::measure

#endif  // GPUBENCH_WORKER_MEASURE_H_
