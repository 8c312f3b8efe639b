#include "worker/heartbeat.h"

#include <algorithm>
#include <utility>

namespace gpubench::measure {

Progress ProgressOf(const RunState::View& view, int64_t now_ns) {
  Progress p;
  p.phase = PhaseName(view.phase);
  p.iterations = view.iterations;
  p.throughput_samples_per_s = view.throughput_samples_per_s;
  p.elapsed_ms = std::max<int64_t>(0, now_ns - view.phase_start_ns) / 1e6;
  p.eta_ms = std::max<int64_t>(0, view.deadline_ns - now_ns) / 1e6;
  return p;
}

Heartbeat::Heartbeat(const RunState* state, Clock* clock, int64_t interval_ms, ProgressFn beat)
    : state_(state),
      clock_(clock),
      interval_(absl::Milliseconds(interval_ms)),
      beat_(std::move(beat)),
      thread_([this] { Loop(); }) {}

Heartbeat::~Heartbeat() { Stop(); }

void Heartbeat::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Heartbeat::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), interval_)) return;
    }
    // Outside the lock: a beat that blocks on a full pipe never holds up
    // Stop's flag.
    const RunState::View view = state_->Read();
    if (view.phase != RunState::Phase::kNone) beat_(ProgressOf(view, clock_->NowNs()));
  }
}

}  // namespace gpubench::measure
