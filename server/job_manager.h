// The daemon's job queue: validates and persists jobs, hands each device to
// one job at a time (leases), runs every job in a fresh gpubench-worker
// process, stores each run as it arrives, and keeps the progress events that
// WatchJob streams. Never runs a model itself.
#ifndef GPUBENCH_SERVER_JOB_MANAGER_H_
#define GPUBENCH_SERVER_JOB_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "gpubench/v1/job.pb.h"
#include "gpubench/v1/service.pb.h"
#include "gpubench/v1/worker.pb.h"
#include "server/daemon_options.h"
#include "server/event_log.h"
#include "server/job_clock.h"
#include "server/host_pairs.h"
#include "server/job_planner.h"
#include "server/job_recorder.h"
#include "server/job_runner.h"
#include "server/job_queue.h"
#include "storage/store.h"
#include "launcher/process.h"

namespace gpubench::server {


// Thread-safe. Start() once, then any thread may call the rest; Shutdown()
// stops every thread it started.
class JobManager {
 public:
  // launcher starts the workers; null: gpubench-worker processes
  // (options.worker_path, options.worker_limits).
  JobManager(DaemonOptions options, storage::Store* store, v1::HostInfo host,
             std::unique_ptr<worker::WorkerLauncher> launcher = nullptr);
  ~JobManager();

  JobManager(const JobManager&) = delete;
  JobManager& operator=(const JobManager&) = delete;

  // Recovery, then the dispatcher: a job found RUNNING (the daemon died under
  // it) becomes INTERRUPTED, keeps its stored runs and is requeued up to
  // max_requeues times; QUEUED jobs are queued again.
  absl::Status Start();

  // Stops accepting jobs, stops running workers (SIGTERM, SIGKILL after the
  // grace period), marks their jobs INTERRUPTED (and requeued for the next
  // start), and joins every thread. Queued jobs stay queued in the store.
  void Shutdown();

  // The planner's plan of a spec on this host (JobPlanner::PlanJob).
  using Plan = JobPlanner::Plan;
  absl::StatusOr<Plan> PlanJob(const v1::JobSpec& spec) const { return planner_.PlanJob(spec); }

  // Stores plan as a QUEUED job recording submitted_by and wakes the
  // dispatcher: the job runs exactly plan's runs. ResourceExhausted when
  // the store or the queue is full or submitted_by already has its share of
  // the queue, Unavailable while shutting down; InvalidArgument for a plan
  // whose runs name a probe.
  absl::StatusOr<v1::Job> Submit(Plan plan, const std::string& schedule_id,
                                 const std::string& submitted_by);
  // PlanJob, then Submit.
  absl::StatusOr<v1::Job> Submit(const v1::JobSpec& spec, const std::string& schedule_id,
                                 const std::string& submitted_by);

  // The fleet probe suite (report::ProbeJobs) for this host, made by the
  // daemon from its own host info (request.small: at CPU sizes on the CPU;
  // request.level 2: with the sustained product; InvalidArgument naming
  // level or sustain_s where out of range): one job
  // per probe, each stored with Job.daemon_probe, which every run of it
  // gets as it is stored (Run.daemon_probe); no caller's spec ever does.
  // With dry_run, the planned jobs (spec and run count, no id), none
  // queued. All or none: where one cannot be queued (Submit's errors), those
  // queued before it are cancelled and the error returned.
  absl::StatusOr<std::vector<v1::Job>> SubmitProbeSuite(const v1::RunProbeRequest& request,
                                                        const std::string& submitted_by);

  // One side of a pair across hosts (host_pairs.h): the job of this
  // daemon's rank, a probe job, on cuda:0 or the CPU of a host without GPUs,
  // its rank kept in memory until it ends; for an OPEN, where its store
  // listens and the secret. PairRankOf's and Submit's errors.
  absl::StatusOr<v1::RunHostPairResponse> SubmitHostPair(const v1::RunHostPairRequest& request,
                                                         const std::string& submitted_by);

  // A queued job is cancelled at once; a running one is asked to stop (its
  // completed runs are kept) and ends CANCELLED. A finished job is returned
  // unchanged. NotFound for an unknown id.
  absl::StatusOr<v1::Job> Cancel(const std::string& job_id);

