// A real gpubenchd process on a loopback port with a temporary data dir,
// real gpubench-worker processes and tiny CPU jobs, driven over gRPC.
#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpubench/v1/service.grpc.pb.h"
#include "tests/support/command.h"
#include "tests/support/daemon_process.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "common/sha256.h"
#include "storage/store.h"
#include "tests/server/daemon_test_util.h"

namespace gpubench {
namespace {

using testing_support::Daemon;
using testing_support::RunCommand;
using testing_support::FreshDir;
using testing_support::TinySpec;
using testing_support::WorkerChildren;

using std::chrono::milliseconds;
using daemon_test::GetJob;
using daemon_test::IsState;
using daemon_test::ListRuns;
using daemon_test::LongSpec;
using daemon_test::Submit;
using daemon_test::WaitForEnd;
using daemon_test::Watch;

TEST(Daemon, SubmitWatchSucceedsAndStoresRunsWithSamples) {
  Daemon d(FreshDir("submit"));
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = TinySpec();
  spec.mutable_sweep()->add_batch_size(4);
  spec.mutable_sweep()->add_batch_size(8);
  const std::string id = Submit(d, spec);
  ASSERT_FALSE(id.empty());
  grpc::Status status;
  auto events = Watch(d, id, 0, nullptr, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(IsState(events.front(), v1::JOB_STATE_QUEUED));
  EXPECT_TRUE(IsState(events.back(), v1::JOB_STATE_SUCCEEDED)) << events.back().DebugString();
  int started = 0, finished = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].job_id(), id);
    if (i > 0) {
      EXPECT_GT(events[i].sequence(), events[i - 1].sequence());
    }
    started += events[i].has_run_started();
    finished += events[i].has_run_finished();
  }
  EXPECT_EQ(started, 2);
  EXPECT_EQ(finished, 2);

  const v1::Job job = GetJob(d, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job.runs_done(), 2);
  EXPECT_EQ(job.attempt(), 1);
  auto runs = ListRuns(d, id, true);
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& r : runs) {
    EXPECT_EQ(r.state(), v1::RUN_STATE_SUCCEEDED);
    EXPECT_GT(r.result().throughput_samples_per_s(), 0);
    EXPECT_EQ(r.samples().device_ms_size(), r.result().iterations());
    EXPECT_GE(r.result().iterations(), 10);
    // CPU runs record the worker's CPU use and RSS over the measured window.
    EXPECT_TRUE(r.result().telemetry().available()) << r.result().telemetry().DebugString();
    EXPECT_EQ(r.telemetry_series().source(), "host");
    ASSERT_GE(r.telemetry_series().samples_size(), 1);
    EXPECT_GT(r.telemetry_series().samples(0).host_rss_bytes(), 0);
  }
  EXPECT_EQ(runs[0].config().batch_size(), 4);
  EXPECT_EQ(runs[1].config().batch_size(), 8);

  // Resuming after an event replays only what followed it.
  const int64_t mid = events[events.size() / 2].sequence();
  auto rest = Watch(d, id, mid);
  ASSERT_FALSE(rest.empty());
  EXPECT_GT(rest.front().sequence(), mid);
  EXPECT_TRUE(IsState(rest.back(), v1::JOB_STATE_SUCCEEDED));

  // GetRun with and without samples.
  grpc::ClientContext ctx;
  v1::GetRunRequest req;
  req.set_run_id(runs[1].run_id());
  v1::GetRunResponse resp;
  ASSERT_TRUE(d.stub()->GetRun(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.run().samples().device_ms_size(), 0);
  EXPECT_EQ(resp.run().config().batch_size(), 8);
}

