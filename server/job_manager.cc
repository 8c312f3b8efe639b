#include "server/job_manager.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
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
#include "server/rank_group.h"
#include "worker/process.h"

namespace gpubench::server {
namespace {

// A profiled window's Chrome trace is kept up to this size: a model with
// millions of operators per step would otherwise fill the store in one run.
constexpr size_t kMaxTraceBytes = size_t{256} << 20;

using google::protobuf::util::TimeUtil;

// Ranks of a distributed run on the CPU, at most (and no more than cores).
constexpr int kMaxCpuRanks = 16;
// A CPU collective's message times its ranks, at most.
constexpr int64_t kMaxCpuCollectiveBytes = int64_t{4} << 30;

// The room a typical run needs (record, samples, telemetry), probed before
// taking jobs again after a run could not be stored.
constexpr int64_t kRunProbeBytes = 256 << 10;

bool IsTerminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
         s == v1::JOB_STATE_CANCELLED || s == v1::JOB_STATE_INTERRUPTED;
}

}  // namespace

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

JobManager::JobManager(DaemonOptions options, storage::Store* store, v1::HostInfo host,
                       std::unique_ptr<worker::WorkerLauncher> launcher)
    : options_(std::move(options)),
      store_(store),
      host_(std::move(host)),
      launcher_(launcher ? std::move(launcher)
                         : std::make_unique<worker::ProcessLauncher>(options_.worker_path,
                                                                     options_.worker_limits)),
      events_(store) {}

JobManager::~JobManager() { Shutdown(); }

namespace {

// A config's device as a lease: auto and cuda resolved.
std::string DeviceLease(const v1::RunConfig& c, const v1::HostInfo& host) {
  const std::string& d = c.device();
  if (d.empty() || d == "auto") {
    return host.gpus_size() > 0 ? "cuda:0" : host.mps_available() ? "mps" : "cpu";
  }
  return d == "cuda" ? "cuda:0" : d;
}

// A distributed point on device cuda (or auto on a GPU host): its ranks take
// any world_size of the host's GPUs, chosen when the job starts. On cuda:N
// (one rank) it takes that GPU, on the CPU the CPU.
bool TakesAnyGpus(const v1::RunConfig& c, const std::string& lease) {
  return IsDistributedWorkload(c.workload()) && absl::StartsWith(lease, "cuda:") &&
         !absl::StartsWith(c.device(), "cuda:");
}

}  // namespace

absl::StatusOr<JobManager::Needs> JobManager::LeasesOf(const v1::Job& job) const {
  auto configs = ExpandSweep(job.spec());
  if (!configs.ok()) return configs.status();
  return LeasesOf(job, *configs);
}

JobManager::Needs JobManager::LeasesOf(const v1::Job& job,
                                       const std::vector<v1::RunConfig>& configs) const {
  Needs needs;
  std::set<std::string>& leases = needs.leases;
  const bool exclusive =
      job.spec().has_exclusive() ? job.spec().exclusive() : !job.schedule_id().empty();
  if (exclusive) leases.insert(JobQueue::kWholeHost);
  for (const v1::RunConfig& c : configs) {
    std::string d = DeviceLease(c, host_);
    if (TakesAnyGpus(c, d)) {
      needs.any_gpus = std::max(needs.any_gpus, c.world_size());
      continue;
    }
    leases.insert(d);
    // A CPU figure measured beside a GPU job's host thread is a figure of both.
    if (d == "cpu") leases.insert(JobQueue::kWholeHost);
  }
  return needs;
}

absl::Status JobManager::ExpandEveryGpu(v1::JobSpec* spec) const {
  const bool in_base = spec->base().device() == kEveryGpu;
  const bool in_sweep = std::find(spec->sweep().device().begin(), spec->sweep().device().end(),
                                  kEveryGpu) != spec->sweep().device().end();
  if (!in_base && !in_sweep) return absl::OkStatus();
  if (host_.gpus_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        in_sweep ? "spec.sweep.device" : "spec.base.device", ": ", kEveryGpu,
        " runs on each GPU of the host, and this host has none"));
  }
  std::vector<std::string> devices;
  if (in_sweep) {
    for (const std::string& d : spec->sweep().device()) {
      if (d != kEveryGpu) devices.push_back(d);
    }
  }
  for (int i = 0; i < host_.gpus_size(); ++i) {
    const std::string gpu = GpuLease(i);
    if (std::find(devices.begin(), devices.end(), gpu) == devices.end()) devices.push_back(gpu);
  }
  spec->mutable_sweep()->clear_device();
  for (const std::string& d : devices) spec->mutable_sweep()->add_device(d);
  if (in_base) spec->mutable_base()->set_device(GpuLease(0));
  spec->set_parallel_devices(true);
  return absl::OkStatus();
}

