// The event log in process, over a real SQLite store: order, coalescing,
// readers that do not wait for a store write, eviction and subscribers.
#include "server/event_log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "storage/store.h"

namespace gpubench::server {
namespace {

std::unique_ptr<storage::Store> FreshStore(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name + ".db";
  std::remove(path.c_str());
  auto store = storage::Store::Open({path});
  EXPECT_TRUE(store.ok()) << store.status();
  return std::move(*store);
}

// A job row, so that durable events have their job.
std::string NewJob(storage::Store* store) {
  v1::Job job;
  job.set_state(v1::JOB_STATE_QUEUED);
  return *store->jobs().Insert(job);
}

auto StateChange(v1::JobState state) {
  return [state](v1::ProgressEvent* e) { e->mutable_state_changed()->set_state(state); };
}

auto Progress(int iterations) {
  return [iterations](v1::ProgressEvent* e) {
    e->mutable_run_progress()->set_iterations(iterations);
  };
}

std::function<absl::Status(v1::ProgressEvent*)> Durable(storage::Store* store) {
  return [store](v1::ProgressEvent* e) { return store->jobs().AppendEvent(*e); };
}

std::vector<v1::ProgressEvent> After(EventLog& log, const std::string& job, int64_t after,
                                     bool* ended = nullptr) {
  std::vector<v1::ProgressEvent> events;
  bool end = false;
  EXPECT_TRUE(log.EventsAfter(job, after, [] { return false; }, &events, &end).ok());
  if (ended) *ended = end;
  return events;
}

TEST(EventLog, EventsComeInSequenceWithProgressCoalescedAndTheEndMarked) {
  auto store = FreshStore("event_log_order");
  EventLog log(store.get());
  const std::string job = NewJob(store.get());
  ASSERT_TRUE(log.Append(job, StateChange(v1::JOB_STATE_RUNNING), Durable(store.get())).ok());
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(log.Append(job, Progress(i), nullptr).ok());
  ASSERT_TRUE(log.Append(job, StateChange(v1::JOB_STATE_SUCCEEDED), Durable(store.get()),
                         EventLog::End::kEnded)
                  .ok());
  bool ended = false;
  auto events = After(log, job, 0, &ended);
  ASSERT_EQ(events.size(), 3u);  // running, the last progress, succeeded
  EXPECT_EQ(events[0].sequence(), 1);
  EXPECT_EQ(events[1].run_progress().iterations(), 5);
  EXPECT_EQ(events[1].sequence(), 6);
  EXPECT_EQ(events[2].state_changed().state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(events[2].sequence(), 7);
  EXPECT_TRUE(ended);
  EXPECT_EQ(After(log, job, 6).size(), 1u);

  // A new log (a restarted daemon) continues the stored sequence.
  EventLog after_restart(store.get());
  ASSERT_TRUE(after_restart.Append(job, StateChange(v1::JOB_STATE_QUEUED), Durable(store.get()))
                  .ok());
  auto resumed = After(after_restart, job, 0);
  ASSERT_EQ(resumed.size(), 3u);  // the two durable ones from the store, then the new one
  EXPECT_EQ(resumed[2].sequence(), 8);
}

TEST(EventLog, ReadersDoNotWaitForAStoreWrite) {
  auto store = FreshStore("event_log_readers");
  EventLog log(store.get());
  const std::string job = NewJob(store.get());
  ASSERT_TRUE(log.Append(job, StateChange(v1::JOB_STATE_RUNNING), Durable(store.get())).ok());
  absl::Notification writing, release;
  std::atomic<bool> released_in_time{false};
  std::thread writer([&] {
    log.Append(job, StateChange(v1::JOB_STATE_SUCCEEDED),
               [&](v1::ProgressEvent* e) {
                 writing.Notify();
                 // A slow disk: held until the readers below are done.
                 released_in_time = release.WaitForNotificationWithTimeout(absl::Seconds(30));
                 return store->jobs().AppendEvent(*e);
               },
               EventLog::End::kEnded)
        .IgnoreError();
  });
  writing.WaitForNotification();
  // Both reads return while the write is held: the event being stored is not
  // published yet, the one before it is.
  bool ended = true;
  auto events = After(log, job, 0, &ended);
  EXPECT_EQ(events.size(), 1u);
  EXPECT_FALSE(ended);
  const std::string other = NewJob(store.get());
  EXPECT_TRUE(log.Append(other, StateChange(v1::JOB_STATE_QUEUED), Durable(store.get())).ok());
  release.Notify();
  writer.join();
  EXPECT_TRUE(released_in_time) << "a reader waited for the held write";
  events = After(log, job, 0, &ended);
  EXPECT_EQ(events.size(), 2u);
  EXPECT_TRUE(ended);
}

TEST(EventLog, ConcurrentAppendersPublishEverySequenceOnceInOrder) {
  auto store = FreshStore("event_log_concurrent");
  EventLog log(store.get());
  const std::string job = NewJob(store.get());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        log.Append(job, StateChange(v1::JOB_STATE_RUNNING), Durable(store.get())).IgnoreError();
      }
    });
  }
  for (auto& t : threads) t.join();
  auto events = After(log, job, 0);
  ASSERT_EQ(events.size(), 200u);
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].sequence(), int64_t(i) + 1);
  auto stored = store->jobs().ListEvents(job, 0);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->size(), 200u);
}

TEST(EventLog, EvictedLogsAreServedFromTheStore) {
  auto store = FreshStore("event_log_evict");
  EventLog log(store.get());
  std::vector<std::string> jobs;
  for (size_t i = 0; i < EventLog::kKeptEndedLogs + 5; ++i) {
    jobs.push_back(NewJob(store.get()));
    log.Append(jobs.back(), StateChange(v1::JOB_STATE_RUNNING), Durable(store.get()))
        .IgnoreError();
    log.Append(jobs.back(), Progress(3), nullptr).IgnoreError();
    log.Append(jobs.back(), StateChange(v1::JOB_STATE_SUCCEEDED), Durable(store.get()),
               EventLog::End::kEnded)
        .IgnoreError();
  }
  // The first job's log was evicted: its durable events come from the store
  // (its progress, never durable, is gone), and the end from ended_in_store.
  std::vector<v1::ProgressEvent> events;
  bool ended = false;
  ASSERT_TRUE(log.EventsAfter(jobs[0], 0, [] { return true; }, &events, &ended).ok());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].state_changed().state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(ended);
  EXPECT_EQ(After(log, jobs.back(), 0).size(), 3u);  // still in memory, progress included
}

TEST(EventLog, SubscribersHearTheirJobUntilTheyUnsubscribe) {
  auto store = FreshStore("event_log_subscribe");
  EventLog log(store.get());
  const std::string a = NewJob(store.get()), b = NewJob(store.get());
  std::atomic<int> heard{0};
  const int64_t token = log.Subscribe(a, [&] { ++heard; });
  log.Append(a, Progress(1), nullptr).IgnoreError();
  log.Append(b, Progress(1), nullptr).IgnoreError();
  EXPECT_EQ(heard.load(), 1);
  log.Unsubscribe(token);
  log.Append(a, Progress(2), nullptr).IgnoreError();
  EXPECT_EQ(heard.load(), 1);
}

}  // namespace
}  // namespace gpubench::server
