// The queue of jobs waiting for devices, without processes or a store.
#include "server/job_queue.h"

#include <gtest/gtest.h>

namespace gpubench::server {
namespace {

std::string Next(JobQueue& q) {
  auto started = q.TakeStartable();
  return started ? started->job_id : "-";
}

TEST(JobQueue, HigherPriorityFirstThenSubmitOrder) {
  JobQueue q;
  q.Push("late", 0, 300, {"cpu"});
  q.Push("early", 0, 100, {"cpu"});
  q.Push("urgent", 5, 900, {"cpu"});
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(Next(q), "urgent");
  EXPECT_EQ(Next(q), "-");  // cpu is busy
  q.Release({"cpu"});
  EXPECT_EQ(Next(q), "early");
  q.Release({"cpu"});
  EXPECT_EQ(Next(q), "late");
  EXPECT_EQ(q.size(), 0u);
}

TEST(JobQueue, OneJobPerDeviceAndDevicesRunSideBySide) {
  JobQueue q;
  q.Push("a", 0, 1, {"cuda:0"});
  q.Push("b", 0, 2, {"cuda:0"});
  q.Push("c", 0, 3, {"cuda:1"});
  EXPECT_EQ(Next(q), "a");
  EXPECT_EQ(Next(q), "c");  // b waits for cuda:0; c's device is free
  EXPECT_TRUE(q.busy("cuda:0"));
  EXPECT_TRUE(q.busy("cuda:1"));
  EXPECT_EQ(Next(q), "-");
  q.Release({"cuda:0"});
  EXPECT_EQ(Next(q), "b");
}

TEST(JobQueue, AJobWantingSeveralDevicesIsNotStarvedBySmallOnes) {
  JobQueue q;
  q.Push("small-0", 0, 1, {"cuda:0"});
  EXPECT_EQ(Next(q), "small-0");
  q.Push("both", 0, 2, {"cuda:0", "cuda:1"});
  q.Push("small-1", 0, 3, {"cuda:1"});
  // cuda:1 is free, but the earlier job wants it: small-1 waits behind it.
  EXPECT_EQ(Next(q), "-");
  q.Release({"cuda:0"});
  EXPECT_EQ(Next(q), "both");
  q.Release({"cuda:0", "cuda:1"});
  EXPECT_EQ(Next(q), "small-1");
}

// A CPU job or an exclusive one holds the whole host: it waits for the
// running GPU jobs to end, nothing starts beside it, and jobs queued after
// it wait behind it even where their device is free.
TEST(JobQueue, AWholeHostJobRunsAlone) {
  const std::string host = JobQueue::kWholeHost;
  JobQueue q;
  q.Push("gpu-0", 0, 1, {"cuda:0"});
  EXPECT_EQ(Next(q), "gpu-0");
  q.Push("cpu", 0, 2, {"cpu", host});
  q.Push("gpu-1", 0, 3, {"cuda:1"});
  EXPECT_EQ(Next(q), "-");  // cpu waits for gpu-0; gpu-1 waits behind cpu
  q.Release({"cuda:0"});
  EXPECT_EQ(Next(q), "cpu");
  EXPECT_TRUE(q.busy(host));
  EXPECT_EQ(Next(q), "-");  // nothing beside the whole-host job
  q.Release({"cpu", host});
  EXPECT_EQ(Next(q), "gpu-1");
  q.Push("exclusive", 0, 4, {"cuda:0", host});
  EXPECT_EQ(Next(q), "-");  // cuda:0 is free, but gpu-1 runs on the host
  q.Release({"cuda:1"});
  EXPECT_EQ(Next(q), "exclusive");
}

TEST(JobQueue, RemoveTakesAQueuedJobOutOnce) {
  JobQueue q;
  q.Push("a", 0, 1, {"cpu"});
  q.Push("b", 0, 2, {"cpu"});
  EXPECT_TRUE(q.Remove("a"));
  EXPECT_FALSE(q.Remove("a"));
  EXPECT_FALSE(q.Remove("never"));
  EXPECT_EQ(Next(q), "b");
  q.Push("b", 0, 2, {"cpu"});  // requeued after a shutdown: once, not twice
  q.Push("b", 0, 2, {"cpu"});
  EXPECT_EQ(q.size(), 1u);
}

}  // namespace
}  // namespace gpubench::server