std::vector<JobManager::Lane> JobManager::LanesOf(const v1::Job& job,
                                                  const std::vector<v1::RunConfig>& configs,
                                                  const std::set<std::string>& leases) const {
  // The job's GPUs, lowest first: a distributed group's ranks take them in
  // order.
  std::vector<std::string> gpus;
  for (int i = 0; i < 64; ++i) {
    if (leases.count(GpuLease(i))) gpus.push_back(GpuLease(i));
  }
  std::vector<Lane> lanes;
  std::map<std::string, size_t> by_key;
  for (int i = 0; i < static_cast<int>(configs.size()); ++i) {
    const v1::RunConfig& c = configs[i];
    const std::string device = DeviceLease(c, host_);
    std::string key;
    v1::RankAssignment rank;
    if (IsDistributedWorkload(c.workload())) {
      const int k = std::max(1, c.world_size());
      rank.set_world_size(k);
      for (int r = 0; r < k; ++r) {
        if (!TakesAnyGpus(c, device)) {
          rank.add_devices(device);  // the CPU, or world_size 1 on a named GPU
        } else {
          rank.add_devices(r < static_cast<int>(gpus.size()) ? gpus[r] : GpuLease(r));
        }
      }
      key = absl::StrCat("ranks ", absl::StrJoin(rank.devices(), ","));
    } else if (job.spec().parallel_devices()) {
      key = absl::StrCat("device ", device);
    }
    auto [it, added] = by_key.emplace(key, lanes.size());
    if (added) {
      Lane lane;
      lane.rank = rank;
      // Only GPUs run side by side: a CPU run beside them would measure both.
      lane.parallel = job.spec().parallel_devices() && rank.world_size() == 0 &&
                      absl::StartsWith(device, "cuda:");
      lanes.push_back(std::move(lane));
    }
    lanes[it->second].indices.push_back(i);
  }
  return lanes;
}

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
      if (auto s = Interrupt(&job); !s.ok()) return s;
    }
    if (job.state() != v1::JOB_STATE_QUEUED) continue;
    auto leases = LeasesOf(job);
    if (leases.ok() && leases->any_gpus > host_.gpus_size()) {
      leases = absl::FailedPreconditionError(
          absl::StrCat("it needs ", leases->any_gpus, " GPUs; this host has ",
                       host_.gpus_size(), " now"));
    }
    if (!leases.ok()) {
      // A spec this build (or this host) no longer accepts: fail it rather
      // than loop.
      SetState(&job, v1::JOB_STATE_FAILED, std::string(leases.status().message()))
          .IgnoreError();
      continue;
    }
    absl::MutexLock lock(&mu_);
    queue_.Push(job.job_id(), job.spec().priority(),
                TimeUtil::TimestampToNanoseconds(job.submit_time()), leases->leases,
                leases->any_gpus, job.submitted_by());
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
  if (absl::Status s = FlushUnsaved(); !s.ok()) {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, job] : unsaved_) {
      Log(LogLevel::kError, "job ", id, ": its state (",
          EnumShortName(v1::JobState_descriptor(), job.state()),
          ") is lost at shutdown, so the next start requeues it: ", s.message());
    }
  }
}

absl::Status JobManager::CheckModels(const std::vector<v1::RunConfig>& configs,
                                     v1::WorkerRequest* request) const {
  for (const v1::RunConfig& c : configs) {
    if (c.workload() != "torchscript") continue;
    const std::string& sha256 = c.params().model_sha256();
    if (sha256.empty()) {
      auto resolved = ResolveModelPath(c.params().model_path(), options_.model_roots,
                                       "spec.base.params.model_path");
      if (!resolved.ok()) return resolved.status();
      // A model root above the data directory or a key does not make them
      // models (a worker could not read them anyway): the same refusal.
      if (ResolvesWithin(*resolved, options_.worker_limits.protected_paths)) {
        return ResolveModelPath("", {}, "spec.base.params.model_path").status();
      }
      continue;
    }
    auto model = store_->models().Get(sha256);
    if (absl::IsNotFound(model.status())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.base.params.model_sha256: no model ", sha256,
          " on this daemon; upload it first (gpubench model upload)"));
    }
    if (!model.ok()) return model.status();
    if (model->format() == v1::MODEL_FORMAT_AOTI_PACKAGE &&
        model->uploader_role() != v1::ROLE_ADMIN && !options_.allow_uploaded_aoti) {
      return absl::PermissionDeniedError(absl::StrCat(
          "spec.base.params.model_sha256: ", sha256,
          " is an AOTInductor package (native code) uploaded without the admin role; "
          "an admin must upload it, or the operator must start gpubenchd with "
          "--allow-uploaded-aoti"));
    }
    if (request) (*request->mutable_model_formats())[sha256] = model->format();
  }
  return absl::OkStatus();
}

