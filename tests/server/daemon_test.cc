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

namespace gpubench {
namespace {

using testing_support::Daemon;
using testing_support::RunCommand;
using testing_support::FreshDir;
using testing_support::TinySpec;
using testing_support::WorkerChildren;

using std::chrono::milliseconds;

// A job that measures for a minute unless stopped.
v1::JobSpec LongSpec() {
  v1::JobSpec spec = TinySpec();
  spec.set_name("long");
  spec.mutable_measurement()->set_min_time_ms(60000);
  spec.mutable_measurement()->set_max_time_ms(60000);
  spec.mutable_measurement()->set_cv_threshold(0.0001);
  // The default cap of 100,000 iterations ends a tiny CPU model in about 2 s
  // on a quiet machine: no cap within the minute.
  spec.mutable_measurement()->set_max_iterations(100000000);
  return spec;
}

std::string Submit(Daemon& d, const v1::JobSpec& spec) {
  grpc::ClientContext ctx;
  v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  v1::SubmitJobResponse resp;
  grpc::Status s = d.stub()->SubmitJob(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp.job().job_id();
}

v1::Job GetJob(Daemon& d, const std::string& id) {
  grpc::ClientContext ctx;
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::GetJobResponse resp;
  grpc::Status s = d.stub()->GetJob(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp.job();
}

// Watches a job from after_sequence until the stream ends (or stop_when
// returns true for an event). Returns the events.
std::vector<v1::ProgressEvent> Watch(
    Daemon& d, const std::string& id, int64_t after = 0,
    const std::function<bool(const v1::ProgressEvent&)>& stop_when = nullptr,
    grpc::Status* status = nullptr) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  v1::WatchJobRequest req;
  req.set_job_id(id);
  req.set_after_sequence(after);
  auto reader = d.stub()->WatchJob(&ctx, req);
  std::vector<v1::ProgressEvent> events;
  v1::WatchJobResponse resp;
  while (reader->Read(&resp)) {
    events.push_back(resp.event());
    if (stop_when && stop_when(resp.event())) {
      ctx.TryCancel();
      break;
    }
  }
  grpc::Status s = reader->Finish();
  if (status) *status = s;
  return events;
}

v1::JobState WaitForEnd(Daemon& d, const std::string& id) {
  Watch(d, id);
  return GetJob(d, id).state();
}

std::vector<v1::Run> ListRuns(Daemon& d, const std::string& id, bool samples) {
  grpc::ClientContext ctx;
  v1::ListRunsRequest req;
  req.set_job_id(id);
  req.set_include_samples(samples);
  v1::ListRunsResponse resp;
  EXPECT_TRUE(d.stub()->ListRuns(&ctx, req, &resp).ok());
  return {resp.runs().begin(), resp.runs().end()};
}

bool IsState(const v1::ProgressEvent& e, v1::JobState s) {
  return e.has_state_changed() && e.state_changed().state() == s;
}

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
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(WaitForEnd(d, running), v1::JOB_STATE_CANCELLED);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  // The partial run is kept, marked cancelled.
  auto runs = ListRuns(d, running, false);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_CANCELLED);
}

TEST(Daemon, JobTimeoutFailsTheJob) {
  Daemon d(FreshDir("timeout"));
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = LongSpec();
  spec.set_timeout_s(2);
  const std::string id = Submit(d, spec);
  EXPECT_EQ(WaitForEnd(d, id), v1::JOB_STATE_FAILED);
  EXPECT_NE(GetJob(d, id).error().find("timed out after 2 s"), std::string::npos)
      << GetJob(d, id).error();
}

TEST(Daemon, KilledWorkerFailsItsJobAndTheNextJobRuns) {
  Daemon d(FreshDir("worker_kill"));
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string victim = Submit(d, LongSpec());
  const std::string next = Submit(d, TinySpec());
  Watch(d, victim, 0, [](const v1::ProgressEvent& e) { return e.has_run_progress(); });
  std::vector<pid_t> workers = WorkerChildren(d.pid());
  ASSERT_EQ(workers.size(), 1u);
  kill(workers[0], SIGKILL);
  EXPECT_EQ(WaitForEnd(d, victim), v1::JOB_STATE_FAILED);
  const v1::Job job = GetJob(d, victim);
  EXPECT_NE(job.worker_exit().find("signal 9"), std::string::npos) << job.worker_exit();
  EXPECT_NE(job.error().find("the worker died in 1 run(s), last with signal 9"),
            std::string::npos)
      << job.error();
  auto runs = ListRuns(d, victim, false);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(runs[0].error().find("the worker died in this run (signal 9"), std::string::npos)
      << runs[0].error();
  EXPECT_EQ(WaitForEnd(d, next), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(ListRuns(d, next, false).size(), 1u);
  d.Stop(SIGTERM);
  auto store = storage::Store::Open({d.data_dir() + "/gpubench.db"});
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(*(*store)->IntegrityCheck(), "ok");
}

TEST(Daemon, KilledDaemonInterruptsAndRequeuesTheJobKeepingItsRuns) {
  const std::string dir = FreshDir("daemon_kill");
  v1::JobSpec spec = TinySpec();
  // Three runs; the third measures long enough to be killed in.
  spec.mutable_sweep()->add_batch_size(4);
  spec.mutable_sweep()->add_batch_size(8);
  spec.mutable_sweep()->add_batch_size(16);
  spec.mutable_measurement()->set_min_time_ms(1500);
  std::string id, first_run_id;
  {
    Daemon d(dir);
    ASSERT_TRUE(d.serving()) << d.log();
    id = Submit(d, spec);
    Watch(d, id, 0, [](const v1::ProgressEvent& e) { return e.has_run_finished(); });
    d.Stop(SIGKILL);
  }
  {
    auto store = storage::Store::Open({dir + "/gpubench.db"});
    ASSERT_TRUE(store.ok()) << store.status();
    auto runs = (*store)->runs().List(id, false);
    ASSERT_TRUE(runs.ok());
    ASSERT_GE(runs->size(), 1u);
    first_run_id = (*runs)[0].run_id();
    EXPECT_EQ((*store)->jobs().Get(id)->state(), v1::JOB_STATE_RUNNING);
  }
  Daemon d(dir);
  ASSERT_TRUE(d.serving()) << d.log();
  auto events = Watch(d, id);
  bool interrupted = false;
  for (const auto& e : events) interrupted |= IsState(e, v1::JOB_STATE_INTERRUPTED);
  EXPECT_TRUE(interrupted);
  const v1::Job job = GetJob(d, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  EXPECT_EQ(job.attempt(), 2);
  auto runs = ListRuns(d, id, true);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].run_id(), first_run_id);  // kept, not rerun
  for (const auto& r : runs) EXPECT_EQ(r.state(), v1::RUN_STATE_SUCCEEDED);
  d.Stop(SIGTERM);
  auto store = storage::Store::Open({dir + "/gpubench.db"});
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(*(*store)->IntegrityCheck(), "ok");
}

TEST(Daemon, SigtermStopsCleanlyAndTheJobResumesOnRestart) {
  const std::string dir = FreshDir("sigterm");
  std::string id;
  {
    Daemon d(dir);
    ASSERT_TRUE(d.serving()) << d.log();
    // Two sweep points: the stop cancels the first mid-run and the second
    // before it starts.
    v1::JobSpec spec = LongSpec();
    spec.mutable_measurement()->set_min_time_ms(3000);
    spec.mutable_measurement()->set_max_time_ms(3000);
    // 3 s a point, under the default iteration cap: the resumed runs' samples
    // must fit the reply that lists them below.
    spec.mutable_measurement()->clear_max_iterations();
    spec.mutable_sweep()->add_batch_size(4);
    spec.mutable_sweep()->add_batch_size(8);
    id = Submit(d, spec);
    Watch(d, id, 0, [](const v1::ProgressEvent& e) { return e.has_run_progress(); });
    const int status = d.Stop(SIGTERM);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << d.log();
  }
  {
    auto store = storage::Store::Open({dir + "/gpubench.db"});
    ASSERT_TRUE(store.ok());
    EXPECT_EQ((*store)->jobs().Get(id)->state(), v1::JOB_STATE_QUEUED);  // requeued
    auto runs = (*store)->runs().List(id, false);
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 2u);
    for (const auto& r : *runs) EXPECT_EQ(r.state(), v1::RUN_STATE_CANCELLED);
  }
  Daemon d(dir);
  ASSERT_TRUE(d.serving()) << d.log();
  EXPECT_EQ(WaitForEnd(d, id), v1::JOB_STATE_SUCCEEDED);
  // The resumed job ran both points again rather than skipping them.
  auto runs = ListRuns(d, id, true);
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& r : runs) {
    EXPECT_EQ(r.state(), v1::RUN_STATE_SUCCEEDED) << r.error();
    EXPECT_GT(r.result().throughput_samples_per_s(), 0);
    EXPECT_EQ(r.samples().device_ms_size(), r.result().iterations());
  }
}

