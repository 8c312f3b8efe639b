// gpubench.v1.BenchService on gRPC's callback API. Reactors validate, call
// the job manager or the store, and return; no model ever runs on a gRPC
// thread, and no reactor blocks on a worker.
#ifndef GPUBENCH_SERVER_SERVICE_H_
#define GPUBENCH_SERVER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "gpubench/v1/service.grpc.pb.h"
#include "absl/time/time.h"
#include "server/auth.h"
#include "server/idle_watch.h"
#include "server/upload_ledger.h"
#include "server/job_manager.h"
#include "server/scheduler.h"
#include "storage/store.h"

namespace gpubench::server {

// Limits and switches of the front end.
struct ServiceOptions {
  std::string model_dir;                        // uploaded models, by sha256
  bool allow_uploaded_aoti = false;             // AOTI uploads from non-admins
  int64_t max_model_bytes = int64_t{2} << 30;   // one upload at most
  int64_t models_quota_bytes = int64_t{20} << 30;  // every stored model together
  int max_priority_without_admin = 10;          // spec.priority above needs admin
  // Workers run unconfined and the operator did not pass
  // --allow-unconfined-user-models: user models need admin.
  bool user_models_need_admin = false;
  // An upload that sends nothing for this long is cancelled and its share of
  // the quota given back (<= 0: never).
  absl::Duration upload_idle_timeout = absl::Seconds(30);
  // The slowest upload kept: one still unfinished upload_idle_timeout +
  // size_bytes / this after its header is cancelled, so that a trickle of a
  // byte per timeout cannot hold its quota for ever (<= 0: no floor).
  int64_t upload_min_bytes_per_second = int64_t{1} << 20;
  // A caller below admin whose stored jobs hold this many bytes or more
  // (JobStore::SubmitterBytes) may not submit until it deletes some (0: no
  // share). gpubenchd sets it to --max-db-share of --max-db-bytes.
  int64_t max_submitter_db_bytes = 0;
  double max_db_share = 0;  // that fraction, for the refusal's message
};

// Thread-safe; jobs, store and auth outlive it.
class BenchServiceImpl final : public v1::BenchService::CallbackService {
 public:
  BenchServiceImpl(JobManager* jobs, Scheduler* scheduler, storage::Store* store,
                   const Authorizer* auth, ServiceOptions options)
      : jobs_(jobs),
        scheduler_(scheduler),
        store_(store),
        auth_(auth),
        options_(std::move(options)),
        idle_uploads_(options_.upload_idle_timeout) {}

  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* context,
                                      const v1::SubmitJobRequest* request,
                                      v1::SubmitJobResponse* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context,
                                   const v1::GetJobRequest* request,
                                   v1::GetJobResponse* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context,
                                     const v1::ListJobsRequest* request,
                                     v1::ListJobsResponse* response) override;
  grpc::ServerWriteReactor<v1::WatchJobResponse>* WatchJob(
      grpc::CallbackServerContext* context,
      const v1::WatchJobRequest* request) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* context,
                                      const v1::CancelJobRequest* request,
                                      v1::CancelJobResponse* response) override;
  grpc::ServerUnaryReactor* DeleteJob(grpc::CallbackServerContext* context,
                                      const v1::DeleteJobRequest* request,
                                      v1::DeleteJobResponse* response) override;
  grpc::ServerUnaryReactor* GetRun(grpc::CallbackServerContext* context,
                                   const v1::GetRunRequest* request,
                                   v1::GetRunResponse* response) override;
  grpc::ServerUnaryReactor* ListRuns(grpc::CallbackServerContext* context,
                                     const v1::ListRunsRequest* request,
                                     v1::ListRunsResponse* response) override;
  grpc::ServerUnaryReactor* QueryRuns(grpc::CallbackServerContext* context,
                                      const v1::QueryRunsRequest* request,
                                      v1::QueryRunsResponse* response) override;
  grpc::ServerUnaryReactor* GetHostInfo(grpc::CallbackServerContext* context,
                                        const v1::GetHostInfoRequest* request,
                                        v1::GetHostInfoResponse* response) override;
  grpc::ServerUnaryReactor* CreateSchedule(grpc::CallbackServerContext* context,
                                           const v1::CreateScheduleRequest* request,
                                           v1::CreateScheduleResponse* response) override;
  grpc::ServerUnaryReactor* ListSchedules(grpc::CallbackServerContext* context,
                                          const v1::ListSchedulesRequest* request,
                                          v1::ListSchedulesResponse* response) override;
  grpc::ServerUnaryReactor* DeleteSchedule(grpc::CallbackServerContext* context,
                                           const v1::DeleteScheduleRequest* request,
                                           v1::DeleteScheduleResponse* response) override;
  grpc::ServerReadReactor<v1::UploadModelRequest>* UploadModel(
      grpc::CallbackServerContext* context, v1::UploadModelResponse* response) override;
  grpc::ServerWriteReactor<v1::GetTraceResponse>* GetTrace(
      grpc::CallbackServerContext* context, const v1::GetTraceRequest* request) override;
  grpc::ServerUnaryReactor* DeleteModel(grpc::CallbackServerContext* context,
                                        const v1::DeleteModelRequest* request,
                                        v1::DeleteModelResponse* response) override;
  grpc::ServerUnaryReactor* ListRegressions(
      grpc::CallbackServerContext* context, const v1::ListRegressionsRequest* request,
      v1::ListRegressionsResponse* response) override;
  grpc::ServerUnaryReactor* RunProbe(grpc::CallbackServerContext* context,
                                     const v1::RunProbeRequest* request,
                                     v1::RunProbeResponse* response) override;
  grpc::ServerUnaryReactor* RunHostPair(grpc::CallbackServerContext* context,
                                        const v1::RunHostPairRequest* request,
                                        v1::RunHostPairResponse* response) override;

 private:
  JobManager* const jobs_;
  Scheduler* const scheduler_;
  storage::Store* const store_;
  const Authorizer* const auth_;
  const ServiceOptions options_;
  // Uploads in flight, counted against the quota until they end.
  UploadLedger uploads_;
  // Cancels uploads idle for options_.upload_idle_timeout, or too slow.
  IdleWatch idle_uploads_;
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_SERVICE_H_