absl::StatusOr<JobManager::Plan> JobManager::PlanJob(const v1::JobSpec& submitted) const {
  Plan plan;
  plan.spec = submitted;
  const v1::JobSpec& spec = plan.spec;
  if (auto s = ExpandEveryGpu(&plan.spec); !s.ok()) return s;
  auto configs = ExpandSweep(spec);
  if (!configs.ok()) return configs.status();
  plan.runs = std::move(*configs);
  if (auto s = CheckModels(plan.runs, nullptr); !s.ok()) return s;
  if (spec.timeout_s() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.timeout_s: must be >= 0, got ", spec.timeout_s()));
  }
  v1::Job job;
  *job.mutable_spec() = spec;
  const Needs needs = LeasesOf(job, plan.runs);
  const char* ranks_field =
      spec.sweep().world_size_size() > 0 ? "spec.sweep.world_size" : "spec.base.world_size";
  if (needs.any_gpus > host_.gpus_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        ranks_field, ": ", needs.any_gpus, " ranks on cuda need as many GPUs; this host has ",
        host_.gpus_size()));
  }
  // Each rank is a worker with LibTorch loaded: on the CPU, no more of them
  // than the host has cores (and 16), each with a bounded message, or a
  // client could fill its memory.
  const int cpu_ranks = std::min<int>(kMaxCpuRanks, std::max(1u, std::thread::hardware_concurrency()));
  for (const v1::RunConfig& c : plan.runs) {
    if (!IsDistributedWorkload(c.workload())) continue;
    const std::string device = DeviceLease(c, host_);
    if (device == "mps") {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.base.device: ", c.workload(), " runs on cuda or cpu; this host's auto is mps"));
    }
    if (device != "cpu") continue;
    if (c.world_size() > cpu_ranks) {
      return absl::InvalidArgumentError(absl::StrCat(
          ranks_field, ": ", c.world_size(), " ranks on the CPU; this host takes at most ",
          cpu_ranks, " (one per core, 16 at most)"));
    }
    if (c.params().collective_bytes() * c.world_size() > kMaxCpuCollectiveBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.base.params.collective_bytes: ", c.params().collective_bytes(), " bytes on ",
          c.world_size(), " CPU ranks; at most ", kMaxCpuCollectiveBytes,
          " bytes over all ranks on the CPU"));
    }
  }
  return plan;
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
  const v1::JobSpec& spec = plan.spec;
  // States that could not be stored go first; while they cannot, the store
  // takes no new job either.
  if (auto s = FlushUnsaved(); !s.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the daemon's store cannot write, so no job is accepted: ", s.message()));
  }
  // After a run could not be stored, a new job waits until the store can
  // take a run's worth of data again (space freed, retention, a new disk).
  if (store_full_.load()) {
    if (auto s = store_->CanWrite(kRunProbeBytes); !s.ok()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the daemon's store cannot take a run, so no job is accepted: ", s.message()));
    }
    store_full_.store(false);
  }
  v1::Job job;
  *job.mutable_spec() = spec;
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_run_count(plan.runs.size());
  job.set_schedule_id(schedule_id);
  job.set_submitted_by(submitted_by);
  job.set_host_id(host_.host_id());
  *job.mutable_submit_time() = NowTimestamp();
  const Needs needs = LeasesOf(job, plan.runs);
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
  auto id = store_->jobs().Insert(job);
  if (absl::IsResourceExhausted(id.status())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the daemon's store is full, so no job is accepted: ", id.status().message()));
  }
  if (!id.ok()) return id.status();
  job.set_job_id(*id);
  // The first event records the submission.
  Emit(job.job_id(),
       [](v1::ProgressEvent* e) {
         e->mutable_state_changed()->set_state(v1::JOB_STATE_QUEUED);
       },
       /*durable=*/true, nullptr)
      .IgnoreError();
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
  absl::MutexLock lock(&mu_);
  Load load{static_cast<int>(queue_.size()), static_cast<int>(running_.size()), {}};
  for (const auto& [id, job] : unsaved_) ++load.unsaved[job.state()];
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
    SetState(&*job, v1::JOB_STATE_CANCELLED,
             was_queued ? "cancelled while queued" : "cancelled; no worker was running it")
        .IgnoreError();
    cv_.SignalAll();
  }
  return job;
}

absl::StatusOr<v1::Job> JobManager::GetJob(const std::string& job_id) {
  {
    absl::MutexLock lock(&mu_);
    if (auto it = unsaved_.find(job_id); it != unsaved_.end()) return it->second;
  }
  return store_->jobs().Get(job_id);
}

void JobManager::OverlayUnsaved(std::vector<v1::Job>* jobs) {
  absl::MutexLock lock(&mu_);
  for (v1::Job& job : *jobs) {
    if (auto it = unsaved_.find(job.job_id()); it != unsaved_.end()) job = it->second;
  }
}

void JobManager::RememberUnsavedLocked(const v1::Job& job, const absl::Status& why) {
  // The store cannot write: this daemon still knows the truth, serves it
  // (GetJob, ListJobs) and writes it when the store takes writes again.
  Log(LogLevel::kError, "job ", job.job_id(), ": storing it (",
      EnumShortName(v1::JobState_descriptor(), job.state()), ") failed: ", why.message());
  unsaved_[job.job_id()] = job;
}

absl::Status JobManager::FlushUnsaved() {
  std::map<std::string, v1::Job> pending;
  {
    absl::MutexLock lock(&mu_);
    pending = unsaved_;
  }
  for (const auto& [id, job] : pending) {
    if (auto s = store_->jobs().Update(job); !s.ok()) return s;
    absl::MutexLock lock(&mu_);
    auto it = unsaved_.find(id);
    // Unless it changed again meanwhile.
    if (it != unsaved_.end() && it->second.SerializeAsString() == job.SerializeAsString()) {
      unsaved_.erase(it);
    }
  }
  return absl::OkStatus();
}

