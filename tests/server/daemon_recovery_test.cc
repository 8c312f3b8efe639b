// The daemon end to end, what goes wrong: timeouts, killed workers and
// daemons, restarts, config files, damaged databases; and host info,
// uploads, traces, priorities and profiles.
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

// A daemon killed while a run had the GPU's power limit and clocks set
// left them set and said so in its data directory: the next daemon undoes
// them before anything runs, with or without --allow-clock-control.
TEST(Daemon, WhatAKilledDaemonLeftSetOnItsGpuIsUndoneAtTheNextStart) {
  const std::string dir = FreshDir("daemon_clocks");
  const std::string gpu = dir + "-gpu";
  std::ofstream(gpu) << "420000 1410\n";  // the stand-in GPU as the run left it
  std::ofstream(dir + "/clock_state") << "00000000:1B:00.0 700000 1\n";
  setenv("GPUBENCH_NVML_LIBRARY", FAKE_NVML_PATH, 1);
  setenv("FAKE_NVML_STATE", gpu.c_str(), 1);
  {
    Daemon d(dir);
    ASSERT_TRUE(d.serving()) << d.log();
    std::ifstream in(gpu);
    std::string state((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(state, "700000 0\n");
    EXPECT_NE(d.log().find("the last daemon stopped mid-run; undone: 00000000:1B:00.0: power "
                           "limit back to 700 W, clocks unlocked"),
              std::string::npos)
        << d.log();
    EXPECT_NE(access((dir + "/clock_state").c_str(), F_OK), 0);
  }
  unsetenv("FAKE_NVML_STATE");
  unsetenv("GPUBENCH_NVML_LIBRARY");
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
