#include "server/service.h"

#include <algorithm>
#include <deque>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/filter.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/spec.h"
#include "common/workload_registry.h"
#include "google/protobuf/util/time_util.h"
#include "report/format.h"
#include "server/model_upload.h"
#include "server/status_util.h"

namespace gpubench::server {
namespace {

grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* context,
                                const absl::Status& status) {
  auto* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// A stream reactor that only reports an error.
template <typename Base>
class FailedStream : public Base {
 public:
  explicit FailedStream(grpc::Status s) { this->Finish(std::move(s)); }
  void OnDone() override { delete this; }
};

// An id the daemon made (a job's, a run's, a schedule's): required, and
// short, so that a caller's 100 KB "id" is refused here rather than echoed
// into a NOT_FOUND whose metadata passes gRPC's limit.
absl::Status RequiredId(const std::string& value, const char* field) {
  constexpr size_t kMaxIdBytes = 128;
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": required"));
  if (value.size() > kMaxIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", value.size(), " bytes; an id has at most ", kMaxIdBytes));
  }
  return absl::OkStatus();
}

// A caller below admin acts on its own jobs only: PermissionDenied naming
// the job and what `doing` it needs. NotFound for an unknown id.
absl::Status OwnJobOrAdmin(JobManager* jobs, const Caller& caller, const std::string& job_id,
                           const char* doing) {
  if (caller.role >= v1::ROLE_ADMIN) return absl::OkStatus();
  auto job = jobs->GetJob(job_id);
  if (!job.ok()) return job.status();
  if (job->submitted_by() == caller.name) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "job ", job_id, " was submitted by someone else; ", doing, " it needs the admin role"));
}

// A caller below admin whose stored jobs hold its share of the store
// submits no more until it deletes some; ResourceExhausted saying so.
absl::Status WithinStoreShare(storage::Store* store, const ServiceOptions& options,
                              const Caller& caller) {
  if (caller.role >= v1::ROLE_ADMIN || options.max_submitter_db_bytes <= 0) {
    return absl::OkStatus();
  }
  auto used = store->jobs().SubmitterBytes(caller.name);
  if (!used.ok()) return used.status();
  if (*used < options.max_submitter_db_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      caller.name, "'s stored jobs hold ", report::Bytes(*used), " (", *used,
      " bytes), at or over its share of this daemon's store (",
      report::Bytes(options.max_submitter_db_bytes), ": gpubenchd --max-db-share ",
      options.max_db_share, " of --max-db-bytes), so it may submit no more jobs until it "
      "frees some: `gpubench rm JOB` deletes one of its ended jobs with its runs"));
}

int64_t Ns(const google::protobuf::Timestamp& t) {
  return google::protobuf::util::TimeUtil::TimestampToNanoseconds(t);
}

// Streams a job's events from a sequence until the job ends. Wakes on the
// job manager's notifications; never blocks a gRPC thread.
class WatchReactor : public grpc::ServerWriteReactor<v1::WatchJobResponse> {
 public:
  WatchReactor(JobManager* jobs, std::string job_id, int64_t after)
      : jobs_(jobs), job_id_(std::move(job_id)), last_(after) {
    token_ = jobs_->Subscribe(job_id_, [this] { Pump(); });
    Pump();
  }

  void OnWriteDone(bool ok) override {
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) {
        FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "watcher went away"));
        return;
      }
    }
    Pump();
  }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    if (!writing_) FinishLocked(grpc::Status::CANCELLED);
    cancelled_ = true;
  }

  void OnDone() override {
    jobs_->Unsubscribe(token_);
    delete this;
  }

 private:
  void Pump() {
    absl::MutexLock lock(&mu_);
    if (writing_ || finished_) return;
    if (cancelled_) {
      FinishLocked(grpc::Status::CANCELLED);
      return;
    }
    if (pending_.empty()) {
      std::vector<v1::ProgressEvent> events;
      absl::Status s = jobs_->EventsAfter(job_id_, last_, &events, &ended_);
      if (!s.ok()) {
        FinishLocked(ToGrpcStatus(s));
        return;
      }
      pending_.assign(events.begin(), events.end());
    }
    if (!pending_.empty()) {
      *response_.mutable_event() = std::move(pending_.front());
      pending_.pop_front();
      last_ = response_.event().sequence();
      writing_ = true;
      StartWrite(&response_);
    } else if (ended_) {
      FinishLocked(grpc::Status::OK);
    }
  }

  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  JobManager* const jobs_;
  const std::string job_id_;
  int64_t token_ = 0;
  absl::Mutex mu_;
  int64_t last_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::ProgressEvent> pending_ ABSL_GUARDED_BY(mu_);
  v1::WatchJobResponse response_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

