// The job runner: a dispatched job from its start to its end. It marks
// the job RUNNING, splits its plan into lanes (JobPlanner::LanesOf), drives
// each lane's workers pass by pass (lane_passes.cc: parallel lanes side by
// side, the others in turn), watches them (job_watchdog.cc: the timeout, a
// cancel or a shutdown, the workers' memory and scratch limits, on the
// clock seam JobClock), records every run through the JobRecorder, and
// decides the job's final state. The job manager's third collaborator;
// tested alone in job_runner_test with scripted workers and a manual clock.
#ifndef GPUBENCH_SERVER_JOB_RUNNER_H_
#define GPUBENCH_SERVER_JOB_RUNNER_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "gpubench/v1/job.pb.h"
#include "gpubench/v1/worker.pb.h"
#include "launcher/process.h"
#include "server/daemon_options.h"
#include "server/host_pairs.h"
#include "server/job_planner.h"
#include "server/job_recorder.h"
#include "storage/store.h"

namespace gpubench::server {

// One job between dispatch and its end.
struct RunningJob {
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

// Thread-safe: Run is called on one thread per job, JobStarted and
// JobEnded by the dispatcher; its mutex guards the jobs beside each
// running job alone.
class JobRunner {
 public:
  // planner, recorder, launcher and host_pairs are not owned and outlive
  // the runner; without host_pairs a pair across hosts fails at its start.
  JobRunner(const DaemonOptions& options, storage::Store* store, const v1::HostInfo& host,
            const JobPlanner* planner, JobRecorder* recorder, worker::WorkerLauncher* launcher,
            const HostPairs* host_pairs = nullptr)
      : options_(options), store_(store), host_(host), planner_(planner), recorder_(recorder),
        launcher_(launcher), host_pairs_(host_pairs) {}

  // Runs the dispatched job to its end: its RUNNING state, every lane's
  // workers under the watchdog, and its final state (QUEUED again when a
  // shutdown interrupted it and attempts remain; the caller queues it).
  // Returns when every worker of the job is reaped; running->finished is
  // then set.
  void Run(const std::shared_ptr<RunningJob>& running);

  // The dispatcher's word that job_id runs from now on (each running job
  // records it as a job beside its current run), and that it ended.
  void JobStarted(const std::string& job_id) ABSL_LOCKS_EXCLUDED(mu_);
  void JobEnded(const std::string& job_id) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class LanePasses;  // lane_passes.cc: one lane's workers, pass by pass
  using Lane = JobPlanner::Lane;
  // What a job needs before its first worker starts.
  struct JobStart {
    v1::WorkerRequest request;
    std::vector<v1::RunConfig> configs;  // the sweep
    std::set<int> stored;                // sweep indices with a stored run
    bool any_ok = false;                 // a stored run counts as a success
    // A pair across hosts: the one rank this daemon runs (HostPairs).
    std::optional<v1::RankAssignment> host_pair;
  };
  // What a job's worker passes leave for its final state.
  struct Passes {
    bool done = false;                 // a worker reported the sweep done
    bool cancelled_by_worker = false;  // ... after a stop
    absl::Status stream;               // a broken stream, or no worker started
    absl::Status gpu_setup;            // a GPU setting that could not be set or undone
    absl::Status store_error;          // a run that could not be stored
    worker::ExitInfo exit, crash;      // the last worker's exit, the last crash's
    int crashes = 0;
    bool any_ok = false;
  };
  // Marks the job RUNNING and gathers what its workers need; false when the
  // job ended here (cancelled meanwhile, models no longer allowed, a store
  // that cannot record it).
  bool StartJob(RunningJob* running, JobStart* start);
  // A pair across hosts: its one rank here (HostPairs), its secret kept in
  // memory only; FailedPrecondition once the daemon that queued it
  // restarted. OK for any other job.
  absl::Status FindHostPair(const v1::Job& job, JobStart* start) const;
  // Every lane of the job (parallel ones side by side), their passes merged.
  Passes RunLanes(const std::shared_ptr<RunningJob>& running, JobStart* start);
  // One worker per pass until the lane is done or the job is stopped; a
  // worker that dies in a run fails that run and the next pass goes on.
  Passes RunPasses(const std::shared_ptr<RunningJob>& running, const JobStart& start,
                   const Lane& lane);
  // The job's final state, and retention.
  void EndJob(RunningJob* running, const Passes& passes);
  // Stops the workers after a cancel, a timeout or a shutdown (SIGKILL
  // after the grace period), and at a memory or scratch limit.
  void Watchdog(std::shared_ptr<RunningJob> running);
  // Records, as a run of job_id starts, the jobs running beside it.
  void NoteJobsBeside(const std::string& job_id) ABSL_LOCKS_EXCLUDED(mu_);
  // What ran beside the job's current run, from the start of that run
  // (jobs beside, the load average), with the worker's own readings, and
  // the contended flag.
  void FillContention(const std::string& job_id, v1::Run* run) ABSL_LOCKS_EXCLUDED(mu_);

  const DaemonOptions& options_;
  storage::Store* const store_;
  const v1::HostInfo& host_;
  const JobPlanner* const planner_;
  JobRecorder* const recorder_;
  worker::WorkerLauncher* const launcher_;
  const HostPairs* const host_pairs_;

  absl::Mutex mu_;
  // Each running job (JobStarted) and the other jobs that ran during its
  // current run.
  std::map<std::string, std::set<std::string>> beside_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_JOB_RUNNER_H_