void JobManager::DispatchLoop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    std::optional<JobQueue::Started> next = queue_.TakeStartable();
    if (!next) {
      cv_.Wait(&mu_);
      continue;
    }
    auto start = std::make_shared<Running>();
    start->job.set_job_id(next->job_id);
    start->leases = std::move(next->leases);
    for (auto& [id, others] : beside_) others.insert(start->job.job_id());
    running_[start->job.job_id()] = start;
    ++job_threads_;
    std::thread([this, start] { RunJob(start); }).detach();
  }
}

bool JobManager::Ends(const v1::Job& job) const {
  // An interrupted job that will be requeued has not ended.
  return IsTerminal(job.state()) && !(job.state() == v1::JOB_STATE_INTERRUPTED &&
                                      job.attempt() <= options_.max_requeues);
}

absl::Status JobManager::Interrupt(v1::Job* job) {
  const std::string why =
      job->state() == v1::JOB_STATE_RUNNING && job->start_time().seconds() > 0
          ? "the daemon stopped while the job was running"
          : "interrupted";
  if (auto s = SetState(job, v1::JOB_STATE_INTERRUPTED, why); !s.ok()) return s;
  if (job->attempt() > options_.max_requeues) return absl::OkStatus();
  return SetState(job, v1::JOB_STATE_QUEUED, "");
}

void JobManager::RunJob(std::shared_ptr<Running> running) {
  JobStart start;
  if (StartJob(running.get(), &start)) {
    const Passes passes = RunLanes(running, &start);
    EndJob(running.get(), passes);
  }
  {
    absl::MutexLock lock(&running->mu);
    running->finished = true;
    running->processes.clear();
  }
  running->cv.SignalAll();
  absl::MutexLock lock(&mu_);
  queue_.Release(running->leases);
  running_.erase(running->job.job_id());
  beside_.erase(running->job.job_id());
  --job_threads_;  // the last touch of *this by this thread
  cv_.SignalAll();
}

bool JobManager::StartJob(Running* running, JobStart* start) {
  const std::string job_id = running->job.job_id();
  auto loaded = GetJob(job_id);
  if (!loaded.ok()) {
    return false;
  }
  v1::Job& job = running->job;
  job = *loaded;
  if (IsTerminal(job.state())) {  // cancelled between dispatch and here
    return false;
  }
  job.set_attempt(job.attempt() + 1);
  job.set_host_id(host_.host_id());
  *job.mutable_start_time() = NowTimestamp();
  job.clear_error();
  if (auto s = SetState(&job, v1::JOB_STATE_RUNNING, ""); !s.ok()) {
    // A store that cannot take the job's state cannot take its runs either.
    if (absl::IsResourceExhausted(s)) store_full_.store(true);
    SetState(&job, v1::JOB_STATE_FAILED,
             absl::StrCat("the store cannot record the job, so it did not run: ", s.message()))
        .IgnoreError();
    return false;
  }

  v1::WorkerRequest& request = start->request;
  request.set_job_id(job_id);
  *request.mutable_spec() = job.spec();
  request.set_model_dir(options_.model_dir);
  for (const std::string& root : options_.model_roots) request.add_model_roots(root);
  *request.mutable_aot() = options_.aot;
  // Checked again at start: an operator may have narrowed the roots since.
  auto configs = ExpandSweep(job.spec());
  absl::Status models = configs.ok() ? CheckModels(*configs, &request) : configs.status();
  if (configs.ok()) start->configs = std::move(*configs);
  if (!models.ok()) {
    SetState(&job, v1::JOB_STATE_FAILED, std::string(models.message())).IgnoreError();
    return false;
  }
  if (job.attempt() > 1) {
    // A resumed job: the runs the stop cancelled are run again, so only the
    // ones that finished are kept and skipped.
    if (auto gone = store_->runs().DeleteCancelled(job_id); !gone.ok()) {
      SetState(&job, v1::JOB_STATE_FAILED,
               absl::StrCat("cannot resume: ", gone.status().message()))
          .IgnoreError();
      return false;
    }
  }
  auto done_runs = store_->runs().List(job_id, false);
  if (!done_runs.ok()) {
    SetState(&job, v1::JOB_STATE_FAILED,
             absl::StrCat("cannot read the job's stored runs: ", done_runs.status().message()))
        .IgnoreError();
    return false;
  }
  for (const v1::Run& r : *done_runs) {
    start->stored.insert(r.index());
    if (r.state() == v1::RUN_STATE_OUT_OF_MEMORY) {
      start->request.add_out_of_memory_indices(r.index());
    }
  }
  job.set_runs_done(start->stored.size());
  // Only a measured run makes a job a success: runs out of memory or
  // skipped after one measured nothing.
  start->any_ok = std::any_of(done_runs->begin(), done_runs->end(), [](const v1::Run& r) {
    return r.state() == v1::RUN_STATE_SUCCEEDED;
  });
  return true;
}