// Sends a run's trace: its info, then the uncompressed data in 1 MiB chunks.
class TraceReactor : public grpc::ServerWriteReactor<v1::GetTraceResponse> {
 public:
  static constexpr size_t kChunkBytes = 1 << 20;

  TraceReactor(storage::Store* store, const v1::GetTraceRequest& request) {
    absl::Status valid = RequiredId(request.run_id(), "run_id");
    if (valid.ok() && request.rank() < 0) {
      valid = absl::InvalidArgumentError(
          absl::StrCat("rank: ", request.rank(), " is not a rank (0 or more)"));
    }
    auto trace = !valid.ok() ? absl::StatusOr<std::pair<v1::TraceInfo, std::string>>(valid)
                             : store->runs().GetTrace(request.run_id(), request.rank());
    if (!trace.ok()) {
      Finish(ToGrpcStatus(trace.status()));
      return;
    }
    data_ = std::move(trace->second);
    *response_.mutable_info() = trace->first;
    StartWrite(&response_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "reader went away"));
      return;
    }
    if (offset_ >= data_.size()) {
      Finish(grpc::Status::OK);
      return;
    }
    response_.set_chunk(data_.substr(offset_, kChunkBytes));
    offset_ += kChunkBytes;
    StartWrite(&response_);
  }

  void OnDone() override { delete this; }

 private:
  std::string data_;
  size_t offset_ = 0;
  v1::GetTraceResponse response_;
};

}  // namespace

grpc::ServerReadReactor<v1::UploadModelRequest>* BenchServiceImpl::UploadModel(
    grpc::CallbackServerContext* context, v1::UploadModelResponse* response) {
  return NewModelUpload(store_, options_, auth_->CallerOf(*context),
                        auth_->needs_credentials(), &uploads_, &idle_uploads_, response);
}

grpc::ServerWriteReactor<v1::GetTraceResponse>* BenchServiceImpl::GetTrace(
    grpc::CallbackServerContext* /*context*/, const v1::GetTraceRequest* request) {
  return new TraceReactor(store_, *request);
}

