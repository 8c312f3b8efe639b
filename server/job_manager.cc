#include "server/job_manager.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/contention.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/printable.h"
#include "common/spec.h"
#include "google/protobuf/util/time_util.h"
#include "common/sha256.h"
#include "report/fleet_rank.h"
#include "server/rank_group.h"
#include "server/job_manager_internal.h"
#include "launcher/process.h"

namespace gpubench::server {

using google::protobuf::util::TimeUtil;

JobManager::JobManager(DaemonOptions options, storage::Store* store, v1::HostInfo host,
                       std::unique_ptr<worker::WorkerLauncher> launcher)
    : options_(std::move(options)),
      store_(store),
      host_(std::move(host)),
      planner_({options_.model_roots, options_.worker_limits.protected_paths,
                options_.allow_uploaded_aoti, options_.clock_control != nullptr},
               store_, host_),
      launcher_(launcher ? std::move(launcher)
                         : std::make_unique<worker::ProcessLauncher>(options_.worker_path,
                                                                     options_.worker_limits)),
      events_(store) {}

JobManager::~JobManager() { Shutdown(); }

absl::Status JobManager::Start() {
  std::vector<v1::Job> jobs;
  std::string token;
  do {
    auto p = store_->jobs().List(
        {{v1::JOB_STATE_RUNNING, v1::JOB_STATE_QUEUED}, "", "", 0, 0}, 1000, token);
    if (!p.ok()) return p.status();
    for (auto& j : p->items) jobs.push_back(std::move(j));
    token = p->next_page_token;
  } while (!token.empty());
  for (v1::Job& job : jobs) {
    if (job.state() == v1::JOB_STATE_RUNNING) {
      if (auto s = recorder_.Interrupt(&job); !s.ok()) return s;
    }
    if (job.state() != v1::JOB_STATE_QUEUED) continue;
    auto leases = planner_.LeasesOf(job);
    if (leases.ok() && leases->any_gpus > host_.gpus_size()) {
      leases = absl::FailedPreconditionError(
          absl::StrCat("it needs ", leases->any_gpus, " GPUs; this host has ",
                       host_.gpus_size(), " now"));
    }
    if (!leases.ok()) {
      // A spec this build (or this host) no longer accepts: fail it rather
      // than loop.
      recorder_.RecordState(&job, v1::JOB_STATE_FAILED, std::string(leases.status().message()));
      continue;
    }
    absl::MutexLock lock(&mu_);
    queue_.Push(job.job_id(), job.spec().priority(),
                TimeUtil::TimestampToNanoseconds(job.submit_time()), leases->leases,
                leases->any_gpus, job.submitted_by());
  }
  {
    absl::MutexLock lock(&mu_);
    recovered_ = true;
  }
  dispatcher_ = std::thread([this] { DispatchLoop(); });
  return absl::OkStatus();
}

void JobManager::Shutdown() {
  std::vector<std::shared_ptr<Running>> running;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [id, r] : running_) running.push_back(r);
  }
  cv_.SignalAll();
  for (auto& r : running) {
    absl::MutexLock lock(&r->mu);
    r->shutdown = true;
    r->cv.SignalAll();
  }
  if (dispatcher_.joinable()) dispatcher_.join();
  {
    absl::MutexLock lock(&mu_);
    while (job_threads_ > 0) cv_.Wait(&mu_);
  }
  // A last try for states the store could not take (space may be free by
  // now); what still cannot be written reads running at the next start,
  // which requeues it as interrupted.
  if (absl::Status s = recorder_.Flush(); !s.ok()) recorder_.LogLost(s);
}

absl::StatusOr<v1::Job> JobManager::Submit(const v1::JobSpec& spec,
                                           const std::string& schedule_id,
                                           const std::string& submitted_by) {
  auto plan = PlanJob(spec);
  if (!plan.ok()) return plan.status();
  return Submit(std::move(*plan), schedule_id, submitted_by);
}

