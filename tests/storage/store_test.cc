#include "storage/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <thread>
#include <chrono>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/filter.h"
#include "google/protobuf/util/time_util.h"
#include "tests/storage/store_test_util.h"

namespace gpubench::storage {
namespace {

TEST(Store, RunsAndSamplesSurviveReopen) {
  const std::string path = TempPath("store_reopen.db");
  std::string job_id;
  {
    auto store = Store::Open({path});
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ((*store)->schema_version(), kSchemaVersion);
    v1::Job job;
    job.mutable_spec()->mutable_base()->set_workload("mlp");
    job.set_state(v1::JOB_STATE_RUNNING);
    job_id = *(*store)->jobs().Insert(job);
    for (int i = 0; i < 2; ++i) {
      v1::Run run;
      run.set_job_id(job_id);
      run.set_index(i);
      run.set_state(v1::RUN_STATE_SUCCEEDED);
      run.mutable_result()->set_throughput_samples_per_s(100 + i);
      run.mutable_samples()->add_device_ms(1.5f + i);
      ASSERT_TRUE((*store)->runs().Insert(run).ok());
    }
  }
  auto store = Store::Open({path});
  ASSERT_TRUE(store.ok());
  auto runs = (*store)->runs().List(job_id, /*include_samples=*/true);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[1].result().throughput_samples_per_s(), 101);
  ASSERT_EQ((*runs)[1].samples().device_ms_size(), 1);
  EXPECT_FLOAT_EQ((*runs)[1].samples().device_ms(0), 2.5f);
  auto no_samples = (*store)->runs().List(job_id, false);
  EXPECT_EQ((*no_samples)[0].samples().device_ms_size(), 0);
}

TEST(Store, DuplicateRunLeavesNoHalfWrittenRows) {
  const std::string path = TempPath("store_atomic.db");
  auto store = Store::Open({path});
  ASSERT_TRUE(store.ok());
  v1::Job job;
  const std::string job_id = *(*store)->jobs().Insert(job);
  v1::Run run;
  run.set_job_id(job_id);
  run.set_run_id("r1");
  ASSERT_TRUE((*store)->runs().Insert(run).ok());
  run.set_index(5);
  EXPECT_FALSE((*store)->runs().Insert(run).ok());  // same run_id
  auto runs = (*store)->runs().List(job_id, true);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 1u);
}

TEST(Store, RefusesAFileThatIsNotADatabaseAndLeavesItAlone) {
  const std::string path = TempPath("not_a_db.db");
  const std::string junk(8192, 'x');
  std::ofstream(path) << junk;
  auto store = Store::Open({path});
  ASSERT_FALSE(store.ok());
  // Corruption is DATA_LOSS: the file holds data that cannot be read.
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(store.status().message().find(path), std::string::npos);
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, junk);
}

v1::Run RunWithSamples(const std::string& job_id, int index, int samples) {
  v1::Run run;
  run.set_job_id(job_id);
  run.set_index(index);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  for (int i = 0; i < samples; ++i) run.mutable_samples()->add_device_ms(1.0f + i % 7);
  return run;
}

TEST(Store, NonFiniteSamplesAreRefusedOnWrite) {
  auto store = Store::Open({TempPath("store_nan.db")});
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string job_id = *(*store)->jobs().Insert(v1::Job());
  v1::Run run = RunWithSamples(job_id, 0, 10);
  run.mutable_samples()->set_device_ms(4, std::nanf(""));
  auto id = (*store)->runs().Insert(run);
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(id.status().message().find("run.samples.device_ms[4]"), std::string::npos)
      << id.status();
  run.mutable_samples()->set_device_ms(4, 1);
  run.mutable_samples()->add_host_ms(INFINITY);
  EXPECT_FALSE((*store)->runs().Insert(run).ok());
  EXPECT_TRUE((*store)->runs().List(job_id, true)->empty());
}