JobManager::Passes JobManager::RunLanes(const std::shared_ptr<Running>& running,
                                       JobStart* start) {
  const std::vector<Lane> lanes = LanesOf(running->job, start->configs, running->leases);
  Passes r;
  r.done = true;
  r.any_ok = start->any_ok;
  auto merge = [&r](const Passes& p) {
    r.done = r.done && p.done;
    r.cancelled_by_worker = r.cancelled_by_worker || p.cancelled_by_worker;
    if (r.stream.ok()) r.stream = p.stream;
    if (r.store_error.ok()) r.store_error = p.store_error;
    if (!p.exit.ok() || r.exit.exit_code < 0) r.exit = p.exit;
    if (p.crashes > 0) r.crash = p.crash;
    r.crashes += p.crashes;
    r.any_ok = r.any_ok || p.any_ok;
  };
  std::thread watchdog([this, running] { Watchdog(running); });
  // Parallel lanes (one per GPU) side by side, then the others in turn.
  std::vector<Passes> parallel(lanes.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (!lanes[i].parallel) continue;
    threads.emplace_back(
        [this, &running, &start, &lanes, &parallel, i] {
          parallel[i] = RunPasses(running, *start, lanes[i]);
        });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (lanes[i].parallel) merge(parallel[i]);
  }
  for (const Lane& lane : lanes) {
    if (lane.parallel) continue;
    bool stopped;
    {
      absl::MutexLock lock(&running->mu);
      stopped = running->cancel || running->shutdown || running->timed_out;
    }
    if (stopped || !r.store_error.ok() || !r.stream.ok()) {
      r.done = false;
      break;
    }
    merge(RunPasses(running, *start, lane));
  }
  {
    absl::MutexLock lock(&running->mu);
    running->finished = true;  // ends the watchdog
    running->processes.clear();
  }
  running->cv.SignalAll();
  watchdog.join();
  return r;
}