absl::StatusOr<v1::Job> JobManager::Submit(Plan plan, const std::string& schedule_id,
                                           const std::string& submitted_by) {
  if (auto s = NoProbeIn(plan.runs); !s.ok()) return s;
  return Queue(std::move(plan), schedule_id, submitted_by, /*daemon_probe=*/false);
}

absl::StatusOr<std::vector<v1::Job>> JobManager::SubmitProbeSuite(
    const v1::RunProbeRequest& request, const std::string& submitted_by) {
  if (request.level() < 0 || request.level() > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("level: 1, 2 or 3 (0: 1), not ", request.level()));
  }
  if (request.sustain_s() < 0 || request.sustain_s() > 600) {
    return absl::InvalidArgumentError(
        absl::StrCat("sustain_s: 1 to 600 seconds (0: 60), not ", request.sustain_s()));
  }
  if (request.load_s() < 0 || request.load_s() > 3600) {
    return absl::InvalidArgumentError(
        absl::StrCat("load_s: 1 to 3600 seconds (0: 900), not ", request.load_s()));
  }
  report::ProbeLevel level;
  level.level = std::max(1, request.level());
  if (request.sustain_s() > 0) level.sustain_ms = int64_t{1000} * request.sustain_s();
  if (request.load_s() > 0) level.load_ms = int64_t{1000} * request.load_s();
  const bool dry_run = request.dry_run();
  // Every job planned before any is queued: a suite that cannot run here
  // queues nothing.
  std::vector<Plan> plans;
  for (const v1::JobSpec& spec : report::ProbeJobs(host_, request.small(), level)) {
    auto plan = planner_.PlanSpec(spec);
    if (!plan.ok()) {
      return absl::Status(plan.status().code(),
                          absl::StrCat("probe ", spec.base().probe(), ": ",
                                       plan.status().message()));
    }
    plans.push_back(std::move(*plan));
  }
  std::vector<v1::Job> jobs;
  for (Plan& plan : plans) {
    if (dry_run) {
      v1::Job& job = jobs.emplace_back();
      *job.mutable_spec() = plan.spec;
      job.set_run_count(plan.runs.size());
      job.set_daemon_probe(true);
      continue;
    }
    auto job = Queue(std::move(plan), "", submitted_by, /*daemon_probe=*/true);
    if (!job.ok()) {
      // The suite's jobs queued so far go with it: a whole suite or none.
      // One already ended is not cancelled, and says so in the log.
      for (const v1::Job& queued : jobs) {
        if (auto cancelled = Cancel(queued.job_id()); !cancelled.ok()) {
          Log(LogLevel::kWarning, "probe suite: job ", queued.job_id(), " not cancelled: ",
              cancelled.status().message());
        }
      }
      return job.status();
    }
    jobs.push_back(std::move(*job));
  }
  return jobs;
}

absl::StatusOr<v1::RunHostPairResponse> JobManager::SubmitHostPair(
    const v1::RunHostPairRequest& request, const std::string& submitted_by) {
  auto plan = planner_.PlanSpec(report::HostPairJob(host_, request.peer()));
  if (!plan.ok()) {
    return absl::Status(plan.status().code(), absl::StrCat("probe ", report::kHostPairProbe,
                                                           ": ", plan.status().message()));
  }
  // The rank runs on the device HostPairJob chose (the plan's one run).
  auto rank = PairRankOf(request, options_.pair_address, plan->runs.at(0).device());
  if (!rank.ok()) return rank.status();
  plan->host_pair = *rank;
  auto job = Queue(std::move(*plan), "", submitted_by, /*daemon_probe=*/true);
  if (!job.ok()) return job.status();
  v1::RunHostPairResponse response;
  *response.mutable_job() = std::move(*job);
  if (request.side() == v1::RunHostPairRequest::SIDE_OPEN) {
    response.set_store_address(rank->host_pair().store_address());
    response.set_secret(rank->host_pair().secret());
  }
  return response;
}

