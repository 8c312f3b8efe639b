// Faults injected into a real gpubenchd with real workers: a store that
// cannot write, a worker that crashes or hangs inside one sweep point, and
// clients that go away mid-stream. After each, the daemon serves, no
// completed run is lost, and the database passes integrity_check.
#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gpubench/v1/service.grpc.pb.h"
#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "storage/store.h"
#include "tests/support/daemon_process.h"

namespace gpubench {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

v1::JobSpec EmptySpec(int min_iterations) {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("empty");
  spec.mutable_base()->set_device("cpu");
  spec.mutable_base()->set_batch_size(1);
  spec.mutable_measurement()->set_warmup_iterations(1);
  spec.mutable_measurement()->set_min_iterations(min_iterations);
  spec.mutable_measurement()->set_max_time_ms(5000);
  return spec;
}

grpc::Status Submit(Daemon& d, const v1::JobSpec& spec, std::string* id = nullptr) {
  return testing_support::SubmitJobSpec(d, spec, id);
}
v1::Job Get(Daemon& d, const std::string& id) { return testing_support::JobOf(d, id); }
v1::Job WaitForEnd(Daemon& d, const std::string& id) {
  return testing_support::WaitForJobEnd(d, id);
}
std::vector<v1::Run> Runs(Daemon& d, const std::string& id) {
  return testing_support::JobRuns(d, id);
}

void ExpectIntact(const std::string& data_dir) {
  storage::StoreOptions options;
  options.path = data_dir + "/gpubench.db";
  options.check_integrity = true;
  auto store = storage::Store::Open(options);
  EXPECT_TRUE(store.ok()) << store.status();
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

// A store that cannot take a run (its size limit stands in for a full
// disk): the job fails and says so, never "succeeded"; submits are refused
// with RESOURCE_EXHAUSTED; cancel still ends a job; nothing stored is lost.
TEST(Faults, AFullStoreFailsTheJobVisiblyAndRefusesSubmits) {
  const std::string dir = FreshDir("fault_full");
  std::string kept;
  {
    Daemon d(dir);
    ASSERT_TRUE(d.serving()) << d.log();
    ASSERT_TRUE(Submit(d, EmptySpec(5), &kept).ok());
    ASSERT_EQ(WaitForEnd(d, kept).state(), v1::JOB_STATE_SUCCEEDED);
    d.Stop(SIGTERM);
  }
  // Room for a job row and its events, not for 60,000 samples (720 KB).
  const int64_t limit = FileSize(dir + "/gpubench.db") + (96 << 10);
  Daemon d(dir, {"--max-db-bytes", std::to_string(limit)});
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec big = EmptySpec(60000);
  big.mutable_measurement()->set_max_iterations(60000);
  big.mutable_measurement()->set_min_time_ms(0);
  std::string id;
  ASSERT_TRUE(Submit(d, big, &id).ok());
  const v1::Job job = WaitForEnd(d, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(job.error().find("could not be stored"), std::string::npos) << job.error();
  EXPECT_TRUE(Runs(d, id).empty());

  grpc::Status refused = Submit(d, EmptySpec(5));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << refused.error_message();

  // A job the store still shows running with nothing running it (its end
  // could not be written) ends when cancelled.
  std::string orphan;
  {
    auto store = storage::Store::Open({dir + "/gpubench.db"});
    ASSERT_TRUE(store.ok()) << store.status();
    v1::Job planted;
    *planted.mutable_spec() = EmptySpec(5);
    planted.set_state(v1::JOB_STATE_RUNNING);
    orphan = *(*store)->jobs().Insert(planted);
  }
  grpc::ClientContext ctx;
  v1::CancelJobRequest cancel;
  cancel.set_job_id(orphan);
  v1::CancelJobResponse cancelled;
  ASSERT_TRUE(d.stub()->CancelJob(&ctx, cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.job().state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(Get(d, orphan).state(), v1::JOB_STATE_CANCELLED);

  // What was stored before is all there, and the file is sound.
  EXPECT_EQ(Runs(d, kept).size(), 1u);
  EXPECT_EQ(d.Stop(SIGTERM), 0);
  ExpectIntact(dir);

  // With room again, jobs run.
  Daemon roomy(dir);
  ASSERT_TRUE(roomy.serving()) << roomy.log();
  ASSERT_TRUE(Submit(roomy, EmptySpec(5), &id).ok());
  EXPECT_EQ(WaitForEnd(roomy, id).state(), v1::JOB_STATE_SUCCEEDED);
}

// A database with damaged pages stops start-up with a message that says
// what is wrong, and the file is left as it was.
TEST(Faults, ADamagedDatabaseStopsStartUpSayingWhy) {
  const std::string dir = FreshDir("fault_damaged");
  {
    Daemon d(dir);
    ASSERT_TRUE(d.serving()) << d.log();
    v1::JobSpec spec = EmptySpec(2000);
    for (int batch : {1, 2, 3, 4, 5, 6, 7, 8}) spec.mutable_sweep()->add_batch_size(batch);
    std::string id;
    ASSERT_TRUE(Submit(d, spec, &id).ok());
    ASSERT_EQ(WaitForEnd(d, id).state(), v1::JOB_STATE_SUCCEEDED);
    EXPECT_EQ(d.Stop(SIGTERM), 0);
  }
  const std::string path = dir + "/gpubench.db";
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 16u * 4096);
  for (size_t offset = 4096; offset + 4096 <= bytes.size(); offset += 4096) {
    for (size_t i = 0; i < 24; ++i) bytes[offset + 8 + i * 7] ^= 0x5a;
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  Daemon damaged(dir);
  EXPECT_FALSE(damaged.serving());
  const int status = damaged.Stop(SIGKILL);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  const std::string log = damaged.log();
  // What SQLite found (integrity_check's lines, or the error that stopped it
  // reading the schema), then that the file was not touched.
  const size_t at = log.rfind("gpubench.db");
  ASSERT_NE(at, std::string::npos) << log;
  const std::string reason = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(reason.find("left untouched"), std::string::npos) << reason;
  EXPECT_TRUE(reason.find("malformed") != std::string::npos ||
              reason.find("integrity_check: ") != std::string::npos)
      << reason;
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), bytes);
}

// A worker that dies inside one sweep point (a user model crashing
// LibTorch): that point fails with the signal, the others run in a fresh
// worker.
TEST(Faults, AWorkerCrashCostsOnlyItsSweepPoint) {
  setenv("GPUBENCH_INJECT_CRASH_AT_BATCH", "2", 1);
  Daemon d(FreshDir("fault_crash"));
  unsetenv("GPUBENCH_INJECT_CRASH_AT_BATCH");
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = EmptySpec(5);
  for (int batch : {1, 2, 4}) spec.mutable_sweep()->add_batch_size(batch);
  std::string id;
  ASSERT_TRUE(Submit(d, spec, &id).ok());
  const v1::Job job = WaitForEnd(d, id);
  // Failed, not succeeded, with the other points kept.
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(job.error().find("1 of 3 runs failed"), std::string::npos) << job.error();
  EXPECT_EQ(job.runs_done(), 3);
  EXPECT_EQ(job.runs_failed(), 1);
  auto runs = Runs(d, id);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_SUCCEEDED) << runs[0].error();
  EXPECT_EQ(runs[1].state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(runs[1].config().batch_size(), 2);
  EXPECT_NE(runs[1].error().find("signal 11"), std::string::npos) << runs[1].error();
  EXPECT_EQ(runs[2].state(), v1::RUN_STATE_SUCCEEDED) << runs[2].error();
  EXPECT_NE(job.worker_exit().find("signal 11"), std::string::npos) << job.worker_exit();
  EXPECT_EQ(d.Stop(SIGTERM), 0);
  ExpectIntact(d.data_dir());
}

// A worker that fills its scratch folder (the one place it may write, as a
// model writing its TMPDIR would) is killed at --worker-max-scratch-bytes:
// its run fails saying so, not as out of memory, the sweep goes on in a
// fresh worker, and no scratch folder is left on the disk.
TEST(Faults, AWorkerFillingItsScratchFolderIsKilledAtTheLimit) {
  setenv("GPUBENCH_INJECT_SCRATCH_BYTES", "67108864", 1);  // 64 MiB a run
  Daemon d(FreshDir("fault_scratch"), {"--worker-max-scratch-bytes", "16777216"});
  unsetenv("GPUBENCH_INJECT_SCRATCH_BYTES");
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = EmptySpec(5);
  spec.mutable_measurement()->set_min_time_ms(4000);  // unless killed
  spec.mutable_measurement()->set_max_iterations(100000000);
  spec.mutable_sweep()->add_batch_size(1);
  spec.mutable_sweep()->add_batch_size(2);
  std::string id;
  ASSERT_TRUE(Submit(d, spec, &id).ok());
  const v1::Job job = WaitForEnd(d, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  auto runs = Runs(d, id);
  ASSERT_EQ(runs.size(), 2u);
  for (const v1::Run& run : runs) {
    EXPECT_EQ(run.state(), v1::RUN_STATE_FAILED) << run.error();
    EXPECT_NE(run.error().find("scratch folder held"), std::string::npos) << run.error();
    EXPECT_NE(run.error().find("--worker-max-scratch-bytes"), std::string::npos);
  }
  EXPECT_EQ(std::system(("test -z \"$(ls -A '" + d.data_dir() + "/work')\"").c_str()), 0);
}

// A worker that hangs and ignores SIGTERM is killed at the job's timeout;
// the runs before it are kept and the next job runs.
TEST(Faults, AHungWorkerIsKilledAtTheTimeoutAndTheNextJobRuns) {
  setenv("GPUBENCH_INJECT_HANG_AT_BATCH", "2", 1);
  Daemon d(FreshDir("fault_hang"), {"--stop-grace-ms", "500"});
  unsetenv("GPUBENCH_INJECT_HANG_AT_BATCH");
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = EmptySpec(5);
  spec.mutable_sweep()->add_batch_size(1);
  spec.mutable_sweep()->add_batch_size(2);
  spec.set_timeout_s(3);
  std::string hung, next;
  ASSERT_TRUE(Submit(d, spec, &hung).ok());
  ASSERT_TRUE(Submit(d, EmptySpec(5), &next).ok());
  const v1::Job job = WaitForEnd(d, hung);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(job.error().find("timed out after 3 s"), std::string::npos) << job.error();
  EXPECT_NE(job.worker_exit().find("signal 9"), std::string::npos) << job.worker_exit();
  auto runs = Runs(d, hung);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(WaitForEnd(d, next).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(d.Stop(SIGTERM), 0);
  ExpectIntact(d.data_dir());
}

// A worker above the daemon's memory limit is killed and its run ran out of
// memory, saying which limit; the daemon serves on.
TEST(Faults, AWorkerOverTheMemoryLimitFailsItsRunSayingWhichLimit) {
  // Any worker with LibTorch loaded is far above 20 MB.
  Daemon d(FreshDir("fault_rss"), {"--worker-max-rss-bytes", "20000000"});
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = EmptySpec(5);
  spec.mutable_measurement()->set_min_time_ms(4000);
  std::string id;
  ASSERT_TRUE(Submit(d, spec, &id).ok());
  const v1::Job job = WaitForEnd(d, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  auto runs = Runs(d, id);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_OUT_OF_MEMORY);
  EXPECT_NE(runs[0].error().find("passed the host memory limit of 20000000 bytes"),
            std::string::npos)
      << runs[0].error();
  EXPECT_EQ(d.Stop(SIGTERM), 0);
  ExpectIntact(d.data_dir());
}

// The memory limit of the tests below, well above what a worker holds before
// its first run (about 150 MiB with Debian's LibTorch, up to 470 MB with the
// wheel's, which maps its CUDA libraries too). mlp's input is 3x32x32 floats,
// 12 KiB a sample, and four batches are kept on the device: 16 samples are
// under 1 MiB, kOverTheLimit are 1.97 GB, twice the limit.
constexpr char kWorkerRssLimit[] = "1000000000";
constexpr int kOverTheLimit = 40000;

// A CPU batch sweep that outgrows the host's memory: Linux overcommits, so
// the allocation succeeds and the worker grows until the daemon's memory
// limit kills it. That batch ran out of memory, the larger one is skipped
// in the fresh worker (as after a GPU's out-of-memory error), the smaller
// ones stand, and the job reports the largest batch that fit.
TEST(Faults, ACpuBatchSweepSkipsTheBatchesAfterTheOneThatOutgrewMemory) {
  Daemon d(FreshDir("fault_cpu_oom"), {"--worker-max-rss-bytes", kWorkerRssLimit});
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("mlp");
  spec.mutable_base()->set_device("cpu");
  spec.mutable_base()->set_mode(v1::MODE_INFER);
  for (int batch : {16, kOverTheLimit, kOverTheLimit + 10000, 32}) {
    spec.mutable_sweep()->add_batch_size(batch);
  }
  spec.mutable_measurement()->set_warmup_iterations(1);
  spec.mutable_measurement()->set_min_iterations(3);
  spec.mutable_measurement()->set_max_time_ms(2000);
  std::string id;
  ASSERT_TRUE(Submit(d, spec, &id).ok());
  const v1::Job job = WaitForEnd(d, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  auto runs = Runs(d, id);
  ASSERT_EQ(runs.size(), 4u);
  std::map<int, v1::Run> by_batch;
  for (const v1::Run& r : runs) by_batch[r.config().batch_size()] = r;
  EXPECT_EQ(by_batch[16].state(), v1::RUN_STATE_SUCCEEDED) << by_batch[16].error();
  EXPECT_EQ(by_batch[32].state(), v1::RUN_STATE_SUCCEEDED) << by_batch[32].error();
  EXPECT_EQ(by_batch[kOverTheLimit].state(), v1::RUN_STATE_OUT_OF_MEMORY) << by_batch[kOverTheLimit].error();
  EXPECT_NE(by_batch[kOverTheLimit].error().find("host memory limit"), std::string::npos)
      << by_batch[kOverTheLimit].error();
  EXPECT_EQ(by_batch[kOverTheLimit + 10000].state(), v1::RUN_STATE_SKIPPED_AFTER_OOM)
      << by_batch[kOverTheLimit + 10000].error();
  const v1::Run& skipped = by_batch[kOverTheLimit + 10000];
  EXPECT_NE(skipped.error().find(absl::StrCat("batch size ", kOverTheLimit)), std::string::npos)
      << skipped.error();
  ASSERT_EQ(job.max_batch_size_fits().size(), 1u);
  EXPECT_EQ(job.max_batch_size_fits().begin()->second, 32);
  EXPECT_EQ(d.Stop(SIGTERM), 0);
}

// A sweep in which nothing was measured (its one batch ran out of memory,
// the larger one was skipped after it) failed, saying so: "succeeded" would
// read as a result.
TEST(Faults, AJobInWhichNoRunWasMeasuredFails) {
  Daemon d(FreshDir("fault_none_measured"), {"--worker-max-rss-bytes", kWorkerRssLimit});
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("mlp");
  spec.mutable_base()->set_device("cpu");
  spec.mutable_base()->set_mode(v1::MODE_INFER);
  for (int batch : {kOverTheLimit, kOverTheLimit + 10000}) {
    spec.mutable_sweep()->add_batch_size(batch);
  }
  spec.mutable_measurement()->set_warmup_iterations(1);
  spec.mutable_measurement()->set_min_iterations(3);
  spec.mutable_measurement()->set_max_time_ms(2000);
  std::string id;
  ASSERT_TRUE(Submit(d, spec, &id).ok());
  const v1::Job job = WaitForEnd(d, id);
  auto runs = Runs(d, id);
  ASSERT_EQ(runs.size(), 2u);
  for (const v1::Run& r : runs) EXPECT_NE(r.state(), v1::RUN_STATE_SUCCEEDED) << r.error();
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(job.error().find("no run was measured"), std::string::npos) << job.error();
  EXPECT_EQ(d.Stop(SIGTERM), 0);
}

// Clients that vanish mid-watch and mid-upload leave no reactor behind, no
// temporary file, and a daemon that serves the next call.
TEST(Faults, ClientsThatDisconnectMidStreamLeaveNothingBehind) {
  Daemon d(FreshDir("fault_disconnect"));
  ASSERT_TRUE(d.serving()) << d.log();
  std::string id;
  v1::JobSpec slow = EmptySpec(5);
  slow.mutable_measurement()->set_min_time_ms(3000);
  ASSERT_TRUE(Submit(d, slow, &id).ok());
  for (int i = 0; i < 20; ++i) {
    auto channel = grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials());
    auto stub = v1::BenchService::NewStub(channel);
    grpc::ClientContext ctx;
    v1::WatchJobRequest req;
    req.set_job_id(id);
    auto reader = stub->WatchJob(&ctx, req);
    v1::WatchJobResponse resp;
    reader->Read(&resp);
    ctx.TryCancel();
  }  // each channel closes with its stub
  for (int i = 0; i < 5; ++i) {
    auto channel = grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials());
    auto stub = v1::BenchService::NewStub(channel);
    grpc::ClientContext ctx;
    v1::UploadModelResponse resp;
    auto writer = stub->UploadModel(&ctx, &resp);
    v1::UploadModelRequest req;
    const std::string data(1 << 20, 'x');
    req.mutable_header()->set_name("half");
    req.mutable_header()->set_sha256(Sha256Hex(data + data));
    req.mutable_header()->set_size_bytes(2 * data.size());
    writer->Write(req);
    req.set_chunk(data);
    writer->Write(req);
    ctx.TryCancel();
  }
  EXPECT_EQ(WaitForEnd(d, id).state(), v1::JOB_STATE_SUCCEEDED);
  ASSERT_TRUE(Submit(d, EmptySpec(5), &id).ok());
  EXPECT_EQ(WaitForEnd(d, id).state(), v1::JOB_STATE_SUCCEEDED);
  // No half-written upload is left in the model directory.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  DIR* models = opendir((d.data_dir() + "/models").c_str());
  ASSERT_NE(models, nullptr);
  while (dirent* e = readdir(models)) {
    EXPECT_EQ(std::string(e->d_name).rfind(".upload-", 0), std::string::npos) << e->d_name;
  }
  closedir(models);
  EXPECT_EQ(d.Stop(SIGTERM), 0);
  ExpectIntact(d.data_dir());
}

}  // namespace
}  // namespace gpubench