// A real database file with damaged pages (not a file that was never a
// database): opening it with the integrity check is DataLoss saying what is
// wrong, and the file is left byte for byte as it was.
TEST(Store, DamagedPagesAreDataLossSayingWhyAndTheFileIsLeftAlone) {
  const std::string path = TempPath("store_damaged.db");
  size_t schema_bytes = 0;  // the header, the schema and the empty tables
  {
    auto store = Store::Open({path});
    ASSERT_TRUE(store.ok()) << store.status();
  }
  {
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    schema_bytes = st.st_size;
  }
  {
    auto store = Store::Open({path});
    ASSERT_TRUE(store.ok()) << store.status();
    const std::string job_id = *(*store)->jobs().Insert(v1::Job());
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE((*store)->runs().Insert(RunWithSamples(job_id, i, 50)).ok());
    }
  }  // the last close checkpoints the WAL into the file
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t page = 4096;
  ASSERT_GT(bytes.size(), schema_bytes + 20 * page);
  // Flip bytes inside every page the runs were written to.
  for (size_t offset = schema_bytes; offset + page <= bytes.size(); offset += page) {
    for (size_t i = 0; i < 24; ++i) bytes[offset + 8 + i * 7] ^= 0x5a;
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  StoreOptions options;
  options.path = path;
  options.check_integrity = true;
  auto store = Store::Open(options);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_NE(store.status().message().find("integrity_check: "), std::string::npos) << store.status();
  // Says something after the colon: what SQLite found.
  const std::string message(store.status().message());
  EXPECT_GT(message.size(), message.find("integrity_check: ") + 20) << message;
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), bytes);
}

TEST(Store, AFullStoreIsResourceExhaustedAndKeepsWhatItHas) {
  StoreOptions options;
  options.path = TempPath("store_full.db");
  options.max_bytes = 400 << 10;
  auto store = Store::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string job_id = *(*store)->jobs().Insert(v1::Job());
  int stored = 0;
  absl::Status full;
  for (int i = 0; i < 1000 && full.ok(); ++i) {
    auto id = (*store)->runs().Insert(RunWithSamples(job_id, i, 2000));
    if (id.ok()) {
      ++stored;
    } else {
      full = id.status();
    }
  }
  ASSERT_FALSE(full.ok()) << "400 KiB took 1000 runs of 8 KB";
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_GT(stored, 0);
  EXPECT_EQ((*store)->CanWrite(256 << 10).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE((*store)->CanWrite(10).ok());
  auto runs = (*store)->runs().List(job_id, true);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(static_cast<int>(runs->size()), stored);
  EXPECT_EQ(*(*store)->IntegrityCheck(), "ok");
}

// Deleting a job takes everything stored of it (runs, samples, traces,
// events, plan) in one go, and a full store takes as much again: the room is
// reused. What a submitter's jobs hold is counted per submitter.
TEST(Store, ADeletedJobTakesEverythingOfItsAndItsRoomIsReused) {
  StoreOptions options;
  options.path = TempPath("store_delete.db");
  options.max_bytes = 400 << 10;
  auto store = Store::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  JobStore& jobs = (*store)->jobs();
  v1::Job alice_job, bob_job;
  alice_job.set_submitted_by("alice");
  bob_job.set_submitted_by("bob");
  v1::JobPlan plan;
  plan.add_runs()->set_batch_size(8);
  const std::string alice = *jobs.Insert(alice_job, plan);
  const std::string bob = *jobs.Insert(bob_job, plan);
  v1::ProgressEvent event;
  event.set_job_id(alice);
  event.set_sequence(1);
  ASSERT_TRUE(jobs.AppendEvent(event).ok());
  ASSERT_TRUE((*store)->runs().Insert(RunWithSamples(bob, 0, 10)).ok());
  std::vector<std::string> run_ids;
  for (int i = 0; i < 1000; ++i) {
    auto id = (*store)->runs().Insert(RunWithSamples(alice, i, 2000));
    if (!id.ok()) break;
    run_ids.push_back(*id);
    if (i == 0) ASSERT_TRUE((*store)->runs().PutTrace(*id, "chrome", "{}").ok());
  }
  ASSERT_GT(run_ids.size(), 10u);
  ASSERT_FALSE((*store)->runs().Insert(RunWithSamples(bob, 1, 2000)).ok()) << "not full";

  const int64_t alice_bytes = *jobs.SubmitterBytes("alice");
  const int64_t bob_bytes = *jobs.SubmitterBytes("bob");
  EXPECT_GT(alice_bytes, static_cast<int64_t>(run_ids.size()) * 8000);  // the samples alone
  EXPECT_GT(bob_bytes, 40);  // a job, its plan, a run of 10 samples
  EXPECT_LT(bob_bytes, alice_bytes / 10);
  EXPECT_EQ(*jobs.SubmitterBytes("carol"), 0);

  auto deleted = jobs.Delete(alice);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(deleted->job.submitted_by(), "alice");
  EXPECT_EQ(deleted->runs, static_cast<int64_t>(run_ids.size()));
  EXPECT_EQ(deleted->bytes, alice_bytes);
  EXPECT_EQ(*jobs.SubmitterBytes("alice"), 0);
  EXPECT_EQ(*jobs.SubmitterBytes("bob"), bob_bytes);
  EXPECT_TRUE(absl::IsNotFound(jobs.Get(alice).status()));
  EXPECT_TRUE(absl::IsNotFound(jobs.GetPlan(alice).status()));
  EXPECT_TRUE(jobs.ListEvents(alice, 0)->empty());
  EXPECT_TRUE((*store)->runs().List(alice, true)->empty());
  EXPECT_TRUE(absl::IsNotFound((*store)->runs().Get(run_ids[1], true).status()));
  EXPECT_TRUE(absl::IsNotFound((*store)->runs().GetTrace(run_ids[0]).status()));
  EXPECT_TRUE(absl::IsNotFound(jobs.Delete(alice).status()));
  EXPECT_EQ((*store)->runs().List(bob, true)->size(), 1u);
  // The freed pages take bob's runs under the same cap.
  for (size_t i = 1; i < run_ids.size(); ++i) {
    auto id = (*store)->runs().Insert(RunWithSamples(bob, static_cast<int>(i), 2000));
    ASSERT_TRUE(id.ok()) << "run " << i << " of " << run_ids.size() << ": " << id.status();
  }
  EXPECT_EQ(*(*store)->IntegrityCheck(), "ok");
}

TEST(Store, RefusesANewerSchema) {
  const std::string path = TempPath("newer.db");
  sqlite3* db;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  auto store = Store::Open({path});
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("newer"), std::string::npos);
}

