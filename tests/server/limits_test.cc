// What one caller may take from the others, and what an admin can still do
// when a limit is hit, against real daemons: a submitter's share of the
// queue, an idle upload's share of the model quota, `model rm` on a full
// disk, schedules whose jobs cannot be submitted or whose time zone is not
// a zone, a job that ends while the disk is full, and a model's error
// message, which the model chooses.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <utility>

#include "common/sha256.h"
#include "google/protobuf/util/time_util.h"
#include "gpubench/v1/service.grpc.pb.h"
#include "storage/store.h"
#include "tests/support/callers.h"
#include "tests/support/daemon_process.h"
#include "tests/support/script_model.h"

namespace gpubench {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;
using testing_support::TinySpec;
using testing_support::kAdmin;
using testing_support::kAlice;
using testing_support::kBob;
using testing_support::WriteTokenFile;
using testing_support::Auth;
using testing_support::Submit;
using testing_support::Upload;

v1::JobState StateOf(Daemon& d, const std::string& id) {
  grpc::ClientContext ctx;
  Auth(&ctx, kAdmin);
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::GetJobResponse resp;
  d.stub()->GetJob(&ctx, req, &resp);
  return resp.job().state();
}

// An uploaded TorchScript model's hash in *sha256.
grpc::Status UploadBytes(Daemon& d, const std::string& data, const std::string& token,
                         std::string* sha256 = nullptr) {
  v1::ModelInfo model;
  grpc::Status s = Upload(d, data, v1::MODEL_FORMAT_TORCHSCRIPT, token, &model);
  if (sha256) *sha256 = model.sha256();
  return s;
}

// A 24 MiB tmpfs at dir for the test's length: a disk to fill.
class SmallDisk {
 public:
  explicit SmallDisk(std::string dir) : dir_(std::move(dir)) {
    mounted_ = mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=24m") == 0;
  }
  ~SmallDisk() {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }

 private:
  const std::string dir_;
  bool mounted_ = false;
};

// One submitter may queue half of --max-queue; past it RESOURCE_EXHAUSTED
// names the limit, and another submitter still gets in.
TEST(Limits, OneSubmitterCannotFillTheQueue) {
  const std::string dir = FreshDir("limits_queue_share");
  Daemon d(dir, {"--token-file", WriteTokenFile(dir), "--max-queue", "4"});
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec slow = TinySpec();
  slow.mutable_measurement()->set_min_time_ms(20000);
  slow.mutable_measurement()->set_max_time_ms(20000);
  std::string running;
  ASSERT_TRUE(Submit(d, slow, kAlice, &running).ok());
  for (int i = 0; i < 300 && StateOf(d, running) != v1::JOB_STATE_RUNNING; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(StateOf(d, running), v1::JOB_STATE_RUNNING);
  // A CPU job holds the whole host: these wait in the queue.
  ASSERT_TRUE(Submit(d, TinySpec(), kAlice).ok());
  ASSERT_TRUE(Submit(d, TinySpec(), kAlice).ok());
  grpc::Status third = Submit(d, TinySpec(), kAlice);
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << third.error_message();
  EXPECT_NE(third.error_message().find("alice has 2 jobs queued"), std::string::npos)
      << third.error_message();
  EXPECT_NE(third.error_message().find("--max-queued-per-submitter 2"), std::string::npos)
      << third.error_message();
  grpc::Status bob = Submit(d, TinySpec(), kBob);
  EXPECT_TRUE(bob.ok()) << bob.error_message();
  d.Stop(SIGKILL);
}

// An upload that announces a large model and then sends nothing holds the
// quota only until --upload-idle-timeout-ms: it is cancelled, and the
// upload it blocked goes through.
TEST(Limits, AnIdleUploadIsCancelledAndItsQuotaFreed) {
  Daemon d(FreshDir("limits_idle_upload"),
           {"--models-quota-bytes", "3000000", "--upload-idle-timeout-ms", "1000"});
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string held(2000000, 'h');
  grpc::ClientContext idle_ctx;
  Auth(&idle_ctx, "");
  v1::UploadModelResponse idle_resp;
  auto idle = d.stub()->UploadModel(&idle_ctx, &idle_resp);
  v1::UploadModelRequest req;
  req.mutable_header()->set_name("idle");
  req.mutable_header()->set_sha256(Sha256Hex(held));
  req.mutable_header()->set_size_bytes(held.size());
  ASSERT_TRUE(idle->Write(req));
  req.Clear();
  req.set_chunk(held.substr(0, 1000));
  ASSERT_TRUE(idle->Write(req));

  // While it holds 2 of the 3 MB, another 1.5 MB does not fit ...
  const std::string other(1500000, 'o');
  for (int i = 0; i < 50; ++i) {  // until the idle upload's header is taken
    grpc::Status refused = UploadBytes(d, other, "");
    if (refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) break;
    ASSERT_NE(i, 49) << "the idle upload never held the quota: " << refused.error_message();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // ... until the daemon cancels the idle one (the client waits up to 30 s).
  grpc::Status ended = idle->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::CANCELLED) << ended.error_message();
  grpc::Status fits = UploadBytes(d, other, "");
  EXPECT_TRUE(fits.ok()) << fits.error_message();
  EXPECT_NE(d.log().find("sent nothing for 1s and was cancelled"), std::string::npos) << d.log();
  EXPECT_EQ(d.Stop(SIGTERM), 0);
}

// On a disk with no space left an admin can still delete a model, which is
// how room is made: the file goes first, then its row.
TEST(Limits, ModelRmWorksOnAFullDisk) {
  const std::string dir = FreshDir("limits_full_disk");
  SmallDisk disk(dir);
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a small tmpfs here (needs CAP_SYS_ADMIN)";
  Daemon d(dir);
  ASSERT_TRUE(d.serving()) << d.log();
  std::string sha256;
  ASSERT_TRUE(UploadBytes(d, std::string(3 << 20, 'm'), "", &sha256).ok());
  std::string id;
  ASSERT_TRUE(Submit(d, TinySpec(), "", &id).ok());
  for (int i = 0; i < 600 && StateOf(d, id) != v1::JOB_STATE_SUCCEEDED; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // An empty WAL, then a disk with no byte left: any write to the store
  // must grow a file.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/gpubench.db").c_str(), &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  EXPECT_EQ(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  std::ofstream filler(dir + "/filler", std::ios::binary);
  const std::string block(1 << 16, 'f');
  while (filler.write(block.data(), block.size())) {
  }
  filler.close();
  grpc::Status full = Submit(d, TinySpec(), "");
  EXPECT_FALSE(full.ok()) << "the disk is not full";

  grpc::ClientContext ctx;
  Auth(&ctx, "");
  v1::DeleteModelRequest rm;
  rm.set_sha256(sha256);
  v1::DeleteModelResponse removed;
  grpc::Status s = d.stub()->DeleteModel(&ctx, rm, &removed);
  EXPECT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
  struct stat st;
  EXPECT_NE(stat((dir + "/models/" + sha256).c_str(), &st), 0);
  std::remove((dir + "/filler").c_str());
  EXPECT_EQ(d.Stop(SIGTERM), 0);
  auto store = storage::Store::Open({dir + "/gpubench.db"});
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE(absl::IsNotFound((*store)->models().Get(sha256).status()));
}

// The body of GET path on 127.0.0.1:port (HTTP/1.0: the reply ends with
// the connection).
std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) reply.append(buf, n);
    }
  }
  close(fd);
  const size_t body = reply.find("\r\n\r\n");
  return body == std::string::npos ? "" : reply.substr(body + 4);
}