  // Deletes an ended job with everything stored of it (JobStore::Delete:
  // runs, samples, telemetry, traces, events, plan), then forgets what this
  // daemon keeps of it in memory (a state or events the store could not
  // take yet, its event log). FailedPrecondition for a job queued, running
  // or not ended (cancel it first), decided under mu_; NotFound for an
  // unknown id; Unavailable while Start() recovers the queue; the store's
  // error otherwise, the job then kept. deleted_by names the caller in the
  // log. The returned job is this daemon's last view of it.
  absl::StatusOr<storage::DeletedJob> Delete(const std::string& job_id,
                                             const std::string& deleted_by);

  // A job as this daemon knows it: the store's record, or a newer state the
  // store could not take. NotFound for an unknown id.
  absl::StatusOr<v1::Job> GetJob(const std::string& job_id);
  // Replaces jobs read from the store by their newer unsaved states.
  void OverlayUnsaved(std::vector<v1::Job>* jobs);

  // Events of a job with sequence > after_sequence, in order, and whether the
  // job has ended (no event will follow the returned ones). NotFound for an
  // unknown job.
  absl::Status EventsAfter(const std::string& job_id, int64_t after_sequence,
                           std::vector<v1::ProgressEvent>* events, bool* ended);

  // Calls notify (on the thread that appended) whenever job_id gets events
  // or ends. notify must not call Subscribe or Unsubscribe. Returns a token.
  int64_t Subscribe(const std::string& job_id, std::function<void()> notify) {
    return events_.Subscribe(job_id, std::move(notify));
  }
  // After it returns, the notify of token is not running and never will.
  void Unsubscribe(int64_t token) { events_.Unsubscribe(token); }

  // Called for each finished run of a scheduled job before it is stored;
  // set once, before Start(), by the scheduler.
  using RunHook = JobRecorder::RunHook;
  void SetRunHook(RunHook hook) { recorder_.SetRunHook(std::move(hook)); }

  const v1::HostInfo& host() const { return host_; }

  // Jobs waiting in the queue and jobs running now.
  struct Load {
    int queued = 0;
    int running = 0;
    // Ended jobs whose state the store could not take yet (a full disk),
    // by that state: the store still holds them as running.
    std::map<v1::JobState, int> unsaved;
  };
  Load CurrentLoad();

  // True once the dispatcher has looked at every job queued so far and is
  // waiting, having found none it could start: a test's "nothing started"
  // holds from then on, without waiting on the clock.
  bool DispatcherIdle();

 private:
  using Running = RunningJob;

  // Submit's work, daemon_probe marking the job as the daemon's own probe.
  absl::StatusOr<v1::Job> Queue(Plan plan, const std::string& schedule_id,
                                const std::string& submitted_by, bool daemon_probe);

  using Needs = JobPlanner::Needs;
  void DispatchLoop();
  // The thread of one dispatched job: the runner runs it, then its leases
  // are freed (and a job a shutdown interrupted is queued again).
  void RunJob(std::shared_ptr<Running> running);

  const DaemonOptions options_;
  storage::Store* const store_;
  const v1::HostInfo host_;
  const JobPlanner planner_;  // plans, leases and lanes
  const std::unique_ptr<worker::WorkerLauncher> launcher_;

  // Guards the queue, leases and running jobs below; held for no store I/O.
  absl::Mutex mu_;
  absl::CondVar cv_;  // signalled when the fields below change
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool recovered_ ABSL_GUARDED_BY(mu_) = false;  // Start() has queued the stored jobs
  int64_t idle_at_pushes_ ABSL_GUARDED_BY(mu_) = -1;  // queue_.pushes() when last idle
  JobQueue queue_ ABSL_GUARDED_BY(mu_){host_.gpus_size()};
  std::map<std::string, std::shared_ptr<Running>> running_ ABSL_GUARDED_BY(mu_);
  int job_threads_ ABSL_GUARDED_BY(mu_) = 0;  // RunJob threads (detached) still running
  std::thread dispatcher_;

  EventLog events_;  // its own lock; never taken with mu_ held
  // The job's record in the store, and the events watchers see: its own
  // lock, never taken with mu_ held.
  JobRecorder recorder_{store_, &events_, host_.host_id(), options_.max_requeues};
  HostPairs host_pairs_;  // the ranks of pairs across hosts queued here
  // Runs each dispatched job to its end. Its lock is a leaf: taken with
  // mu_ held (JobStarted at dispatch), never the other way round.
  JobRunner runner_{options_, store_, host_, &planner_, &recorder_, launcher_.get(),
                    &host_pairs_};
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_JOB_MANAGER_H_