// ---- Series, traces, retention, listings ----

// A run of job_id started at start_s, with samples, telemetry and a trace.
std::string AddRun(Store* store, const std::string& job_id, int index, int64_t start_s) {
  v1::Run run;
  run.set_job_id(job_id);
  run.set_index(index);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  run.mutable_config()->set_workload(index % 2 ? "mlp" : "resnet18");
  run.mutable_config()->set_batch_size(8 << (index % 3));
  run.mutable_config()->set_mode(index < 4 ? v1::MODE_INFER : v1::MODE_TRAIN);
  run.set_host_id(index % 2 ? "hA" : "hB");
  *run.mutable_start_time() = google::protobuf::util::TimeUtil::SecondsToTimestamp(start_s);
  run.mutable_result()->set_throughput_samples_per_s(100 + index);
  for (int i = 0; i < 50; ++i) run.mutable_samples()->add_device_ms(1 + i * 0.01f);
  auto* series = run.mutable_telemetry_series();
  series->set_source("nvml");
  series->set_interval_ms(100);
  for (int i = 0; i < 5; ++i) {
    auto* sample = series->add_samples();
    sample->set_offset_ms(i * 100);
    sample->set_power_w(300 + i);
  }
  auto id = store->runs().Insert(run);
  EXPECT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE(store->runs().PutTrace(*id, "chrome", std::string(10000, 'a' + index % 26)).ok());
  return *id;
}