// A job that ends while the disk is full cannot store its end: the daemon
// still answers it as ended, /metrics counts it so (not running, not
// nowhere), and once room returns its state reaches the store at shutdown,
// so the next start does not run it again.
TEST(Limits, AJobThatEndsOnAFullDiskCountsAsEndedAndIsStoredWhenRoomReturns) {
  const std::string dir = FreshDir("limits_full_mid_job");
  SmallDisk disk(dir);
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a small tmpfs here (needs CAP_SYS_ADMIN)";
  std::string id;
  {
    Daemon d(dir, {"--metrics-listen", "127.0.0.1:0"});
    ASSERT_TRUE(d.serving()) << d.log();
    ASSERT_GT(d.metrics_port(), 0) << d.log();
    v1::JobSpec spec = TinySpec();
    spec.mutable_measurement()->set_min_time_ms(400);
    for (int batch : {1, 2, 3, 4, 5, 6}) spec.mutable_sweep()->add_batch_size(batch);
    ASSERT_TRUE(Submit(d, spec, "", &id).ok());
    for (int i = 0; i < 600 && StateOf(d, id) != v1::JOB_STATE_RUNNING; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    {
      std::ofstream filler(dir + "/filler", std::ios::binary);
      const std::string block(1 << 16, 'f');
      while (filler.write(block.data(), block.size())) {
      }
    }
    for (int i = 0; i < 600 && StateOf(d, id) == v1::JOB_STATE_RUNNING; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_EQ(StateOf(d, id), v1::JOB_STATE_FAILED);
    ASSERT_NE(d.log().find("storing it (failed) failed"), std::string::npos)
        << "the job's end was stored after all; the disk was not full:\n" << d.log();
    const std::string metrics = HttpGet(d.metrics_port(), "/metrics");
    EXPECT_NE(metrics.find("gpubench_jobs{state=\"failed\"} 1\n"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("gpubench_jobs{state=\"running\"} 0\n"), std::string::npos) << metrics;
    std::remove((dir + "/filler").c_str());
    EXPECT_EQ(d.Stop(SIGTERM), 0);
  }
  auto store = storage::Store::Open({dir + "/gpubench.db"});
  ASSERT_TRUE(store.ok()) << store.status();
  auto job = (*store)->jobs().Get(id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_FAILED);
}

// A schedule whose job the daemon cannot take (here a queue of 0) records
// why and how often, keeps last_run_time for when a job was enqueued, and
// logs it.
TEST(Limits, AScheduleWhoseJobCannotBeSubmittedSaysSo) {
  const std::string dir = FreshDir("limits_schedule_fails");
  std::string schedule_id;
  {
    auto store = storage::Store::Open({dir + "/gpubench.db"});
    ASSERT_TRUE(store.ok()) << store.status();
    v1::Schedule s;
    s.set_name("nightly");
    s.set_cron("0 2 * * *");
    s.set_time_zone("UTC");
    *s.mutable_spec() = TinySpec();
    s.mutable_next_run_time()->set_seconds(1700000000);  // long due
    schedule_id = *(*store)->schedules().Insert(s);
  }
  Daemon d(dir, {"--max-queue", "0"});
  ASSERT_TRUE(d.serving()) << d.log();
  v1::Schedule listed;
  for (int i = 0; i < 100 && listed.failure_count() == 0; ++i) {
    grpc::ClientContext ctx;
    Auth(&ctx, "");
    v1::ListSchedulesResponse resp;
    ASSERT_TRUE(d.stub()->ListSchedules(&ctx, v1::ListSchedulesRequest(), &resp).ok());
    ASSERT_EQ(resp.schedules_size(), 1);
    listed = resp.schedules(0);
    if (listed.failure_count() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(listed.failure_count(), 1);
  EXPECT_NE(listed.last_error().find("queue is full"), std::string::npos) << listed.last_error();
  EXPECT_FALSE(listed.has_last_run_time());
  EXPECT_GT(listed.next_run_time().seconds(), 1700000000);  // not due again at once
  EXPECT_NE(d.log().find("schedule " + schedule_id), std::string::npos) << d.log();
  EXPECT_NE(d.log().find("could not be submitted"), std::string::npos) << d.log();
  EXPECT_EQ(d.Stop(SIGTERM), 0);
}

// A time zone that names a file is refused before anything opens it (a
// FIFO there hung a thread and the daemon's shutdown).
TEST(Limits, ATimeZoneThatNamesAFileIsRefused) {
  const std::string dir = FreshDir("limits_tz_fifo");
  const std::string fifo = dir + "/zone";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Daemon d(dir);
  ASSERT_TRUE(d.serving()) << d.log();
  for (const std::string& zone : {fifo, std::string("../../../../") + fifo,
                                  std::string("Europe/../../etc/passwd"), std::string("file:") + fifo,
                                  std::string(200, 'A')}) {
    grpc::ClientContext ctx;
    Auth(&ctx, "");
    v1::CreateScheduleRequest req;
    req.mutable_schedule()->set_cron("0 2 * * *");
    req.mutable_schedule()->set_time_zone(zone);
    *req.mutable_schedule()->mutable_spec() = TinySpec();
    v1::CreateScheduleResponse resp;
    grpc::Status s = d.stub()->CreateSchedule(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << zone;
    EXPECT_NE(s.error_message().find("schedule.time_zone: must be a tz database name"),
              std::string::npos)
        << s.error_message();
  }
  EXPECT_EQ(d.Stop(SIGTERM), 0);
}

// A model chooses its error message (an assert's): one of 1 MiB is kept as
// its first 16 KiB and a note of what was cut, so the store, every reply
// and the HTML view stay small, and the job's runs are still readable.
TEST(Limits, AModelsErrorIsKeptBounded) {
#ifndef GPUBENCH_SCRIPT_MODEL_PATH
  GTEST_SKIP() << "needs the script_model tool (a build with the worker)";
#endif
  const std::string dir = FreshDir("limits_error");
  const std::string bytes = testing_support::ScriptModel(
      dir + "/shouting.pt",
      "def forward(self, x):\n"
      "    s = \"B\"\n"
      "    for i in range(20):\n"
      "        s = s + s\n"
      "    assert False, s\n"
      "    return x\n");
  ASSERT_FALSE(bytes.empty());
  Daemon d(dir + "/data");
  ASSERT_TRUE(d.serving()) << d.log();
  std::string sha;
  ASSERT_TRUE(UploadBytes(d, bytes, "", &sha).ok());
  std::string id;
  ASSERT_TRUE(Submit(d, testing_support::ModelSpec("", sha), "", &id).ok());
  EXPECT_EQ(testing_support::WaitForJobEnd(d, id).state(), v1::JOB_STATE_FAILED);
  const std::vector<v1::Run> runs = testing_support::JobRuns(d, id);
  ASSERT_EQ(runs.size(), 1u);
  const std::string& error = runs[0].error();
  EXPECT_NE(error.find("BBBBBBBB"), std::string::npos) << error.substr(0, 200);
  EXPECT_LT(error.size(), 17u * 1024);
  EXPECT_NE(error.find(" more bytes)"), std::string::npos) << error.substr(error.size() - 200);
}

}  // namespace
}  // namespace gpubench
