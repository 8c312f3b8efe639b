// A run's heartbeat: its progress at least every interval, from a thread of
// its own. The measurement loop reports once per window, and a step that
// takes seconds, or the profiled window, reports nothing: the heartbeat says
// that the run is alive, in which phase, and how long it has left.
// Torch-free, so it is tested with a fake clock and a fake step.
#ifndef GPUBENCH_WORKER_HEARTBEAT_H_
#define GPUBENCH_WORKER_HEARTBEAT_H_

#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "worker/measure.h"

namespace gpubench::measure {

// The progress a beat reports from a run's state at now_ns: its phase, the
// phase's steps, the throughput measured so far, the time since the phase
// began and the time left to the run's bound (0 past it).
Progress ProgressOf(const RunState::View& view, int64_t now_ns);

// Calls beat(ProgressOf(state, now)) every interval on a thread of its own,
// once the run has a phase (none before), until Stop. Its thread only reads
// the RunState (atomics) and the clock, so the run's thread never waits on
// it. Thread-safe; Stop and the destructor from one thread.
class Heartbeat {
 public:
  // Starts the thread. beat runs on it, beside the run's own progress
  // callback: the caller serializes the two (the worker writes both to one
  // stream under a mutex). state and clock must outlive the Heartbeat.
  Heartbeat(const RunState* state, Clock* clock, int64_t interval_ms, ProgressFn beat);
  // Stops it.
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // Ends the thread and joins it: no beat runs once it returns. A second
  // call does nothing.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  const RunState* const state_;
  Clock* const clock_;
  const absl::Duration interval_;
  const ProgressFn beat_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: it starts once the fields above are set
};

}  // namespace gpubench::measure

#endif  // GPUBENCH_WORKER_HEARTBEAT_H_