TEST(Store, TelemetrySeriesAndTracesRoundTrip) {
  auto store = Store::Open({TempPath("series.db")});
  ASSERT_TRUE(store.ok());
  v1::Job job;
  const std::string job_id = *(*store)->jobs().Insert(job);
  const std::string run_id = AddRun(store->get(), job_id, 0, 100);
  auto run = (*store)->runs().Get(run_id, true);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->samples().device_ms_size(), 50);
  ASSERT_EQ(run->telemetry_series().samples_size(), 5);
  EXPECT_FLOAT_EQ(run->telemetry_series().samples(4).power_w(), 304);
  // Listings without series stay light.
  EXPECT_FALSE((*store)->runs().Get(run_id, false)->has_telemetry_series());
  EXPECT_FALSE((*(*store)->runs().List(job_id, false))[0].has_telemetry_series());
  auto trace = (*store)->runs().GetTrace(run_id);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->second, std::string(10000, 'a'));
  EXPECT_EQ(trace->first.size_bytes(), 10000);
  EXPECT_EQ(trace->first.sha256().size(), 64u);
  EXPECT_EQ((*store)->runs().GetTrace("nope").status().code(), absl::StatusCode::kNotFound);
  // A distributed run's other ranks keep theirs beside rank 0's.
  ASSERT_TRUE((*store)->runs().PutTrace(run_id, "chrome", "rank one", 1).ok());
  auto one = (*store)->runs().GetTrace(run_id, 1);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->second, "rank one");
  EXPECT_EQ(one->first.rank(), 1);
  EXPECT_EQ((*store)->runs().GetTrace(run_id)->second, std::string(10000, 'a'));
  EXPECT_EQ((*store)->runs().GetTrace(run_id, 2).status().message(),
            "run " + run_id + " has no trace of rank 2");
  // Every rank's trace goes with its run.
  ASSERT_TRUE((*store)->jobs().Delete(job_id).ok());
  EXPECT_TRUE(absl::IsNotFound((*store)->runs().GetTrace(run_id, 1).status()));
}

TEST(Store, RetentionDropsOldestSamplesAndTracesButKeepsResults) {
  auto store = Store::Open({TempPath("retention.db")});
  ASSERT_TRUE(store.ok());
  v1::Job job;
  const std::string job_id = *(*store)->jobs().Insert(job);
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(AddRun(store->get(), job_id, i, 1000 + i));
  RetentionLimits limits;
  limits.max_runs_with_samples = 2;
  // Traces of 10,000 identical bytes compress small; keep room for about 3.
  const int64_t one_trace = [&] {
    return static_cast<int64_t>((*store)->runs().GetTrace(ids[0])->first.compressed_size_bytes());
  }();
  limits.max_trace_bytes = one_trace * 3;
  auto removed = (*store)->runs().Prune(limits);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_GT(*removed, 0);
  for (int i = 0; i < 6; ++i) {
    auto run = (*store)->runs().Get(ids[i], true);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->result().throughput_samples_per_s(), 100 + i) << "result of run " << i;
    const bool newest_two = i >= 4;
    EXPECT_EQ(run->samples().device_ms_size(), newest_two ? 50 : 0) << "run " << i;
    EXPECT_EQ(run->telemetry_series().samples_size(), newest_two ? 5 : 0) << "run " << i;
  }
  int traces_left = 0;
  for (const auto& id : ids) traces_left += (*store)->runs().GetTrace(id).ok();
  EXPECT_EQ(traces_left, 3);
  EXPECT_TRUE((*store)->runs().GetTrace(ids[5]).ok());   // the newest is kept
  EXPECT_FALSE((*store)->runs().GetTrace(ids[0]).ok());  // the oldest goes first
}

TEST(Store, PagesCoverEveryJobOnceAndGarbledTokensAreNamed) {
  auto store = Store::Open({TempPath("pages.db")});
  ASSERT_TRUE(store.ok());
  for (int i = 0; i < 23; ++i) {
    v1::Job job;
    job.set_state(i % 3 == 0 ? v1::JOB_STATE_FAILED : v1::JOB_STATE_SUCCEEDED);
    job.mutable_spec()->mutable_base()->set_workload(i % 2 ? "mlp" : "resnet50");
    *job.mutable_submit_time() = google::protobuf::util::TimeUtil::SecondsToTimestamp(i);
    ASSERT_TRUE((*store)->jobs().Insert(job).ok());
  }
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    auto page = (*store)->jobs().List({}, 5, token);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const auto& j : page->items) seen.push_back(j.job_id());
    token = page->next_page_token;
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 5);
  EXPECT_EQ(seen.size(), 23u);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end());
  JobFilter failed_mlp;
  failed_mlp.states = {v1::JOB_STATE_FAILED};
  failed_mlp.workload = "mlp";
  auto page = (*store)->jobs().List(failed_mlp, 100, "");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->items.size(), 4u);  // i = 3, 9, 15, 21
  auto bad = (*store)->jobs().List({}, 5, "garbage");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("page_token"), std::string::npos);
}