absl::StatusOr<v1::Job> JobManager::Queue(Plan plan, const std::string& schedule_id,
                                          const std::string& submitted_by, bool daemon_probe) {
  const v1::JobSpec& spec = plan.spec;
  // States that could not be stored go first; while they cannot, the store
  // takes no new job either.
  if (auto s = recorder_.Flush(); !s.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the daemon's store cannot write, so no job is accepted: ", s.message()));
  }
  // After a run could not be stored, a new job waits until the store can
  // take a run's worth of data again (space freed, retention, a new disk).
  if (recorder_.store_full()) {
    if (auto s = store_->CanWrite(kRunProbeBytes); !s.ok()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the daemon's store cannot take a run, so no job is accepted: ", s.message()));
    }
    recorder_.SetStoreFull(false);
  }
  v1::Job job;
  *job.mutable_spec() = spec;
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_run_count(plan.runs.size());
  job.set_schedule_id(schedule_id);
  job.set_submitted_by(submitted_by);
  job.set_daemon_probe(daemon_probe);
  job.set_host_id(host_.host_id());
  *job.mutable_submit_time() = NowTimestamp();
  const Needs needs = planner_.LeasesOf(job, plan.runs);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the daemon is shutting down");
    if (static_cast<int>(queue_.size()) >= options_.max_queue) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the queue is full (", options_.max_queue, " jobs); retry later"));
    }
    // One caller must not fill the queue for everyone else.
    const int share = options_.max_queued_per_submitter > 0
                          ? options_.max_queued_per_submitter
                          : std::max(1, options_.max_queue / 2);
    if (const int mine = queue_.QueuedBy(submitted_by); mine >= share) {
      return absl::ResourceExhaustedError(absl::StrCat(
          submitted_by.empty() ? "this caller" : submitted_by, " has ", mine,
          " jobs queued, its share of the queue (gpubenchd --max-queued-per-submitter ",
          share, "); retry when some have started"));
    }
  }
  v1::JobPlan stored;
  for (const v1::RunConfig& run : plan.runs) *stored.add_runs() = run;
  auto id = store_->jobs().Insert(job, stored);
  if (absl::IsResourceExhausted(id.status())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the daemon's store is full, so no job is accepted: ", id.status().message()));
  }
  if (!id.ok()) return id.status();
  job.set_job_id(*id);
  // Known before it can be dispatched.
  if (plan.host_pair) host_pairs_.Add(job.job_id(), *plan.host_pair);
  // The first event records the submission.
  recorder_.RecordEvent(job.job_id(), [](v1::ProgressEvent* e) {
    e->mutable_state_changed()->set_state(v1::JOB_STATE_QUEUED);
  });
  {
    absl::MutexLock lock(&mu_);
    queue_.Push(job.job_id(), spec.priority(),
                TimeUtil::TimestampToNanoseconds(job.submit_time()), needs.leases,
                needs.any_gpus, submitted_by);
  }
  cv_.SignalAll();
  Log(LogLevel::kInfo, "job ", job.job_id(), " queued: ", job.run_count(), " run(s) of ",
      spec.base().workload(), submitted_by.empty() ? "" : " by ", submitted_by,
      schedule_id.empty() ? "" : " for schedule ", schedule_id);
  return job;
}

JobManager::Load JobManager::CurrentLoad() {
  Load load;
  {
    absl::MutexLock lock(&mu_);
    load.queued = static_cast<int>(queue_.size());
    load.running = static_cast<int>(running_.size());
  }
  load.unsaved = recorder_.UnsavedStates();
  return load;
}

absl::StatusOr<v1::Job> JobManager::Cancel(const std::string& job_id) {
  std::shared_ptr<Running> running;
  bool was_queued = false;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = running_.find(job_id); it != running_.end()) {
      running = it->second;
    }
    was_queued = queue_.Remove(job_id);
  }
  if (running) {
    {
      absl::MutexLock lock(&running->mu);
      running->cancel = true;
    }
    running->cv.SignalAll();
  }
  auto job = GetJob(job_id);
  if (!job.ok()) return job.status();
  if (running) return job;  // its runner ends it, and watchers see that
  if (was_queued || !IsTerminal(job->state())) {
    // Queued, or left non-terminal in the store with nothing running it (a
    // state that could not be stored): either way it ends here. A store that
    // cannot take the change still leaves the job cancelled in this daemon.
    recorder_.RecordState(&*job, v1::JOB_STATE_CANCELLED,
             was_queued ? "cancelled while queued" : "cancelled; no worker was running it");
    cv_.SignalAll();
  }
  return job;
}