// --version: the program's version, then the LibTorch, CUDA and cuDNN its
// worker has (the daemon asks the worker it would start).
// The log journald and `kubectl logs` read: one line per event, with its
// time and level; each job's life at info; -v adds each worker and each run
// stored, and without it there are no debug lines.
TEST(Daemon, LogsOneLinePerEventWithItsLevelAndMoreWithVerbose) {
  const std::regex line_format(
      R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z [DIWE] gpubenchd: .+$)");
  for (const bool verbose : {false, true}) {
    SCOPED_TRACE(verbose ? "-v" : "default");
    std::vector<std::string> extra;
    if (verbose) extra.push_back("-v");
    Daemon d(FreshDir(verbose ? "log_verbose" : "log_default"), extra);
    ASSERT_TRUE(d.serving()) << d.log();
    const std::string id = Submit(d, TinySpec());
    ASSERT_FALSE(id.empty());
    grpc::Status status;
    Watch(d, id, 0, nullptr, &status);
    ASSERT_TRUE(status.ok()) << status.error_message();
    d.Stop(SIGTERM);
    const std::string log = d.log();
    int ours = 0, debug = 0;
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("gpubenchd: ") == std::string::npos) continue;
      ++ours;
      EXPECT_TRUE(std::regex_match(line, line_format)) << line;
      debug += line.find("Z D gpubenchd: ") != std::string::npos;
    }
    EXPECT_GE(ours, 5) << log;
    for (const std::string& event :
         {std::string("I gpubenchd: gpubenchd 0.1.0 serving on 127.0.0.1:0"),
          "I gpubenchd: job " + id + " queued: 1 run(s) of mlp",
          "I gpubenchd: job " + id + " running", "I gpubenchd: job " + id + " succeeded",
          std::string("I gpubenchd: stopped")}) {
      EXPECT_NE(log.find(event), std::string::npos) << event << " not in:\n" << log;
    }
    const std::string stored = "D gpubenchd: job " + id + ": run 0 stored as r";
    if (verbose) {
      EXPECT_NE(log.find(stored), std::string::npos) << log;
      EXPECT_NE(log.find("D gpubenchd: job " + id + ": worker started"), std::string::npos)
          << log;
    } else {
      EXPECT_EQ(debug, 0) << log;
    }
  }
}

TEST(Daemon, DaemonAndWorkerPrintTheirVersionsAndTheWorkersLibTorch) {
  const auto [probe, probe_code] = RunCommand(std::string(GPUBENCH_WORKER_PATH) + " --probe");
  ASSERT_EQ(probe_code, 0) << probe;
  v1::HostInfo probed;
  const size_t brace = probe.find('{');  // after whatever LibTorch logged
  ASSERT_NE(brace, std::string::npos) << probe;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(probe.substr(brace), &probed).ok())
      << probe;
  ASSERT_FALSE(probed.torch_version().empty());
  const std::string torch_line = "\nLibTorch " + probed.torch_version() + "\n";
  const auto [worker, worker_code] = RunCommand(std::string(GPUBENCH_WORKER_PATH) + " --version");
  EXPECT_EQ(worker_code, 0);
  EXPECT_EQ(worker.rfind("gpubench-worker 0.1.0\n", 0), 0u) << worker;
  EXPECT_NE(worker.find(torch_line), std::string::npos) << worker;
  EXPECT_NE(worker.find("\nCUDA "), std::string::npos) << worker;
  EXPECT_NE(worker.find("\ncuDNN "), std::string::npos) << worker;
  const auto [daemon, daemon_code] = RunCommand(std::string(GPUBENCH_DAEMON_PATH) +
                                                " --version --worker " + GPUBENCH_WORKER_PATH);
  EXPECT_EQ(daemon_code, 0);
  EXPECT_EQ(daemon.rfind("gpubenchd 0.1.0\n", 0), 0u) << daemon;
  EXPECT_NE(daemon.find(torch_line), std::string::npos) << daemon;
  // Without a worker it says so, naming the path, and fails.
  const auto [lost, lost_code] =
      RunCommand(std::string(GPUBENCH_DAEMON_PATH) + " --version --worker /nonexistent/worker");
  EXPECT_EQ(lost_code, 1);
  EXPECT_NE(lost.find("/nonexistent/worker"), std::string::npos) << lost;
}