TEST(Store, QueryRunsFiltersOnConfigHostAndTime) {
  auto store = Store::Open({TempPath("query.db")});
  ASSERT_TRUE(store.ok());
  v1::Job job;
  const std::string job_id = *(*store)->jobs().Insert(job);
  for (int i = 0; i < 12; ++i) AddRun(store->get(), job_id, i, 1000 + i);
  auto count = [&](RunFilter f) -> int {
    auto page = (*store)->runs().Query(f, 1000, "");
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() ? page->items.size() : -1;
  };
  RunFilter f;
  EXPECT_EQ(count(f), 12);
  f.workload = "mlp";  // odd indices
  EXPECT_EQ(count(f), 6);
  f.config_equals = {Predicate("batch_size=16")};  // odd and index % 3 == 1: 1, 7
  EXPECT_EQ(count(f), 2);
  f = {};
  f.host_id = "hB";
  f.started_after_ns = 1006 * 1000000000LL;  // 6, 8, 10
  EXPECT_EQ(count(f), 3);
  f = {};
  f.config_equals = {Predicate("mode=infer")};  // enums by the CLI's short name
  EXPECT_EQ(count(f), 4);
  f.config_equals = {Predicate("mode=MODE_TRAIN"), Predicate("batch_size=8")};  // 6, 9
  EXPECT_EQ(count(f), 2);
}

// Reads use their own connections: a write stuck waiting for the database
// (here, another process's transaction) holds the writer, never the readers.
TEST(Store, ReadsDoNotWaitForAWriteInProgress) {
  const std::string path = TempPath("store_readers.db");
  StoreOptions options;
  options.path = path;
  options.busy_timeout_ms = 20000;
  auto store = Store::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  v1::Job job;
  job.set_state(v1::JOB_STATE_QUEUED);
  const std::string id = *(*store)->jobs().Insert(job);

  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::atomic<bool> write_started{false}, write_done{false};
  std::thread writer([&] {
    v1::Job running = job;
    running.set_job_id(id);
    running.set_state(v1::JOB_STATE_RUNNING);
    write_started = true;
    EXPECT_TRUE((*store)->jobs().Update(running).ok());  // waits for `other`
    write_done = true;
  });
  // The reads come once the writer is inside its write, however slowly its
  // thread started: otherwise there would be no write for them to wait on.
  while (!write_started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto read = (*store)->jobs().Get(id);
  auto listed = (*store)->jobs().List({}, 10, "");
  const bool read_during_write = !write_done.load();
  ASSERT_EQ(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  writer.join();
  sqlite3_close(other);
  EXPECT_TRUE(read_during_write) << "the reads waited for the write";
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->state(), v1::JOB_STATE_QUEUED);  // the last commit
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->items.size(), 1u);
  EXPECT_EQ((*(*store)->jobs().Get(id)).state(), v1::JOB_STATE_RUNNING);
}

// A database locked by another process past the busy timeout is a reason to
// try again (UNAVAILABLE naming the file and the statement), not a broken
// precondition; nothing half-written stays behind.
TEST(Store, ABusyDatabaseIsUnavailableAndWritesNothing) {
  const std::string path = TempPath("store_busy.db");
  StoreOptions options;
  options.path = path;
  options.busy_timeout_ms = 50;
  auto store = Store::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  v1::Job job;
  job.set_job_id("jbusy");
  auto inserted = (*store)->jobs().Insert(job);
  ASSERT_EQ(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  ASSERT_FALSE(inserted.ok());
  EXPECT_EQ(inserted.status().code(), absl::StatusCode::kUnavailable) << inserted.status();
  EXPECT_NE(inserted.status().message().find(path), std::string::npos) << inserted.status();
  EXPECT_NE(inserted.status().message().find("insert job"), std::string::npos);
  EXPECT_EQ((*store)->jobs().Get("jbusy").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE((*store)->jobs().Insert(job).ok());  // and works once the lock is gone
}

}  // namespace
}  // namespace gpubench::storage