absl::StatusOr<storage::DeletedJob> JobManager::Delete(const std::string& job_id,
                                                       const std::string& deleted_by) {
  auto job = GetJob(job_id);  // this daemon's view: an end the store could not take counts
  if (!job.ok()) return job.status();
  {
    absl::MutexLock lock(&mu_);
    // Until Start() is done, a job it found running is interrupted and then
    // requeued: ended for a moment, and neither queued nor running.
    if (!recovered_) {
      return absl::UnavailableError("the daemon is recovering its queue; retry in a moment");
    }
    // Only the dispatcher starts a job, and only one in queue_. An ended job
    // that is neither queued nor running here is never queued again (a
    // requeue is of a running job, or at Start), so none starts between this
    // check and the delete, which is done without mu_ (no store I/O under it).
    const char* live = running_.count(job_id) > 0 ? "running"
                       : queue_.Contains(job_id)  ? "queued"
                                                  : nullptr;
    if (live != nullptr || !IsTerminal(job->state())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job ", job_id, " is ",
          live != nullptr ? live : EnumShortName(v1::JobState_descriptor(), job->state()),
          "; only an ended job can be deleted: cancel it first (gpubench cancel ", job_id,
          ")"));
    }
  }
  auto deleted = store_->jobs().Delete(job_id);
  if (!deleted.ok()) return deleted.status();
  recorder_.Forget(job_id);
  events_.Forget(job_id);
  deleted->job = *std::move(job);
  Log(LogLevel::kInfo, "job ", job_id, " deleted by ", deleted_by, ": ", deleted->runs,
      " run(s), ", deleted->bytes, " bytes");
  return deleted;
}

void JobManager::DispatchLoop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    std::optional<JobQueue::Started> next = queue_.TakeStartable();
    if (!next) {
      idle_at_pushes_ = queue_.pushes();
      cv_.Wait(&mu_);
      continue;
    }
    auto start = std::make_shared<Running>();
    start->job.set_job_id(next->job_id);
    start->leases = std::move(next->leases);
    running_[start->job.job_id()] = start;
    runner_.JobStarted(start->job.job_id());
    ++job_threads_;
    std::thread([this, start] { RunJob(start); }).detach();
  }
}

bool JobManager::DispatcherIdle() {
  absl::MutexLock lock(&mu_);
  return idle_at_pushes_ == queue_.pushes();
}

void JobManager::RunJob(std::shared_ptr<Running> running) {
  runner_.Run(running);
  runner_.JobEnded(running->job.job_id());
  host_pairs_.Remove(running->job.job_id());
  const v1::Job& job = running->job;
  absl::MutexLock lock(&mu_);
  if (job.state() == v1::JOB_STATE_QUEUED && !stopping_) {  // requeued after a shutdown
    queue_.Push(job.job_id(), job.spec().priority(),
                google::protobuf::util::TimeUtil::TimestampToNanoseconds(job.submit_time()),
                running->leases, 0, job.submitted_by());
  }
  queue_.Release(running->leases);
  running_.erase(job.job_id());
  --job_threads_;  // the last touch of *this by this thread
  cv_.SignalAll();
}

absl::StatusOr<v1::Job> JobManager::GetJob(const std::string& job_id) {
  return recorder_.GetJob(job_id);
}

void JobManager::OverlayUnsaved(std::vector<v1::Job>* jobs) { recorder_.Overlay(jobs); }

absl::Status JobManager::EventsAfter(const std::string& job_id, int64_t after_sequence,
                                     std::vector<v1::ProgressEvent>* events, bool* ended) {
  return events_.EventsAfter(
      job_id, after_sequence,
      [&]() -> absl::StatusOr<bool> {
        auto job = GetJob(job_id);
        if (!job.ok()) return job.status();
        return recorder_.Ends(*job);
      },
      events, ended);
}

}  // namespace gpubench::server
