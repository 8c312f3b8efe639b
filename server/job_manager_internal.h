// What the job manager's files share (job_manager.cc: submit, cancel and
// dispatch; job_run.cc: running a job's workers; job_record.cc: events,
// states and runs to the store): the state of one running job, and the
// limits. Not for other files.
#ifndef GPUBENCH_SERVER_JOB_MANAGER_INTERNAL_H_
#define GPUBENCH_SERVER_JOB_MANAGER_INTERNAL_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/job_manager.h"
#include "launcher/process.h"

namespace gpubench::server {

// A profiled window's Chrome trace is kept up to this size: a model with
// millions of operators per step would otherwise fill the store in one run.
inline constexpr size_t kMaxTraceBytes = size_t{256} << 20;

// The room a typical run needs (record, samples, telemetry), probed before
// taking jobs again after a run could not be stored.
inline constexpr int64_t kRunProbeBytes = 256 << 10;

// One job between dispatch and its end.
struct JobManager::Running {
  v1::Job job;  // written by its lanes under store_mu once they run
  std::set<std::string> leases;
  absl::Mutex store_mu;  // serializes the lanes' StoreRun on job
  absl::Mutex mu;
  absl::CondVar cv;  // signalled when the fields below change
  // The workers running now, one per lane.
  std::set<worker::Worker*> processes ABSL_GUARDED_BY(mu);
  // Why the watchdog killed a worker (each lane's its own), if it did.
  // Workers the watchdog killed at a limit: why, and whether it was memory.
  std::map<worker::Worker*, std::pair<std::string, bool>> limit_hits ABSL_GUARDED_BY(mu);
  bool cancel ABSL_GUARDED_BY(mu) = false;
  bool shutdown ABSL_GUARDED_BY(mu) = false;
  bool timed_out ABSL_GUARDED_BY(mu) = false;
  bool finished ABSL_GUARDED_BY(mu) = false;
  // The job's workers that run at the same time (a cuda:all job's lanes)
  // share one process group, which their telemetry counts as the job's own
  // rather than contention. Held across a worker's start, so that lanes
  // starting together make one group.
  absl::Mutex group_mu;
  pid_t process_group ABSL_GUARDED_BY(group_mu) = 0;  // 0: none yet
  // Workers (or rank groups) started and not yet reaped: while one runs,
  // its group exists (a reaped group's id could be another's by now).
  int group_workers ABSL_GUARDED_BY(group_mu) = 0;
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_JOB_MANAGER_INTERNAL_H_