JobManager::Passes JobManager::RunPasses(const std::shared_ptr<Running>& running,
                                        const JobStart& start, const Lane& lane) {
  // One worker (or one group of ranks) per pass. A worker that dies inside
  // a run costs that run only: it is stored as failed, and the rest of the
  // lane goes on in a fresh worker. Every pass stores at least one run or
  // ends the lane.
  const std::string& job_id = running->job.job_id();
  v1::Job& job = running->job;
  v1::WorkerRequest request = start.request;
  if (lane.rank.world_size() > 0) *request.mutable_rank() = lane.rank;
  const std::vector<v1::RunConfig>* configs = &start.configs;
  const std::set<int> mine(lane.indices.begin(), lane.indices.end());
  // What the workers skip: the other lanes' points and the stored ones.
  std::set<int> stored = start.stored;
  for (int i = 0; i < static_cast<int>(configs->size()); ++i) {
    if (!mine.count(i)) stored.insert(i);
  }
  auto all_stored = [&] {
    return std::all_of(lane.indices.begin(), lane.indices.end(),
                       [&](int i) { return stored.count(i) > 0; });
  };
  Passes r;
  bool& done = r.done;
  bool& cancelled_by_worker = r.cancelled_by_worker;
  absl::Status& stream = r.stream;
  absl::Status& store_error = r.store_error;
  worker::ExitInfo& exit = r.exit;
  worker::ExitInfo& crash = r.crash;
  int& crashes = r.crashes;
  bool& any_ok = r.any_ok;
  bool stopped = false;
  auto store = [&](v1::Run* run, const std::string& trace) {
    absl::MutexLock lock(&running->store_mu);
    return StoreRun(&job, run, trace);
  };
  for (int pass = 0; !done && !stopped; ++pass) {
    if (all_stored()) {
      // Nothing is left for a worker (every point stored, or crashed).
      done = true;
      exit = worker::ExitInfo{0, 0, ""};
      break;
    }
    request.clear_skip_indices();
    for (int index : stored) request.add_skip_indices(index);
    absl::StatusOr<std::unique_ptr<worker::Worker>> process;
    {
      absl::MutexLock lock(&running->group_mu);
      request.set_process_group(running->group_workers > 0 ? running->process_group : 0);
      process = lane.rank.world_size() > 0 ? StartRankGroup(launcher_.get(), request)
                                           : launcher_->Start(request);
      if (process.ok() && running->group_workers++ == 0) {
        running->process_group = (*process)->ProcessGroup();
      }
    }
    if (!process.ok()) {
      stream = absl::UnavailableError(
          absl::StrCat("cannot start the worker: ", process.status().message()));
      break;
    }
    Log(LogLevel::kDebug, "job ", job_id, ": worker started (pass ", pass + 1, ", ",
        stored.size() - (configs->size() - lane.indices.size()), " run(s) already stored",
        lane.rank.world_size() > 0 ? absl::StrCat(", ", lane.rank.world_size(), " ranks") : "",
        ")");
    {
      absl::MutexLock lock(&running->mu);
      // A stop that came while no worker ran must not be missed.
      stopped = running->cancel || running->shutdown || running->timed_out;
      running->processes.insert(process->get());
    }
    if (stopped) (*process)->Stop();
    int current = -1;  // the run the worker is in, if any
    int stored_now = 0;
    v1::RunConfig current_config;
    while (true) {
      v1::WorkerEvent event;
      auto got = (*process)->Next(&event);
      if (!got.ok()) {
        stream = got.status();
        (*process)->Kill();
        break;
      }
      if (!*got) break;
      if (event.has_run_started()) {
        current = event.run_started().index();
        current_config = event.run_started().config();
        {
          absl::MutexLock lock(&mu_);
          std::set<std::string>& others = beside_[job_id];
          others.clear();
          for (const auto& entry : running_) {
            if (entry.first != job_id) others.insert(entry.first);
          }
        }
        Emit(job_id, [&](v1::ProgressEvent* e) {
          *e->mutable_run_started() = event.run_started();
        }, true, nullptr).IgnoreError();
      } else if (event.has_run_progress()) {
        Emit(job_id, [&](v1::ProgressEvent* e) {
          *e->mutable_run_progress() = event.run_progress();
        }, false, nullptr).IgnoreError();
      } else if (event.has_log()) {
        Emit(job_id, [&](v1::ProgressEvent* e) {
          e->mutable_log()->set_text(Bounded(event.log().text(), kMaxMessageBytes));
        }, false, nullptr).IgnoreError();
      } else if (event.has_run_finished()) {
        v1::Run run = event.run_finished().run();
        // The error is the model's to choose (an assert's message): the
        // store, every reply and the HTML view keep a bounded one.
        run.set_error(Bounded(run.error(), kMaxMessageBytes));
        current = -1;
        FillContention(job_id, &run);
        const std::string& trace = event.run_finished().trace_json();
        const bool trace_fits = trace.size() <= kMaxTraceBytes;
        if (!trace_fits) {
          Emit(job_id, [&](v1::ProgressEvent* e) {
            e->mutable_log()->set_text(absl::StrCat(
                "run ", run.index(), ": its profiler trace of ", trace.size(),
                " bytes is over the ", kMaxTraceBytes >> 20, " MiB a run may keep; not stored"));
          }, true, nullptr).IgnoreError();
        }
        store_error = store(&run, trace_fits ? trace : std::string());
        if (!store_error.ok()) {
          if (absl::IsResourceExhausted(store_error)) store_full_.store(true);
          // Nothing more can be kept: stop rather than measure for nothing.
          (*process)->Kill();
          break;
        }
        stored.insert(run.index());
        ++stored_now;
        if (run.state() == v1::RUN_STATE_OUT_OF_MEMORY) {
          request.add_out_of_memory_indices(run.index());
        }
        any_ok |= run.state() == v1::RUN_STATE_SUCCEEDED;
      } else if (event.has_done()) {
        done = true;
        cancelled_by_worker = event.done().cancelled();
      }
    }
    exit = (*process)->Wait();
    {
      absl::MutexLock lock(&running->group_mu);
      if (--running->group_workers == 0) running->process_group = 0;
    }
    std::string limit_hit;
    bool out_of_memory = false;
    {
      absl::MutexLock lock(&running->mu);
      running->processes.erase(process->get());
      stopped = running->cancel || running->shutdown || running->timed_out;
      if (auto hit = running->limit_hits.find(process->get()); hit != running->limit_hits.end()) {
        limit_hit = std::move(hit->second.first);
        out_of_memory = hit->second.second;
        running->limit_hits.erase(hit);
      }
    }
    if (done || stopped || !store_error.ok() || !stream.ok() || exit.ok()) break;
    if (current < 0 && !limit_hit.empty()) {
      // Killed for a limit before its first event: it was starting the
      // next run to do.
      for (int i = 0; i < static_cast<int>(configs->size()); ++i) {
        if (!stored.count(i)) {
          current = i;
          current_config = (*configs)[i];
          break;
        }
      }
    }
    if (current < 0 || stored.count(current)) {
      // Died between runs. A group whose rank failed its run (stored) and
      // stopped goes on with the rest in fresh workers; otherwise there is
      // no culprit to blame.
      if (lane.rank.world_size() > 0 && stored_now > 0) {
        crash = exit;
        ++crashes;
        continue;
      }
      break;
    }
    v1::Run crashed;
    crashed.set_job_id(job_id);
    crashed.set_index(current);
    *crashed.mutable_config() = current_config;
    // Killed at the memory limit, the run ran out of (host) memory: the
    // larger batch sizes of its config are skipped, as after the engine's
    // own out-of-memory error. CPU runs reach this: Linux overcommits.
    crashed.set_state(out_of_memory ? v1::RUN_STATE_OUT_OF_MEMORY : v1::RUN_STATE_FAILED);
    crashed.set_error(absl::StrCat(limit_hit.empty() ? "the worker died in this run ("
                                                     : "the daemon killed the worker in this run: " +
                                                           limit_hit + " (",
                                   exit.Describe(),
                                   "); the rest of the sweep went on in a fresh worker. "
                                   "Its stderr ended: ",
                                   exit.stderr_tail.substr(
                                       exit.stderr_tail.size() > 2000
                                           ? exit.stderr_tail.size() - 2000
                                           : 0)));
    *crashed.mutable_start_time() = NowTimestamp();
    *crashed.mutable_end_time() = crashed.start_time();
    store_error = store(&crashed, "");
    if (!store_error.ok()) break;
    stored.insert(current);
    if (out_of_memory) request.add_out_of_memory_indices(current);
    crash = exit;
    ++crashes;
  }
  return r;
}

