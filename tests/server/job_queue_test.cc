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

// A host of four GPUs (a fake count: the queue knows only names). A job
// asking for any K takes the K lowest free ones together, or waits.
TEST(JobQueue, AnyKGpusAreTakenTogetherFromTheFreeOnes) {
  JobQueue q(4);
  q.Push("one", 0, 1, {"cuda:1"});
  EXPECT_EQ(Next(q), "one");
  q.Push("two", 0, 2, {}, 2);
  auto two = q.TakeStartable();
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->leases, (JobQueue::Leases{"cuda:0", "cuda:2"}));
  q.Push("three", 0, 3, {}, 3);
  EXPECT_EQ(Next(q), "-");  // one GPU is free: none is taken
  EXPECT_FALSE(q.busy("cuda:3"));
  q.Release(two->leases);
  auto three = q.TakeStartable();
  ASSERT_TRUE(three.has_value());
  EXPECT_EQ(three->leases, (JobQueue::Leases{"cuda:0", "cuda:2", "cuda:3"}));
  // More than the host has never starts (the daemon refuses it at submit).
  q.Push("five", 0, 4, {}, 5);
  q.Release({"cuda:1"});
  q.Release(three->leases);
  EXPECT_EQ(Next(q), "-");
}

// A waiting job that asks for all four GPUs keeps the ones that come free,
// so single-GPU jobs queued after it cannot take them one by one for ever;
// single-GPU jobs queued before it run first.
TEST(JobQueue, AJobWantingKGpusIsNotStarvedAndDoesNotStarveEarlierOnes) {
  JobQueue q(4);
  q.Push("early-0", 0, 1, {"cuda:0"});
  q.Push("early-1", 0, 2, {"cuda:1"});
  q.Push("all", 0, 3, {}, 4);
  for (int i = 0; i < 3; ++i) q.Push("late-" + std::to_string(i), 0, 10 + i, {GpuLease(i)});
  EXPECT_EQ(Next(q), "early-0");
  EXPECT_EQ(Next(q), "early-1");
  EXPECT_EQ(Next(q), "-");  // cuda:2 and cuda:3 are free but kept for "all"
  q.Release({"cuda:0"});
  EXPECT_EQ(Next(q), "-");  // cuda:0 too
  q.Release({"cuda:1"});
  EXPECT_EQ(Next(q), "all");
  EXPECT_EQ(Next(q), "-");
  q.Release({"cuda:0", "cuda:1", "cuda:2", "cuda:3"});
  EXPECT_EQ(Next(q), "late-0");
  EXPECT_EQ(Next(q), "late-1");
  EXPECT_EQ(Next(q), "late-2");
}

// A waiting K-GPU job keeps only K: the GPUs beyond stay open to the jobs
// behind it.
TEST(JobQueue, AWaitingKGpuJobLeavesTheOtherGpusToSmallJobs) {
  JobQueue q(4);
  q.Push("busy", 0, 1, {"cuda:0"});
  EXPECT_EQ(Next(q), "busy");
  q.Push("pair", 0, 2, {}, 2);
  q.Push("gang", 0, 3, {}, 3);  // waits: cuda:1-3 free, but pair goes first
  q.Push("small", 0, 4, {"cuda:3"});
  EXPECT_EQ(Next(q), "pair");   // cuda:1, cuda:2
  EXPECT_EQ(Next(q), "-");      // gang keeps cuda:3, the only free one
  q.Release({"cuda:0"});
  EXPECT_EQ(Next(q), "-");      // gang keeps cuda:0 and cuda:3 and waits for a third
  q.Release({"cuda:1", "cuda:2"});
  auto gang = q.TakeStartable();
  ASSERT_TRUE(gang.has_value());
  EXPECT_EQ(gang->job_id, "gang");
  EXPECT_EQ(gang->leases, (JobQueue::Leases{"cuda:0", "cuda:1", "cuda:2"}));
  EXPECT_EQ(Next(q), "small");  // cuda:3 was left free
}

// A job that names a GPU and asks for K counts the named one towards its K;
// one asking for more GPUs than the host has keeps nothing from the others.
TEST(JobQueue, NamedGpusCountTowardsKAndAnImpossibleJobBlocksNothing) {
  JobQueue q(1);
  q.Push("never", 0, 1, {}, 2);
  q.Push("named-and-any", 0, 2, {"cuda:0"}, 1);
  auto started = q.TakeStartable();
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ(started->job_id, "named-and-any");
  EXPECT_EQ(started->leases, (JobQueue::Leases{"cuda:0"}));
  q.Release(started->leases);
  q.Push("single", 0, 3, {"cuda:0"});
  EXPECT_EQ(Next(q), "single");
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