TEST(Daemon, FullQueueIsResourceExhausted) {
  Daemon d(FreshDir("full"), {"--max-queue", "1"});
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string running = Submit(d, LongSpec());
  Watch(d, running, 0, [](const v1::ProgressEvent& e) { return e.has_run_started(); });
  Submit(d, TinySpec());  // queued: the queue is now full
  grpc::ClientContext ctx;
  v1::SubmitJobRequest req;
  *req.mutable_spec() = TinySpec();
  v1::SubmitJobResponse resp;
  EXPECT_EQ(d.stub()->SubmitJob(&ctx, req, &resp).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}

// Settings from a config file (either spelling of a name), under the
// command line; a bad line stops start-up naming it.
TEST(Daemon, ConfigFileSettingsApplyUnderTheCommandLine) {
  const std::string dir = FreshDir("config");
  const std::string conf = dir + "/gpubenchd.conf";
  std::ofstream(conf) << "# a queue that takes nothing\nmax-queue = 0\nmax_priority = 3\n";
  Daemon d(dir, {"--config=" + conf, "--max-priority=50"});
  ASSERT_TRUE(d.serving()) << d.log();
  grpc::ClientContext ctx;
  v1::SubmitJobRequest req;
  *req.mutable_spec() = TinySpec();
  req.mutable_spec()->set_priority(40);  // allowed: the command line's 50 wins over 3
  v1::SubmitJobResponse resp;
  grpc::Status s = d.stub()->SubmitJob(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_NE(s.error_message().find("queue is full (0 jobs)"), std::string::npos)
      << s.error_message();

  std::ofstream(conf) << "max-queue = 0\nmax-qeueu = 5\n";
  Daemon bad(FreshDir("config_bad"), {"--config", conf});
  EXPECT_FALSE(bad.serving());
  const int status = bad.Stop(SIGKILL);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  EXPECT_NE(bad.log().find("gpubenchd.conf:2: unknown flag --max-qeueu"), std::string::npos)
      << bad.log();
}

TEST(Daemon, CorruptDatabaseStopsStartUpAndIsLeftUntouched) {
  const std::string dir = FreshDir("corrupt");
  const std::string garbage(8192, 'x');
  std::ofstream(dir + "/gpubench.db") << garbage;
  Daemon d(dir);
  EXPECT_FALSE(d.serving());
  const int status = d.Stop(SIGKILL);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  EXPECT_NE(d.log().find(dir + "/gpubench.db"), std::string::npos) << d.log();
  std::ifstream in(dir + "/gpubench.db");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), garbage);
}