void JobManager::EndJob(Running* running, const Passes& passes) {
  const std::string& job_id = running->job.job_id();
  v1::Job& job = running->job;
  const bool done = passes.done, any_ok = passes.any_ok;
  const absl::Status& stream = passes.stream;
  const absl::Status& store_error = passes.store_error;
  const worker::ExitInfo& exit = passes.exit;
  const worker::ExitInfo& crash = passes.crash;
  const int crashes = passes.crashes;
  bool cancel, shutdown, timed_out;
  {
    absl::MutexLock lock(&running->mu);
    cancel = running->cancel;
    shutdown = running->shutdown;
    timed_out = running->timed_out;
  }

  *job.mutable_end_time() = NowTimestamp();
  const worker::ExitInfo& shown = exit.ok() && crashes > 0 ? crash : exit;
  job.set_worker_exit(shown.Describe());
  if (!shown.ok()) job.set_worker_stderr_tail(shown.stderr_tail);
  if (!store_error.ok()) {
    SetState(&job, v1::JOB_STATE_FAILED,
             absl::StrCat("a run could not be stored, so the job stopped: ",
                          store_error.message(), "; runs stored before it are kept"))
        .IgnoreError();
  } else if (timed_out) {
    const int64_t limit = job.spec().timeout_s() > 0
                              ? std::min(job.spec().timeout_s(), options_.max_job_seconds)
                              : options_.max_job_seconds;
    SetState(&job, v1::JOB_STATE_FAILED,
             absl::StrCat("timed out after ", limit, " s; completed runs are kept"))
        .IgnoreError();
  } else if (cancel) {
    SetState(&job, v1::JOB_STATE_CANCELLED, "cancelled; completed runs are kept")
        .IgnoreError();
  } else if (shutdown) {
    Interrupt(&job).IgnoreError();
  } else if (!done || !exit.ok() || !stream.ok()) {
    SetState(&job, v1::JOB_STATE_FAILED,
             stream.ok() ? absl::StrCat("worker ended early: ", exit.Describe())
                         : absl::StrCat("worker stream broken: ", stream.message()))
        .IgnoreError();
  } else if (passes.cancelled_by_worker) {
    SetState(&job, v1::JOB_STATE_CANCELLED, "the worker was stopped").IgnoreError();
  } else {
    const std::string crashed =
        crashes == 0 ? ""
                     : absl::StrCat("; the worker died in ", crashes, " run(s), last with ",
                                    crash.Describe());
    SetState(&job, any_ok ? v1::JOB_STATE_SUCCEEDED : v1::JOB_STATE_FAILED,
             any_ok ? ""
                    : absl::StrCat("no run was measured: each failed, ran out of memory or "
                                   "was skipped after one that did",
                                   crashed))
        .IgnoreError();
  }
  if (auto pruned = store_->runs().Prune(options_.retention); !pruned.ok()) {
    Emit(job_id, [&](v1::ProgressEvent* e) {
      e->mutable_log()->set_text(absl::StrCat("retention: ", pruned.status().message()));
    }, false, nullptr).IgnoreError();
  }
  if (job.state() == v1::JOB_STATE_QUEUED) {  // requeued after a shutdown
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      queue_.Push(job_id, job.spec().priority(),
                  TimeUtil::TimestampToNanoseconds(job.submit_time()), running->leases, 0,
                  job.submitted_by());
    }
  }
}

void JobManager::FillContention(const std::string& job_id, v1::Run* run) {
  v1::Contention* c = run->mutable_result()->mutable_contention();
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& id : beside_[job_id]) c->add_jobs_beside(id);
  }
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) c->set_load_average_1m(load[0]);
  c->set_cpu_count(std::max(1u, std::thread::hardware_concurrency()));
  c->set_contended(IsContended(*c));
}

absl::Status JobManager::StoreRun(v1::Job* job, v1::Run* run, const std::string& trace) {
  run->set_job_id(job->job_id());
  run->set_host_id(host_.host_id());
  if (!trace.empty()) {
    v1::ProfileSummary* p = run->mutable_result()->mutable_profile();
    p->set_has_trace(true);
    p->set_trace_size_bytes(trace.size());
    p->set_trace_sha256(Sha256Hex(trace));
  }
  if (!job->schedule_id().empty() && run_hook_) run_hook_(*job, run);
  absl::Status stored = Emit(job->job_id(), [&](v1::ProgressEvent* e) {
    *e->mutable_run_finished()->mutable_run() = *run;
  }, true, run, trace);
  if (!stored.ok()) return stored;
  CountFinishedRun(*run, job);
  if (auto s = store_->jobs().Update(*job); !s.ok()) {
    absl::MutexLock lock(&mu_);
    RememberUnsavedLocked(*job, s);
  }
  return absl::OkStatus();
}

