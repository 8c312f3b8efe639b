// The job recorder alone (server/job_recorder.h): a job's states, events
// and runs in a real SQLite store, and its one policy when the store
// refuses a write (another connection holds the write lock), without a job
// manager, a queue or a worker.
#include "server/job_recorder.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "server/event_log.h"
#include "storage/store.h"

namespace gpubench::server {
namespace {

class JobRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A file per test: ctest runs them side by side.
    path_ = ::testing::TempDir() + "/job_recorder_test_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
    storage::StoreOptions options;
    options.path = path_;
    options.busy_timeout_ms = 50;  // a held lock refuses a write at once
    auto store = storage::Store::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    events_ = std::make_unique<EventLog>(store_.get());
    recorder_ = std::make_unique<JobRecorder>(store_.get(), events_.get(), "host-a",
                                              /*max_requeues=*/1);
    job_.set_state(v1::JOB_STATE_QUEUED);
    job_.mutable_spec()->mutable_base()->set_workload("empty");
    auto id = store_->jobs().Insert(job_);
    ASSERT_TRUE(id.ok()) << id.status();
    job_.set_job_id(*id);
  }

  // Another process's write transaction: the store refuses writes until
  // Release.
  void Hold() {
    ASSERT_EQ(sqlite3_open(path_.c_str(), &other_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(other_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  }
  void Release() {
    ASSERT_EQ(sqlite3_exec(other_, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(other_);
    other_ = nullptr;
  }

  // What a watcher sees of the job: every event, live.
  std::vector<v1::ProgressEvent> Watched() {
    std::vector<v1::ProgressEvent> events;
    bool ended = false;
    EXPECT_TRUE(events_
                    ->EventsAfter(
                        job_.job_id(), 0, [] { return absl::StatusOr<bool>(false); }, &events,
                        &ended)
                    .ok());
    return events;
  }

  std::vector<v1::ProgressEvent> Stored() { return *store_->jobs().ListEvents(job_.job_id(), 0); }

  std::string path_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<EventLog> events_;
  std::unique_ptr<JobRecorder> recorder_;
  v1::Job job_;
  sqlite3* other_ = nullptr;
};

// A state and an event the store refuses are kept and served in its
// place, watchers see them live, and the next Flush writes them in order.
TEST_F(JobRecorderTest, WhatTheStoreRefusesIsKeptServedAndWrittenLater) {
  ASSERT_TRUE(recorder_->SetState(&job_, v1::JOB_STATE_RUNNING, "").ok());
  Hold();
  recorder_->RecordEvent(job_.job_id(), [](v1::ProgressEvent* e) {
    e->mutable_log()->set_text("a line the store refused");
  });
  const absl::Status refused = recorder_->SetState(&job_, v1::JOB_STATE_SUCCEEDED, "");
  EXPECT_FALSE(refused.ok());
  // The truth is served from memory; the store still says running.
  ASSERT_TRUE(recorder_->Unsaved(job_.job_id()).has_value());
  EXPECT_EQ(recorder_->Unsaved(job_.job_id())->state(), v1::JOB_STATE_SUCCEEDED);
  std::vector<v1::Job> listed = {*store_->jobs().Get(job_.job_id())};
  EXPECT_EQ(listed[0].state(), v1::JOB_STATE_RUNNING);
  recorder_->Overlay(&listed);
  EXPECT_EQ(listed[0].state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(recorder_->UnsavedStates()[v1::JOB_STATE_SUCCEEDED], 1);
  EXPECT_EQ(Watched().size(), 3u);  // running, the line, succeeded
  EXPECT_EQ(Stored().size(), 1u);
  EXPECT_FALSE(recorder_->Flush().ok());  // still held: kept
  Release();
  ASSERT_TRUE(recorder_->Flush().ok());
  EXPECT_FALSE(recorder_->Unsaved(job_.job_id()).has_value());
  EXPECT_EQ(store_->jobs().Get(job_.job_id())->state(), v1::JOB_STATE_SUCCEEDED);
  const std::vector<v1::ProgressEvent> stored = Stored();
  ASSERT_EQ(stored.size(), 3u);
  for (size_t i = 0; i < stored.size(); ++i) {
    EXPECT_EQ(stored[i].sequence(), static_cast<int64_t>(i + 1));
  }
  EXPECT_EQ(stored[1].log().text(), "a line the store refused");
  EXPECT_EQ(stored[2].state_changed().state(), v1::JOB_STATE_SUCCEEDED);
}

// A run is stored with its host, the job's probe mark and its trace's
// summary, and counted into the job; one the store refuses is not counted,
// and watchers are told it was lost.
TEST_F(JobRecorderTest, ARunIsStoredCompletedOrItsLossIsSaid) {
  job_.set_daemon_probe(true);
  v1::Run run;
  run.set_index(0);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  run.mutable_config()->set_workload("empty");
  run.set_daemon_probe(false);  // a worker's word does not count
  ASSERT_TRUE(recorder_->StoreRun(&job_, &run, {{0, "{\"traceEvents\": []}"}}).ok());
  EXPECT_EQ(job_.runs_done(), 1);
  auto runs = store_->runs().List(job_.job_id(), false);
  ASSERT_TRUE(runs.ok() && runs->size() == 1u);
  EXPECT_EQ((*runs)[0].host_id(), "host-a");
  EXPECT_TRUE((*runs)[0].daemon_probe());
  EXPECT_TRUE((*runs)[0].result().profile().has_trace());
  EXPECT_EQ(Watched().back().run_finished().run().run_id(), (*runs)[0].run_id());

  Hold();
  v1::Run lost = run;
  lost.set_index(1);
  EXPECT_FALSE(recorder_->StoreRun(&job_, &lost, {}).ok());
  EXPECT_EQ(job_.runs_done(), 1);
  EXPECT_EQ(Watched().back().log().text().rfind("storing run 1 failed", 0), 0u)
      << Watched().back().DebugString();
  Release();
}

// A deleted job's kept state and events are forgotten, so they hold up no
// later write; an interrupted job is queued again while attempts remain.
TEST_F(JobRecorderTest, ForgetAndInterrupt) {
  Hold();
  EXPECT_FALSE(recorder_->SetState(&job_, v1::JOB_STATE_FAILED, "x").ok());
  Release();
  ASSERT_TRUE(store_->jobs().Delete(job_.job_id()).ok());
  recorder_->Forget(job_.job_id());
  EXPECT_FALSE(recorder_->Unsaved(job_.job_id()).has_value());
  EXPECT_TRUE(recorder_->Flush().ok());

  v1::Job job;
  job.set_state(v1::JOB_STATE_RUNNING);
  job.set_attempt(1);
  job.set_job_id(*store_->jobs().Insert(job));
  ASSERT_TRUE(recorder_->Interrupt(&job).ok());
  EXPECT_EQ(job.state(), v1::JOB_STATE_QUEUED);  // attempt 1 of 1 requeue
  EXPECT_FALSE(recorder_->Ends(job));
  job.set_state(v1::JOB_STATE_RUNNING);
  job.set_attempt(2);
  ASSERT_TRUE(recorder_->Interrupt(&job).ok());
  EXPECT_EQ(job.state(), v1::JOB_STATE_INTERRUPTED);
  EXPECT_TRUE(recorder_->Ends(job));
}

}  // namespace
}  // namespace gpubench::server
