// A submitter's room in the daemon's store, against real daemons with
// tokens: DeleteJob (`gpubench rm`) deletes an ended job with all its runs,
// for its submitter or an admin and never while it is queued or running;
// and a caller below admin whose stored jobs hold its share of the store
// (--max-db-share of --max-db-bytes) is refused at submit until it deletes
// one, while an admin is not.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpubench/v1/service.grpc.pb.h"
#include "tests/support/callers.h"
#include "tests/support/daemon_process.h"

namespace gpubench {
namespace {

using testing_support::Auth;
using testing_support::Daemon;
using testing_support::FreshDir;
using testing_support::kAdmin;
using testing_support::kAlice;
using testing_support::kBob;
using testing_support::kReader;
using testing_support::Submit;
using testing_support::WriteTokenFile;

// The empty workload on the CPU for `iterations` measured iterations, each
// a sample of a few bytes in the store.
v1::JobSpec EmptySpec(int iterations) {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("empty");
  spec.mutable_base()->set_device("cpu");
  spec.mutable_base()->set_batch_size(1);
  spec.mutable_measurement()->set_warmup_iterations(1);
  spec.mutable_measurement()->set_min_iterations(iterations);
  spec.mutable_measurement()->set_max_iterations(iterations);
  spec.mutable_measurement()->set_min_time_ms(0);
  spec.mutable_measurement()->set_max_time_ms(10000);
  return spec;
}

// A job that measures for a minute, unless cancelled.
v1::JobSpec SlowSpec() {
  v1::JobSpec spec = EmptySpec(10);
  spec.mutable_measurement()->set_min_time_ms(60000);
  spec.mutable_measurement()->set_max_time_ms(60000);
  spec.mutable_measurement()->set_max_iterations(100000000);  // the default cap ends it in ~1 s
  return spec;
}

grpc::Status Delete(Daemon& d, const std::string& id, const std::string& token,
                    v1::DeleteJobResponse* response = nullptr) {
  grpc::ClientContext ctx;
  Auth(&ctx, token);
  v1::DeleteJobRequest req;
  req.set_job_id(id);
  v1::DeleteJobResponse resp;
  grpc::Status s = d.stub()->DeleteJob(&ctx, req, &resp);
  if (response != nullptr) *response = resp;
  return s;
}

// The job as the admin reads it.
grpc::Status Get(Daemon& d, const std::string& id, v1::Job* job = nullptr) {
  grpc::ClientContext ctx;
  Auth(&ctx, kAdmin);
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::GetJobResponse resp;
  grpc::Status s = d.stub()->GetJob(&ctx, req, &resp);
  if (job != nullptr) *job = resp.job();
  return s;
}

// The job's runs as the admin lists them.
grpc::Status ListRuns(Daemon& d, const std::string& id, std::vector<v1::Run>* runs = nullptr) {
  grpc::ClientContext ctx;
  Auth(&ctx, kAdmin);
  v1::ListRunsRequest req;
  req.set_job_id(id);
  v1::ListRunsResponse resp;
  grpc::Status s = d.stub()->ListRuns(&ctx, req, &resp);
  if (runs != nullptr) runs->assign(resp.runs().begin(), resp.runs().end());
  return s;
}

// Polls the job until done(state) (a minute at most); its last state.
template <typename Done>
v1::JobState WaitFor(Daemon& d, const std::string& id, Done done) {
  v1::Job job;
  for (int i = 0; i < 600; ++i) {
    if (Get(d, id, &job).ok() && done(job.state())) return job.state();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "job " << id << " stayed " << job.state();
  return job.state();
}

v1::JobState WaitForEnd(Daemon& d, const std::string& id) {
  return WaitFor(d, id, [](v1::JobState s) {
    return s != v1::JOB_STATE_QUEUED && s != v1::JOB_STATE_RUNNING;
  });
}

// A job that just ended may still be leaving the runner for a moment
// (FAILED_PRECONDITION, "is running"): the delete is retried until then.
grpc::Status DeleteOnceEnded(Daemon& d, const std::string& id, const std::string& token,
                             v1::DeleteJobResponse* response = nullptr) {
  grpc::Status s;
  for (int i = 0; i < 50; ++i) {
    s = Delete(d, id, token, response);
    if (s.error_code() != grpc::StatusCode::FAILED_PRECONDITION) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return s;
}

// The owner deletes its ended job: the job and its runs are gone for every
// reader. Another submitter and a reader are refused and the job stays; an
// admin deletes anyone's.
TEST(DeleteJob, TheOwnerOrAnAdminDeletesAnEndedJobWithItsRuns) {
  const std::string dir = FreshDir("delete_job_owner");
  Daemon d(dir, {"--token-file", WriteTokenFile(dir)});
  ASSERT_TRUE(d.serving()) << d.log();
  std::string id, other;
  ASSERT_TRUE(Submit(d, EmptySpec(20), kAlice, &id).ok());
  ASSERT_TRUE(Submit(d, EmptySpec(20), kAlice, &other).ok());
  ASSERT_EQ(WaitForEnd(d, id), v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(WaitForEnd(d, other), v1::JOB_STATE_SUCCEEDED);
  std::vector<v1::Run> runs;
  ASSERT_TRUE(ListRuns(d, id, &runs).ok());
  ASSERT_EQ(runs.size(), 1u);

  grpc::Status bob = DeleteOnceEnded(d, id, kBob);
  EXPECT_EQ(bob.error_code(), grpc::StatusCode::PERMISSION_DENIED) << bob.error_message();
  EXPECT_NE(bob.error_message().find("job " + id), std::string::npos) << bob.error_message();
  EXPECT_NE(bob.error_message().find("needs the admin role"), std::string::npos)
      << bob.error_message();
  EXPECT_EQ(Delete(d, id, kReader).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Delete(d, id, "not-a-token").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Get(d, id).ok());
  ASSERT_TRUE(ListRuns(d, id, &runs).ok());
  EXPECT_EQ(runs.size(), 1u);

  v1::DeleteJobResponse deleted;
  grpc::Status mine = DeleteOnceEnded(d, id, kAlice, &deleted);
  ASSERT_TRUE(mine.ok()) << mine.error_message();
  EXPECT_EQ(deleted.job().job_id(), id);
  EXPECT_EQ(deleted.job().state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(deleted.runs_deleted(), 1);
  EXPECT_GT(deleted.bytes_freed(), 0);
  EXPECT_EQ(Get(d, id).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ListRuns(d, id).error_code(), grpc::StatusCode::NOT_FOUND);
  {
    grpc::ClientContext ctx;
    Auth(&ctx, kAdmin);
    v1::GetRunRequest req;
    req.set_run_id(runs[0].run_id());
    v1::GetRunResponse resp;
    EXPECT_EQ(d.stub()->GetRun(&ctx, req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext ctx;
    Auth(&ctx, kAdmin);
    v1::QueryRunsRequest req;
    req.set_job_id(id);
    v1::QueryRunsResponse resp;
    ASSERT_TRUE(d.stub()->QueryRuns(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.runs_size(), 0);
  }
  {
    grpc::ClientContext ctx;
    Auth(&ctx, kAdmin);
    v1::WatchJobRequest req;
    req.set_job_id(id);
    auto reader = d.stub()->WatchJob(&ctx, req);
    v1::WatchJobResponse event;
    while (reader->Read(&event)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  }
  EXPECT_EQ(Delete(d, id, kAlice).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(d.log().find("job " + id + " deleted by alice: 1 run(s)"), std::string::npos)
      << d.log();

  // The other job is untouched, and an admin may delete it.
  ASSERT_TRUE(ListRuns(d, other, &runs).ok());
  EXPECT_EQ(runs.size(), 1u);
  grpc::Status admin = Delete(d, other, kAdmin);
  EXPECT_TRUE(admin.ok()) << admin.error_message();
  EXPECT_EQ(Get(d, other).error_code(), grpc::StatusCode::NOT_FOUND);
}

// A queued or a running job is refused, an admin's delete too, saying to
// cancel it first; once cancelled and ended, it may go.
TEST(DeleteJob, AQueuedOrRunningJobIsRefusedUntilCancelled) {
  const std::string dir = FreshDir("delete_job_live");
  Daemon d(dir, {"--token-file", WriteTokenFile(dir)});
  ASSERT_TRUE(d.serving()) << d.log();
  std::string running, queued;
  ASSERT_TRUE(Submit(d, SlowSpec(), kAlice, &running).ok());
  ASSERT_EQ(WaitFor(d, running, [](v1::JobState s) { return s == v1::JOB_STATE_RUNNING; }),
            v1::JOB_STATE_RUNNING);
  // A CPU job holds the whole host: this one waits in the queue.
  ASSERT_TRUE(Submit(d, EmptySpec(20), kAlice, &queued).ok());
  v1::Job job;
  ASSERT_TRUE(Get(d, queued, &job).ok());
  ASSERT_EQ(job.state(), v1::JOB_STATE_QUEUED);
  for (const auto& [id, word] : {std::pair<std::string, std::string>{running, "running"},
                                 {queued, "queued"}}) {
    for (const char* token : {kAlice, kAdmin}) {
      grpc::Status s = Delete(d, id, token);
      EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
      EXPECT_NE(s.error_message().find("job " + id + " is " + word), std::string::npos)
          << s.error_message();
      EXPECT_NE(s.error_message().find("cancel it first (gpubench cancel " + id + ")"),
                std::string::npos)
          << s.error_message();
    }
    EXPECT_TRUE(Get(d, id).ok());
  }
  for (const std::string& id : {queued, running}) {
    grpc::ClientContext ctx;
    Auth(&ctx, kAlice);
    v1::CancelJobRequest req;
    req.set_job_id(id);
    v1::CancelJobResponse resp;
    ASSERT_TRUE(d.stub()->CancelJob(&ctx, req, &resp).ok());
    EXPECT_EQ(WaitForEnd(d, id), v1::JOB_STATE_CANCELLED);
    grpc::Status s = DeleteOnceEnded(d, id, kAlice);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(Get(d, id).error_code(), grpc::StatusCode::NOT_FOUND);
  }
}

// --max-db-share 0.0005 of 100 MB: 50 kB a submitter. A job of 20,000
// samples (some 240 kB) puts alice over it: her next submit is refused
// saying what she holds, the share, and that `gpubench rm` frees it; bob
// still submits; an admin over the share is not refused; after alice's rm
// her submit is accepted. A dry run, which stores nothing, is never refused.
TEST(StoreShare, ASubmitterOverItsShareIsRefusedUntilRmFreesIt) {
  const std::string dir = FreshDir("store_share");
  Daemon d(dir, {"--token-file", WriteTokenFile(dir), "--max-db-bytes", "100000000",
                 "--max-db-share", "0.0005"});
  ASSERT_TRUE(d.serving()) << d.log();
  std::string big;
  ASSERT_TRUE(Submit(d, EmptySpec(20000), kAlice, &big).ok());
  ASSERT_EQ(WaitForEnd(d, big), v1::JOB_STATE_SUCCEEDED);

  grpc::Status refused = Submit(d, EmptySpec(5), kAlice);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << refused.error_message();
  for (const char* part : {"alice's stored jobs hold ", "--max-db-share 0.0005",
                           "`gpubench rm JOB`"}) {
    EXPECT_NE(refused.error_message().find(part), std::string::npos)
        << part << " in: " << refused.error_message();
  }
  {
    grpc::ClientContext ctx;
    Auth(&ctx, kAlice);
    v1::SubmitJobRequest req;
    *req.mutable_spec() = EmptySpec(5);
    req.set_dry_run(true);
    v1::SubmitJobResponse resp;
    EXPECT_TRUE(d.stub()->SubmitJob(&ctx, req, &resp).ok());
  }
  grpc::Status bob = Submit(d, EmptySpec(5), kBob);
  EXPECT_TRUE(bob.ok()) << bob.error_message();

  std::string admins;
  ASSERT_TRUE(Submit(d, EmptySpec(20000), kAdmin, &admins).ok());
  ASSERT_EQ(WaitForEnd(d, admins), v1::JOB_STATE_SUCCEEDED);
  grpc::Status admin = Submit(d, EmptySpec(5), kAdmin);
  EXPECT_TRUE(admin.ok()) << admin.error_message();

  v1::DeleteJobResponse deleted;
  grpc::Status rm = DeleteOnceEnded(d, big, kAlice, &deleted);
  ASSERT_TRUE(rm.ok()) << rm.error_message();
  EXPECT_GT(deleted.bytes_freed(), 50000);
  grpc::Status accepted = Submit(d, EmptySpec(5), kAlice);
  EXPECT_TRUE(accepted.ok()) << accepted.error_message();
}

// A share that is not a fraction in (0, 1] stops the daemon at start,
// naming the flag (exit 2, a bad setting); 1, the whole store, is one.
TEST(StoreShare, AShareOutsideZeroToOneIsRefusedNamingTheFlag) {
  int n = 0;
  for (const char* bad : {"0", "1.5", "-0.25", "nan", "half"}) {
    Daemon d(FreshDir("store_share_bad_" + std::to_string(n++)),
             {std::string("--max-db-share=") + bad});
    EXPECT_FALSE(d.serving()) << bad;
    const int status = d.Stop(SIGKILL);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << bad << ": " << status;
    EXPECT_NE(d.log().find("--max-db-share"), std::string::npos) << bad << ": " << d.log();
  }
  Daemon whole(FreshDir("store_share_whole"), {"--max-db-share", "1"});
  EXPECT_TRUE(whole.serving()) << whole.log();
}

}  // namespace
}  // namespace gpubench