void JobManager::Watchdog(std::shared_ptr<Running> running) {
  using Clock = std::chrono::steady_clock;
  const int64_t limit_s =
      running->job.spec().timeout_s() > 0
          ? std::min(running->job.spec().timeout_s(), options_.max_job_seconds)
          : options_.max_job_seconds;
  const auto deadline = Clock::now() + std::chrono::seconds(limit_s);
  // The memory limit is a poll of the worker's RSS: an rlimit would break
  // CUDA (worker/process.h). The scratch folder's is a poll too.
  const bool watch = options_.worker_max_rss_bytes > 0 || options_.worker_max_scratch_bytes > 0;
  const auto poll = std::chrono::milliseconds(watch ? 200 : 0);
  absl::MutexLock lock(&running->mu);
  bool stop = false;
  while (!stop) {
    const auto wake = poll.count() > 0 ? std::min(deadline, Clock::now() + poll) : deadline;
    // Until a stop, the next poll or the deadline.
    while (!(stop = running->finished || running->cancel || running->shutdown) &&
           Clock::now() < wake) {
      running->cv.WaitWithTimeout(&running->mu, absl::FromChrono(wake - Clock::now()));
    }
    if (running->finished) return;
    if (stop) break;
    if (Clock::now() >= deadline) {
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
  const auto kill_at = Clock::now() + std::chrono::milliseconds(options_.stop_grace_ms);
  while (!running->finished && Clock::now() < kill_at) {
    running->cv.WaitWithTimeout(&running->mu, absl::FromChrono(kill_at - Clock::now()));
  }
  if (!running->finished) {
    for (worker::Worker* process : running->processes) process->Kill();
  }
}

absl::Status JobManager::Emit(const std::string& job_id,
                              const std::function<void(v1::ProgressEvent*)>& fill,
                              bool durable, const v1::Run* run_to_store,
                              const std::string& trace_json) {
  std::function<absl::Status(v1::ProgressEvent*)> persist;
  if (run_to_store != nullptr) {
    persist = [&](v1::ProgressEvent* e) -> absl::Status {
      auto id = store_->runs().Insert(*run_to_store, *e, trace_json);
      if (id.ok()) {
        Log(LogLevel::kDebug, "job ", job_id, ": run ", run_to_store->index(), " stored as ", *id,
            " (", EnumShortName(v1::RunState_descriptor(), run_to_store->state()), ", ",
            run_to_store->result().throughput_samples_per_s(), " samples/s)");
        if (e->has_run_finished()) e->mutable_run_finished()->mutable_run()->set_run_id(*id);
        return absl::OkStatus();
      }
      // The run is lost to the store; say so where watchers and the log see
      // it, and let the caller fail the job.
      Log(LogLevel::kError, "job ", job_id, ": storing a run failed: ", id.status().message());
      e->clear_run_finished();
      e->mutable_log()->set_text(absl::StrCat("storing run ", run_to_store->index(),
                                              " failed: ", id.status().message()));
      return id.status();
    };
  } else if (durable) {
    persist = [&](v1::ProgressEvent* e) {
      store_->jobs().AppendEvent(*e).IgnoreError();
      return absl::OkStatus();
    };
  }
  return events_.Append(job_id, fill, persist);
}

absl::Status JobManager::SetState(v1::Job* job, v1::JobState state,
                                  const std::string& error) {
  job->set_state(state);
  job->set_error(error);
  Log(state == v1::JOB_STATE_FAILED ? LogLevel::kWarning : LogLevel::kInfo, "job ",
      job->job_id(), " ", EnumShortName(v1::JobState_descriptor(), state),
      error.empty() ? "" : ": ", error);
  if (IsTerminal(state) && job->end_time().seconds() == 0) {
    *job->mutable_end_time() = NowTimestamp();
  }
  return events_.Append(
      job->job_id(),
      [&](v1::ProgressEvent* e) {
        e->mutable_state_changed()->set_state(state);
        e->mutable_state_changed()->set_error(error);
      },
      [&](v1::ProgressEvent* e) {
        const absl::Status stored = store_->jobs().Update(*job, *e);
        absl::MutexLock lock(&mu_);
        if (stored.ok()) {
          unsaved_.erase(job->job_id());
        } else {
          RememberUnsavedLocked(*job, stored);
        }
        return stored;
      },
      Ends(*job) ? EventLog::End::kEnded : EventLog::End::kNotEnded);
}

absl::Status JobManager::EventsAfter(const std::string& job_id, int64_t after_sequence,
                                     std::vector<v1::ProgressEvent>* events, bool* ended) {
  return events_.EventsAfter(
      job_id, after_sequence,
      [&]() -> absl::StatusOr<bool> {
        auto job = GetJob(job_id);
        if (!job.ok()) return job.status();
        return Ends(*job);
      },
      events, ended);
}

}  // namespace gpubench::server