grpc::ServerUnaryReactor* BenchServiceImpl::SubmitJob(
    grpc::CallbackServerContext* context, const v1::SubmitJobRequest* request,
    v1::SubmitJobResponse* response) {
  const Caller caller = auth_->CallerOf(*context);
  // One plan: what a dry run shows is what the job runs (cuda:all's lanes
  // too), and a dry run is refused where the submit would be.
  auto plan = jobs_->PlanJob(request->spec());
  if (!plan.ok()) return Reply(context, plan.status());
  const std::vector<v1::RunConfig>* runs = &plan->runs;
  if (request->spec().priority() > options_.max_priority_without_admin &&
      caller.role < v1::ROLE_ADMIN) {
    return Reply(context, absl::PermissionDeniedError(absl::StrCat(
                              "spec.priority: above ", options_.max_priority_without_admin,
                              " needs the admin role")));
  }
  for (const v1::RunConfig& run : *runs) {
    if (options_.user_models_need_admin && caller.role < v1::ROLE_ADMIN &&
        IsWorkload(run.workload(), WorkloadId::kTorchscript)) {
      return Reply(context, absl::PermissionDeniedError(
                                "spec.base.workload: torchscript runs a user model, and this "
                                "host's workers run unconfined (gpubench hosts says why): it "
                                "needs the admin role, or gpubenchd "
                                "--allow-unconfined-user-models"));
    }
  }
  // Before the plan moves into the job.
  for (const v1::RunConfig& r : *runs) *response->add_runs() = r;
  for (const std::string& note : plan->notes) response->add_notes(note);
  if (request->dry_run()) {
    *response->mutable_job()->mutable_spec() = plan->spec;
    response->mutable_job()->set_run_count(runs->size());
  } else {
    // Not for a dry run, which stores nothing (as the queue's share).
    if (auto s = WithinStoreShare(store_, options_, caller); !s.ok()) return Reply(context, s);
    auto job = jobs_->Submit(std::move(*plan), "", caller.name);
    if (!job.ok()) return Reply(context, job.status());
    *response->mutable_job() = std::move(*job);
  }
  return Reply(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* BenchServiceImpl::RunProbe(grpc::CallbackServerContext* context,
                                                     const v1::RunProbeRequest* request,
                                                     v1::RunProbeResponse* response) {
  // The daemon builds the suite from its own host info: the request says
  // only its size, so no caller's spec is ever marked a probe.
  const Caller caller = auth_->CallerOf(*context);
  auto jobs = jobs_->SubmitProbeSuite(*request, caller.name);
  if (!jobs.ok()) return Reply(context, jobs.status());
  for (v1::Job& job : *jobs) *response->add_jobs() = std::move(job);
  return Reply(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* BenchServiceImpl::RunHostPair(grpc::CallbackServerContext* context,
                                                        const v1::RunHostPairRequest* request,
                                                        v1::RunHostPairResponse* response) {
  const Caller caller = auth_->CallerOf(*context);
  auto pair = jobs_->SubmitHostPair(*request, caller.name);
  if (!pair.ok()) return Reply(context, pair.status());
  *response = std::move(*pair);
  return Reply(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* BenchServiceImpl::GetJob(grpc::CallbackServerContext* context,
                                                   const v1::GetJobRequest* request,
                                                   v1::GetJobResponse* response) {
  if (auto s = RequiredId(request->job_id(), "job_id"); !s.ok()) return Reply(context, s);
  auto job = jobs_->GetJob(request->job_id());
  if (!job.ok()) return Reply(context, job.status());
  *response->mutable_job() = std::move(*job);
  return Reply(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* BenchServiceImpl::ListJobs(grpc::CallbackServerContext* context,
                                                     const v1::ListJobsRequest* request,
                                                     v1::ListJobsResponse* response) {
  storage::JobFilter filter;
  for (int s : request->states()) filter.states.push_back(static_cast<v1::JobState>(s));
  filter.workload = request->workload();
  filter.schedule_id = request->schedule_id();
  filter.submitted_after_ns = Ns(request->submitted_after());
  filter.submitted_before_ns = Ns(request->submitted_before());
  auto page = store_->jobs().List(filter, request->page_size(), request->page_token());
  if (!page.ok()) return Reply(context, page.status());
  jobs_->OverlayUnsaved(&page->items);
  for (auto& j : page->items) *response->add_jobs() = std::move(j);
  response->set_next_page_token(page->next_page_token);
  return Reply(context, absl::OkStatus());
}

grpc::ServerWriteReactor<v1::WatchJobResponse>* BenchServiceImpl::WatchJob(
    grpc::CallbackServerContext* /*context*/, const v1::WatchJobRequest* request) {
  const absl::Status id = RequiredId(request->job_id(), "job_id");
  if (!id.ok() || request->after_sequence() < 0 || !jobs_->GetJob(request->job_id()).ok()) {
    grpc::Status status =
        !id.ok() ? ToGrpcStatus(id)
        : request->after_sequence() < 0
            ? grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                           "after_sequence: must be >= 0")
            : grpc::Status(grpc::StatusCode::NOT_FOUND,
                           absl::StrCat("job ", request->job_id()));
    return new FailedStream<grpc::ServerWriteReactor<v1::WatchJobResponse>>(status);
  }
  return new WatchReactor(jobs_, request->job_id(), request->after_sequence());
}

grpc::ServerUnaryReactor* BenchServiceImpl::CancelJob(grpc::CallbackServerContext* context,
                                                      const v1::CancelJobRequest* request,
                                                      v1::CancelJobResponse* response) {
  const Caller caller = auth_->CallerOf(*context);
  if (auto s = RequiredId(request->job_id(), "job_id"); !s.ok()) return Reply(context, s);
  if (auto s = OwnJobOrAdmin(jobs_, caller, request->job_id(), "cancelling"); !s.ok()) {
    return Reply(context, s);
  }
  auto job = jobs_->Cancel(request->job_id());
  if (!job.ok()) return Reply(context, job.status());
  *response->mutable_job() = std::move(*job);
  return Reply(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* BenchServiceImpl::DeleteJob(grpc::CallbackServerContext* context,
                                                      const v1::DeleteJobRequest* request,
                                                      v1::DeleteJobResponse* response) {
  const Caller caller = auth_->CallerOf(*context);
  if (auto s = RequiredId(request->job_id(), "job_id"); !s.ok()) return Reply(context, s);
  if (auto s = OwnJobOrAdmin(jobs_, caller, request->job_id(), "deleting"); !s.ok()) {
    return Reply(context, s);
  }
  auto deleted = jobs_->Delete(request->job_id(), caller.name);
  if (!deleted.ok()) return Reply(context, deleted.status());
  *response->mutable_job() = std::move(deleted->job);
  response->set_runs_deleted(static_cast<int32_t>(deleted->runs));
  response->set_bytes_freed(deleted->bytes);
  return Reply(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* BenchServiceImpl::GetRun(grpc::CallbackServerContext* context,
                                                   const v1::GetRunRequest* request,
                                                   v1::GetRunResponse* response) {
  if (auto s = RequiredId(request->run_id(), "run_id"); !s.ok()) return Reply(context, s);
  auto run = store_->runs().Get(request->run_id(), request->include_samples());
  if (!run.ok()) return Reply(context, run.status());
  *response->mutable_run() = std::move(*run);
  return Reply(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* BenchServiceImpl::ListRuns(grpc::CallbackServerContext* context,
                                                     const v1::ListRunsRequest* request,
                                                     v1::ListRunsResponse* response) {
  if (auto s = RequiredId(request->job_id(), "job_id"); !s.ok()) return Reply(context, s);
  if (auto job = store_->jobs().Get(request->job_id()); !job.ok()) {
    return Reply(context, job.status());
  }
  size_t first = 0;
  if (!request->page_token().empty() &&
      (!absl::SimpleAtoi(request->page_token(), &first) ||
       first > static_cast<size_t>(kMaxSweepPoints))) {
    return Reply(context, absl::InvalidArgumentError("page_token: not one this daemon gave"));
  }
  if (request->page_size() < 0) {
    return Reply(context, absl::InvalidArgumentError("page_size: must be >= 0"));
  }
  // The records without samples, then the samples of this page's runs
  // only: a job's every sample, read for each page, would be read again and
  // again.
  auto runs = store_->runs().List(request->job_id(), /*include_samples=*/false);
  if (!runs.ok()) return Reply(context, runs.status());
  // Below the 64 MiB a reply may have, with room for one large run more.
  constexpr size_t kPageBytes = 32 << 20;
  size_t bytes = 0, i = first;
  for (; i < runs->size(); ++i) {
    if (request->page_size() > 0 && response->runs_size() >= request->page_size()) break;
    v1::Run& run = (*runs)[i];
    if (request->include_samples()) {
      auto full = store_->runs().Get(run.run_id(), /*include_samples=*/true);
      if (!full.ok()) return Reply(context, full.status());
      run = std::move(*full);
    }
    const size_t size = run.ByteSizeLong();
    if (response->runs_size() > 0 && bytes + size > kPageBytes) break;
    bytes += size;
    *response->add_runs() = std::move(run);
  }
  if (i < runs->size()) response->set_next_page_token(absl::StrCat(i));
  return Reply(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* BenchServiceImpl::QueryRuns(grpc::CallbackServerContext* context,
                                                      const v1::QueryRunsRequest* request,
                                                      v1::QueryRunsResponse* response) {
  storage::RunFilter filter;
  filter.workload = request->workload();
  for (int i = 0; i < request->config_equals_size(); ++i) {
    auto predicate = ParseConfigPredicate(request->config_equals(i),
                                          absl::StrCat("config_equals[", i, "]"));
    if (!predicate.ok()) return Reply(context, predicate.status());
    filter.config_equals.push_back(std::move(*predicate));
  }
  filter.host_id = request->host_id();
  for (int s : request->states()) filter.states.push_back(static_cast<v1::RunState>(s));
  filter.started_after_ns = Ns(request->started_after());
  filter.started_before_ns = Ns(request->started_before());
  filter.job_id = request->job_id();
  filter.schedule_id = request->schedule_id();
  // With samples a run can weigh 12 MiB and its telemetry a few more: four
  // a page stay below the 64 MiB a reply may have.
  const int page_size = request->include_samples() && (request->page_size() <= 0 ||
                                                      request->page_size() > 4)
                            ? 4
                            : request->page_size();
  auto page = store_->runs().Query(filter, page_size, request->page_token());
  if (!page.ok()) return Reply(context, page.status());
  for (auto& r : page->items) {
    if (request->include_samples()) {
      auto full = store_->runs().Get(r.run_id(), /*include_samples=*/true);
      if (full.ok()) r = std::move(*full);
    }
    *response->add_runs() = std::move(r);
  }
  response->set_next_page_token(page->next_page_token);
  return Reply(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* BenchServiceImpl::GetHostInfo(
    grpc::CallbackServerContext* context, const v1::GetHostInfoRequest*,
    v1::GetHostInfoResponse* response) {
  *response->mutable_host() = jobs_->host();
  return Reply(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* BenchServiceImpl::CreateSchedule(
    grpc::CallbackServerContext* context, const v1::CreateScheduleRequest* request,
    v1::CreateScheduleResponse* response) {
  auto schedule = scheduler_->Create(request->schedule(), absl::Now());
  if (!schedule.ok()) return Reply(context, schedule.status());
  *response->mutable_schedule() = std::move(*schedule);
  return Reply(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* BenchServiceImpl::ListSchedules(
    grpc::CallbackServerContext* context, const v1::ListSchedulesRequest*,
    v1::ListSchedulesResponse* response) {
  auto schedules = store_->schedules().List();
  if (!schedules.ok()) return Reply(context, schedules.status());
  for (auto& s : *schedules) *response->add_schedules() = std::move(s);
  return Reply(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* BenchServiceImpl::DeleteSchedule(
    grpc::CallbackServerContext* context, const v1::DeleteScheduleRequest* request,
    v1::DeleteScheduleResponse*) {
  if (auto s = RequiredId(request->schedule_id(), "schedule_id"); !s.ok()) {
    return Reply(context, s);
  }
  return Reply(context, store_->schedules().Delete(request->schedule_id()));
}

grpc::ServerUnaryReactor* BenchServiceImpl::DeleteModel(
    grpc::CallbackServerContext* context, const v1::DeleteModelRequest* request,
    v1::DeleteModelResponse* response) {
  if (!IsSha256Hex(request->sha256())) {
    return Reply(context, absl::InvalidArgumentError("sha256: must be 64 lower-case hex digits"));
  }
  auto model = store_->models().Get(request->sha256());
  if (!model.ok()) return Reply(context, model.status());
  // The file first: on a full disk the freed space is what lets SQLite
  // write the row's deletion (its WAL must grow a little), and deleting
  // models is how an admin makes room. A row left without its file (the
  // store still failing) is deleted by the next try.
  const std::string path = ModelPath(options_.model_dir, request->sha256());
  if (std::remove(path.c_str()) != 0 && errno != ENOENT) {
    return Reply(context, absl::InternalError(absl::StrCat("cannot remove ", path, ": ",
                                                           std::strerror(errno))));
  }
  if (auto s = store_->models().Delete(request->sha256()); !s.ok()) return Reply(context, s);
  *response->mutable_model() = std::move(*model);
  return Reply(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* BenchServiceImpl::ListRegressions(
    grpc::CallbackServerContext* context, const v1::ListRegressionsRequest* request,
    v1::ListRegressionsResponse* response) {
  auto runs = store_->runs().ListFlagged(Ns(request->since()), request->include_improvements());
  if (!runs.ok()) return Reply(context, runs.status());
  for (auto& r : *runs) *response->add_runs() = std::move(r);
  return Reply(context, absl::OkStatus());
}

}  // namespace gpubench::server
