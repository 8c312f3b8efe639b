// The watchdog of a running job: its deadline, and the host memory and
// scratch limits of its workers, polled.
#include "server/job_runner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "launcher/process.h"

namespace gpubench::server {

void JobRunner::Watchdog(std::shared_ptr<RunningJob> running) {
  JobClock* clock = options_.clock != nullptr ? options_.clock : JobClock::Real();
  const int64_t limit_s =
      running->job.spec().timeout_s() > 0
          ? std::min(running->job.spec().timeout_s(), options_.max_job_seconds)
          : options_.max_job_seconds;
  const absl::Time deadline = clock->Now() + absl::Seconds(limit_s);
  // The memory limit is a poll of the worker's RSS: an rlimit would break
  // CUDA (launcher/process.h). The scratch folder's is a poll too.
  const bool watch = options_.worker_max_rss_bytes > 0 || options_.worker_max_scratch_bytes > 0;
  absl::MutexLock lock(&running->mu);
  bool stop = false;
  while (!stop) {
    const absl::Time wake = watch ? std::min(deadline, clock->Now() + absl::Milliseconds(200))
                                  : deadline;
    // Until a stop, the next poll or the deadline.
    while (!(stop = running->finished || running->cancel || running->shutdown) &&
           clock->Now() < wake) {
      clock->WaitUntil(&running->cv, &running->mu, wake);
    }
    if (running->finished) return;
    if (stop) break;
    if (clock->Now() >= deadline) {
      running->timed_out = true;
      break;
    }
    for (worker::Worker* process : running->processes) {
      if (running->limit_hits.count(process)) continue;  // killed already
      const int64_t rss = options_.worker_max_rss_bytes > 0 ? process->RssBytes() : 0;
      const int64_t scratch =
          options_.worker_max_scratch_bytes > 0 ? process->ScratchBytes() : 0;
      if (rss > options_.worker_max_rss_bytes && options_.worker_max_rss_bytes > 0) {
        running->limit_hits[process] = {
            absl::StrCat("its resident memory ", rss, " bytes passed the host memory limit of ",
                         options_.worker_max_rss_bytes, " bytes (gpubenchd --worker-max-rss-bytes)"),
            true};
        process->Kill();
      } else if (scratch > options_.worker_max_scratch_bytes &&
                 options_.worker_max_scratch_bytes > 0) {
        running->limit_hits[process] = {
            absl::StrCat("its scratch folder held ", scratch, " bytes, past the limit of ",
                         options_.worker_max_scratch_bytes,
                         " bytes (gpubenchd --worker-max-scratch-bytes)"),
            false};
        process->Kill();
      }
    }
  }
  for (worker::Worker* process : running->processes) process->Stop();
  const absl::Time kill_at = clock->Now() + absl::Milliseconds(options_.stop_grace_ms);
  while (!running->finished && clock->Now() < kill_at) {
    clock->WaitUntil(&running->cv, &running->mu, kill_at);
  }
  if (!running->finished) {
    for (worker::Worker* process : running->processes) process->Kill();
  }
}

}  // namespace gpubench::server