// A database file cut to 0 bytes (a crash, a full disk, a bad copy) stops
// start-up, saying what to do, instead of becoming an empty store; a data
// directory without one starts fresh.
TEST(Daemon, AnEmptyDatabaseFileStopsStartUpSayingWhatToDo) {
  const std::string dir = FreshDir("empty_db");
  std::ofstream(dir + "/gpubench.db").close();
  Daemon d(dir);
  EXPECT_FALSE(d.serving());
  const int status = d.Stop(SIGKILL);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  EXPECT_NE(d.log().find(dir + "/gpubench.db exists but is empty (0 bytes)"), std::string::npos)
      << d.log();
  EXPECT_NE(d.log().find("Restore it from a backup"), std::string::npos) << d.log();
  struct stat st;
  ASSERT_EQ(stat((dir + "/gpubench.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0);

  std::remove((dir + "/gpubench.db").c_str());
  Daemon fresh(dir);
  EXPECT_TRUE(fresh.serving()) << fresh.log();
}

TEST(Daemon, HostInfoIsProbedAtStartUp) {
  Daemon d(FreshDir("host"));
  ASSERT_TRUE(d.serving()) << d.log();
  grpc::ClientContext ctx;
  v1::GetHostInfoResponse resp;
  ASSERT_TRUE(d.stub()->GetHostInfo(&ctx, {}, &resp).ok());
  EXPECT_FALSE(resp.host().hostname().empty());
  EXPECT_FALSE(resp.host().torch_version().empty()) << d.log();
  EXPECT_GT(resp.host().cpu_cores(), 0);
  EXPECT_FALSE(resp.host().gpubench_version().empty());
}

// Uploads data in 64 KiB chunks under a claimed sha256.
grpc::Status Upload(Daemon& d, const std::string& data, const std::string& sha256,
                    v1::UploadModelResponse* resp) {
  grpc::ClientContext ctx;
  auto writer = d.stub()->UploadModel(&ctx, resp);
  v1::UploadModelRequest req;
  req.mutable_header()->set_name("tiny.pt");
  req.mutable_header()->set_sha256(sha256);
  req.mutable_header()->set_size_bytes(data.size());
  writer->Write(req);
  for (size_t off = 0; off < data.size(); off += 65536) {
    req.set_chunk(data.substr(off, 65536));
    if (!writer->Write(req)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

TEST(Daemon, UploadedModelIsHashCheckedAndStoredOncePerHash) {
  const std::string dir = FreshDir("upload");
  Daemon d(dir);
  ASSERT_TRUE(d.serving()) << d.log();
  std::string data(300000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 % 251);
  const std::string sha = Sha256Hex(data);

  v1::UploadModelResponse wrong;
  grpc::Status s = Upload(d, data, std::string(64, '0'), &wrong);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("header.sha256"), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find(sha), std::string::npos) << s.error_message();

  v1::UploadModelResponse first, second;
  ASSERT_TRUE(Upload(d, data, sha, &first).ok());
  EXPECT_EQ(first.model().sha256(), sha);
  EXPECT_EQ(first.model().size_bytes(), 300000);
  EXPECT_FALSE(first.already_present());
  ASSERT_TRUE(Upload(d, data, sha, &second).ok());
  EXPECT_TRUE(second.already_present());
  // One file under models/, with the uploaded bytes; no temporary left.
  int files = 0;
  DIR* models = opendir((dir + "/models").c_str());
  ASSERT_NE(models, nullptr);
  while (dirent* e = readdir(models)) files += e->d_name[0] != '.';
  closedir(models);
  EXPECT_EQ(files, 1);
  std::ifstream in(dir + "/models/" + sha, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), data);
}

TEST(Daemon, TraceStreamsInChunksThatReassembleToTheStoredTrace) {
  const std::string dir = FreshDir("trace");
  Daemon d(dir);
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string id = Submit(d, TinySpec());
  ASSERT_EQ(WaitForEnd(d, id), v1::JOB_STATE_SUCCEEDED);
  const std::string run_id = ListRuns(d, id, false).at(0).run_id();
  // A 3 MiB trace, stored beside the running daemon (SQLite WAL allows it).
  std::string trace = "{\"traceEvents\":[";
  while (trace.size() < (3u << 20)) {
    trace += "{\"name\":\"aten::mm\",\"ph\":\"X\",\"ts\":" + std::to_string(trace.size()) +
             ",\"dur\":5},";
  }
  trace += "{}]}";
  {
    auto store = storage::Store::Open({dir + "/gpubench.db"});
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->runs().PutTrace(run_id, "chrome", trace).ok());
  }
  grpc::ClientContext ctx;
  v1::GetTraceRequest req;
  req.set_run_id(run_id);
  auto reader = d.stub()->GetTrace(&ctx, req);
  v1::GetTraceResponse resp;
  v1::TraceInfo info;
  std::string got;
  int chunks = 0;
  while (reader->Read(&resp)) {
    if (resp.has_info()) info = resp.info();
    if (resp.part_case() == v1::GetTraceResponse::kChunk) {
      got += resp.chunk();
      ++chunks;
    }
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(got, trace);
  EXPECT_GE(chunks, 3);
  EXPECT_EQ(info.size_bytes(), static_cast<int64_t>(trace.size()));
  EXPECT_EQ(info.sha256(), Sha256Hex(trace));
  EXPECT_LT(info.compressed_size_bytes(), info.size_bytes());

  grpc::ClientContext ctx2;
  req.set_run_id("rnope");
  auto missing = d.stub()->GetTrace(&ctx2, req);
  while (missing->Read(&resp)) {
  }
  EXPECT_EQ(missing->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(Daemon, HigherPriorityRunsFirstAndEqualPrioritiesInSubmitOrder) {
  Daemon d(FreshDir("priority"));
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string blocker = Submit(d, LongSpec());
  Watch(d, blocker, 0, [](const v1::ProgressEvent& e) { return e.has_run_started(); });
  v1::JobSpec low = TinySpec(), high = TinySpec();
  high.set_priority(10);
  const std::string low_a = Submit(d, low);
  const std::string low_b = Submit(d, low);
  const std::string urgent = Submit(d, high);
  grpc::ClientContext ctx;
  v1::CancelJobRequest cancel;
  cancel.set_job_id(blocker);
  v1::CancelJobResponse cancelled;
  ASSERT_TRUE(d.stub()->CancelJob(&ctx, cancel, &cancelled).ok());
  for (const std::string& id : {low_a, low_b, urgent}) {
    ASSERT_EQ(WaitForEnd(d, id), v1::JOB_STATE_SUCCEEDED);
  }
  auto started = [&](const std::string& id) {
    const v1::Job j = GetJob(d, id);
    return j.start_time().seconds() * 1000000000LL + j.start_time().nanos();
  };
  EXPECT_LT(started(urgent), started(low_a));
  EXPECT_LT(started(low_a), started(low_b));
}

TEST(Daemon, ProfiledRunStoresAChromeTraceAndAnOperatorTable) {
  Daemon d(FreshDir("profile"));
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = TinySpec("simple_cnn");
  spec.mutable_base()->set_mode(v1::MODE_TRAIN);
  spec.mutable_profiling()->set_enabled(true);
  spec.mutable_profiling()->set_iterations(3);
  const std::string id = Submit(d, spec);
  ASSERT_EQ(WaitForEnd(d, id), v1::JOB_STATE_SUCCEEDED) << GetJob(d, id).error();
  const v1::Run run = ListRuns(d, id, false).at(0);
  const v1::ProfileSummary& p = run.result().profile();
  ASSERT_TRUE(p.has_trace()) << run.result().DebugString();
  ASSERT_FALSE(p.top_operators().empty());
  double shares = 0;
  for (const auto& c : p.categories()) shares += c.share();
  EXPECT_NEAR(shares, 1.0, 0.01);
  EXPECT_GT(p.top_operators(0).self_time_us(), 0);

  grpc::ClientContext ctx;
  v1::GetTraceRequest req;
  req.set_run_id(run.run_id());
  auto reader = d.stub()->GetTrace(&ctx, req);
  v1::GetTraceResponse resp;
  std::string json;
  while (reader->Read(&resp)) json += resp.chunk();
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(Sha256Hex(json), p.trace_sha256());
  google::protobuf::Struct trace;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &trace).ok())
      << json.substr(0, 300);
  // Complete events on one thread, some nested inside others.
  struct Span {
    std::string thread;
    double start, end;
  };
  std::vector<Span> spans;
  for (const auto& v : trace.fields().at("traceEvents").list_value().values()) {
    const auto& f = v.struct_value().fields();
    if (!f.count("ph") || f.at("ph").string_value() != "X" || !f.count("dur")) continue;
    auto num = [](const google::protobuf::Value& x) {
      return x.has_number_value() ? x.number_value() : std::atof(x.string_value().c_str());
    };
    const std::string thread = f.count("tid") ? f.at("tid").ShortDebugString() : "";
    spans.push_back({thread, num(f.at("ts")), num(f.at("ts")) + num(f.at("dur"))});
  }
  ASSERT_GT(spans.size(), 10u);
  int nested = 0;
  for (const Span& a : spans) {
    for (const Span& b : spans) {
      if (&a != &b && a.thread == b.thread && a.start <= b.start && b.end <= a.end &&
          a.end - a.start > b.end - b.start) {
        ++nested;
      }
    }
  }
  EXPECT_GT(nested, 0);
}

}  // namespace
}  // namespace gpubench
