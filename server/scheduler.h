// Nightly (cron) schedules: validates and stores them, enqueues their jobs
// when due, and compares each scheduled run with that schedule's history.
#ifndef GPUBENCH_SERVER_SCHEDULER_H_
#define GPUBENCH_SERVER_SCHEDULER_H_

#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gpubench/v1/job.pb.h"
#include "server/job_manager.h"
#include "storage/store.h"

namespace gpubench::server {

// Thread-safe. Tick() does the work; Start() runs it on a thread against the
// real clock, and tests call it with an injected time.
class Scheduler {
 public:
  Scheduler(JobManager* jobs, storage::Store* store);
  ~Scheduler();

  // Validates (InvalidArgument naming schedule.cron, schedule.time_zone or the
  // spec's field) and stores a schedule with its next run time after now.
  absl::StatusOr<v1::Schedule> Create(v1::Schedule schedule, absl::Time now);

  // Enqueues one job for every enabled schedule that is due at now (a run
  // missed while the daemon was down is made up once) and moves each to its
  // next time. Returns the number of jobs enqueued.
  int Tick(absl::Time now);

  // Fills run->history from the schedule's last K succeeded runs of the same
  // config. Called by the job manager for runs of scheduled jobs.
  void CompareWithHistory(const v1::Job& job, v1::Run* run);

  void Start();  // Tick every 15 s (and at once) until Stop()
  void Stop();

 private:
  JobManager* const jobs_;
  storage::Store* const store_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_SCHEDULER_H_