TEST(Daemon, BadInputIsInvalidArgumentNamingTheFieldAndUnknownIdsNotFound) {
  Daemon d(FreshDir("errors"));
  ASSERT_TRUE(d.serving()) << d.log();
  {
    v1::JobSpec spec = TinySpec();
    spec.mutable_sweep()->add_batch_size(0);
    grpc::ClientContext ctx;
    v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    v1::SubmitJobResponse resp;
    grpc::Status s = d.stub()->SubmitJob(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("sweep.batch_size[0]"), std::string::npos)
        << s.error_message();
  }
  {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job_id("jnope");
    v1::GetJobResponse resp;
    EXPECT_EQ(d.stub()->GetJob(&ctx, req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext ctx;
    v1::CancelJobRequest req;
    req.set_job_id("jnope");
    v1::CancelJobResponse resp;
    EXPECT_EQ(d.stub()->CancelJob(&ctx, req, &resp).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  grpc::Status status;
  Watch(d, "jnope", 0, nullptr, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  {
    grpc::ClientContext ctx;
    v1::QueryRunsRequest req;
    req.add_config_equals("no_such_field=1");
    v1::QueryRunsResponse resp;
    grpc::Status s = d.stub()->QueryRuns(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("no_such_field"), std::string::npos) << s.error_message();
  }
}

// A dry run answers with the plan the job would run, and is refused where
// the submit is: cuda:all on this host without GPUs is INVALID_ARGUMENT
// either way, and a sweep comes back with its defaults filled and as many
// runs as the job then has.
TEST(Daemon, ADryRunIsThePlanTheJobRuns) {
  Daemon d(FreshDir("dry_run"));
  ASSERT_TRUE(d.serving()) << d.log();
  auto submit = [&](const v1::JobSpec& spec, bool dry_run, v1::SubmitJobResponse* resp) {
    grpc::ClientContext ctx;
    v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    req.set_dry_run(dry_run);
    return d.stub()->SubmitJob(&ctx, req, resp);
  };
  v1::JobSpec every_gpu = TinySpec();
  every_gpu.mutable_base()->set_device("cuda:all");
  for (bool dry_run : {true, false}) {
    v1::SubmitJobResponse resp;
    const grpc::Status s = submit(every_gpu, dry_run, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << dry_run;
    EXPECT_NE(s.error_message().find("spec.base.device: cuda:all"), std::string::npos)
        << s.error_message();
  }
  v1::JobSpec sweep = TinySpec();
  sweep.mutable_sweep()->add_batch_size(2);
  sweep.mutable_sweep()->add_batch_size(4);
  v1::SubmitJobResponse dry, real;
  ASSERT_TRUE(submit(sweep, true, &dry).ok());
  ASSERT_TRUE(submit(sweep, false, &real).ok());
  EXPECT_TRUE(dry.job().job_id().empty());
  EXPECT_EQ(dry.job().run_count(), 2);
  EXPECT_EQ(real.job().run_count(), dry.job().run_count());
  ASSERT_EQ(dry.runs_size(), 2);
  ASSERT_EQ(real.runs_size(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(dry.runs(i).batch_size(), 2 << i);
    EXPECT_FALSE(dry.runs(i).params().model_size().empty());  // defaults filled
    EXPECT_EQ(dry.runs(i).SerializeAsString(), real.runs(i).SerializeAsString()) << i;
  }
  // And what the worker ran and the daemon stored is that plan, run by run.
  ASSERT_EQ(WaitForEnd(d, real.job().job_id()), v1::JOB_STATE_SUCCEEDED);
  const std::vector<v1::Run> ran = ListRuns(d, real.job().job_id(), false);
  ASSERT_EQ(ran.size(), 2u);
  for (const v1::Run& run : ran) {
    ASSERT_GE(run.index(), 0);
    ASSERT_LT(run.index(), 2);
    EXPECT_EQ(run.config().SerializeAsString(), real.runs(run.index()).SerializeAsString())
        << run.index();
  }
}

TEST(Daemon, ListAndQueryFilter) {
  Daemon d(FreshDir("list"));
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec cnn = TinySpec("simple_cnn");
  cnn.mutable_sweep()->add_batch_size(4);
  cnn.mutable_sweep()->add_batch_size(8);
  const std::string a = Submit(d, TinySpec("mlp"));
  const std::string b = Submit(d, cnn);
  ASSERT_EQ(WaitForEnd(d, a), v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(WaitForEnd(d, b), v1::JOB_STATE_SUCCEEDED);
  {
    grpc::ClientContext ctx;
    v1::ListJobsRequest req;
    req.set_workload("simple_cnn");
    v1::ListJobsResponse resp;
    ASSERT_TRUE(d.stub()->ListJobs(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.jobs_size(), 1);
    EXPECT_EQ(resp.jobs(0).job_id(), b);
  }
  {
    grpc::ClientContext ctx;
    v1::ListJobsRequest req;
    req.add_states(v1::JOB_STATE_SUCCEEDED);
    req.set_page_size(1);
    v1::ListJobsResponse resp;
    ASSERT_TRUE(d.stub()->ListJobs(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.jobs_size(), 1);
    EXPECT_EQ(resp.jobs(0).job_id(), b);  // newest first
    EXPECT_FALSE(resp.next_page_token().empty());
  }
  {
    grpc::ClientContext ctx;
    v1::QueryRunsRequest req;
    req.set_workload("simple_cnn");
    req.add_config_equals("batch_size=4");
    v1::QueryRunsResponse resp;
    ASSERT_TRUE(d.stub()->QueryRuns(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.runs_size(), 1);
    EXPECT_EQ(resp.runs(0).job_id(), b);
    EXPECT_EQ(resp.runs(0).config().batch_size(), 4);
  }
}

// No listing can outgrow the 64 MiB a reply may have: runs come in pages.
TEST(Daemon, RunListingsComeInPages) {
  Daemon d(FreshDir("pages"));
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = TinySpec("empty");
  for (int batch : {1, 2, 3, 4, 5}) spec.mutable_sweep()->add_batch_size(batch);
  const std::string id = Submit(d, spec);
  ASSERT_EQ(WaitForEnd(d, id), v1::JOB_STATE_SUCCEEDED);
  std::vector<int> sizes, batches;
  v1::ListRunsRequest req;
  req.set_job_id(id);
  req.set_include_samples(true);
  req.set_page_size(2);
  do {
    grpc::ClientContext ctx;
    v1::ListRunsResponse resp;
    ASSERT_TRUE(d.stub()->ListRuns(&ctx, req, &resp).ok());
    sizes.push_back(resp.runs_size());
    for (const auto& r : resp.runs()) {
      batches.push_back(r.config().batch_size());
      EXPECT_GT(r.samples().device_ms_size(), 0);
    }
    req.set_page_token(resp.next_page_token());
  } while (!req.page_token().empty() && sizes.size() < 10);
  EXPECT_EQ(sizes, (std::vector<int>{2, 2, 1}));
  EXPECT_EQ(batches, (std::vector<int>{1, 2, 3, 4, 5}));
  grpc::ClientContext bad_ctx;
  req.set_page_token("x");
  v1::ListRunsResponse bad;
  EXPECT_EQ(d.stub()->ListRuns(&bad_ctx, req, &bad).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // With samples, QueryRuns pages by four at most, whatever was asked. (The
  // CLI accepts 64 MiB replies; so does this client.)
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto stub = v1::BenchService::NewStub(
      grpc::CreateCustomChannel(d.address(), grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext ctx;
  v1::QueryRunsRequest query;
  query.set_job_id(id);
  query.set_include_samples(true);
  query.set_page_size(1000);
  v1::QueryRunsResponse page;
  const grpc::Status queried = stub->QueryRuns(&ctx, query, &page);
  ASSERT_TRUE(queried.ok()) << queried.error_code() << " " << queried.error_message();
  EXPECT_EQ(page.runs_size(), 4);
  EXPECT_FALSE(page.next_page_token().empty());
}

TEST(Daemon, CancelQueuedAndRunningJobs) {
  Daemon d(FreshDir("cancel"));
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string running = Submit(d, LongSpec());
  const std::string queued = Submit(d, TinySpec());  // waits for the CPU lease
  Watch(d, running, 0, [](const v1::ProgressEvent& e) { return e.has_run_started(); });
  EXPECT_EQ(GetJob(d, queued).state(), v1::JOB_STATE_QUEUED);
  for (const std::string& id : {queued, running}) {
    grpc::ClientContext ctx;
    v1::CancelJobRequest req;
    req.set_job_id(id);
    v1::CancelJobResponse resp;
    ASSERT_TRUE(d.stub()->CancelJob(&ctx, req, &resp).ok());
  }
  EXPECT_EQ(GetJob(d, queued).state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(WaitForEnd(d, running), v1::JOB_STATE_CANCELLED);
  // The partial run is kept, marked cancelled: measuring stopped at the
  // cancel, well inside the minute the spec asked for.
  auto runs = ListRuns(d, running, false);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_CANCELLED);
  EXPECT_LT(runs[0].result().measured_ms(), LongSpec().measurement().min_time_ms());
}

}  // namespace
}  // namespace gpubench
