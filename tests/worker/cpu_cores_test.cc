// The CPUs a worker may use (its affinity mask capped by its cgroup's CPU
// quota, read from a tree standing for /) and the intra-op threads a CPU run
// takes of them, with the reason `show` prints.
#include "launcher/cpu_cores.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpubench::cpu_cores {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

// A tree standing for / whose process sits in cgroup v2's /job.slice/worker
// with cpu.max lines slice_max and worker_max ("max 100000": none).
fs::path CgroupTree(const std::string& name, const std::string& slice_max,
                    const std::string& worker_max) {
  const fs::path root = fs::temp_directory_path() / ("gpubench_cpu_cores_" + name);
  fs::remove_all(root);
  Write(root / "proc/self/cgroup", "0::/job.slice/worker");
  Write(root / "sys/fs/cgroup/cgroup.controllers", "cpu memory");
  Write(root / "sys/fs/cgroup/job.slice/cpu.max", slice_max);
  Write(root / "sys/fs/cgroup/job.slice/worker/cpu.max", worker_max);
  return root;
}

TEST(UsableCpus, WithoutAQuotaTheAffinityMaskCounts) {
  const fs::path root = CgroupTree("none", "max 100000", "max 100000");
  const UsableCpus u = UsableCpusFrom(2, root.string());
  EXPECT_EQ(u.count, 2);
  EXPECT_EQ(u.affinity_cpus, 2);
  EXPECT_EQ(u.quota_cores, 0.0);
  EXPECT_EQ(u.basis, "affinity 2, no cgroup quota");
  EXPECT_EQ(u.reason, "2 CPUs (affinity 2, no cgroup quota)");
}

TEST(UsableCpus, AQuotaCapsTheMaskRoundedUp) {
  // 1.5 cores on the worker's own cgroup: 2 threads, not 1 (the quota
  // would sit a third idle) and not the mask's 8.
  fs::path root = CgroupTree("fraction", "max 100000", "150000 100000");
  UsableCpus u = UsableCpusFrom(8, root.string());
  EXPECT_EQ(u.count, 2);
  EXPECT_EQ(u.reason, "2 CPUs (affinity 8, cgroup quota 1.5 CPUs)");
  // Half a core is still one thread.
  root = CgroupTree("half", "max 100000", "50000 100000");
  u = UsableCpusFrom(8, root.string());
  EXPECT_EQ(u.count, 1);
  EXPECT_EQ(u.reason, "1 CPU (affinity 8, cgroup quota 0.5 CPUs)");
  // An ancestor's smaller quota is the one that holds.
  root = CgroupTree("ancestor", "300000 100000", "max 100000");
  u = UsableCpusFrom(8, root.string());
  EXPECT_EQ(u.count, 3);
  EXPECT_EQ(u.reason, "3 CPUs (affinity 8, cgroup quota 3 CPUs)");
  // A quota past the mask leaves the mask's count.
  root = CgroupTree("wide", "max 100000", "800000 100000");
  u = UsableCpusFrom(2, root.string());
  EXPECT_EQ(u.count, 2);
  EXPECT_EQ(u.reason, "2 CPUs (affinity 2, cgroup quota 8 CPUs)");
}

TEST(UsableCpus, WhatCannotBeReadIsSaidAndNeverLeavesZero) {
  const fs::path root = fs::temp_directory_path() / "gpubench_cpu_cores_bare";
  fs::remove_all(root);
  fs::create_directories(root);
  UsableCpus u = UsableCpusFrom(4, root.string());
  EXPECT_EQ(u.count, 4);
  EXPECT_FALSE(u.quota_cores.has_value());
  EXPECT_EQ(u.reason, "4 CPUs (affinity 4, cgroup quota unreadable)");
  u = UsableCpusFrom(0, root.string());
  EXPECT_EQ(u.count, 1);
  EXPECT_EQ(u.reason, "1 CPU (affinity unreadable, cgroup quota unreadable)");
}

TEST(UsableCpus, ThisProcessHasItsAffinityMaskAtMost) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const UsableCpus u = UsableCpusOfThisProcess();
  EXPECT_EQ(u.affinity_cpus, CPU_COUNT(&set));
  EXPECT_GE(u.count, 1);
  EXPECT_LE(u.count, u.affinity_cpus);
  EXPECT_EQ(u.reason.rfind(std::to_string(u.count) + " CPU", 0), 0u) << u.reason;
}

TEST(CpuThreads, TheSpecsCountElseTheUsableCpusLessTheLoaders) {
  const fs::path root = CgroupTree("threads", "max 100000", "max 100000");
  const UsableCpus two = UsableCpusFrom(2, root.string());
  CpuThreads t = CpuThreadsFor(0, 0, 1, two);
  EXPECT_EQ(t.count, 2);
  EXPECT_EQ(t.reason,
            "2: the CPUs this worker may use (affinity 2, no cgroup quota), less 0 loader threads");
  t = CpuThreadsFor(0, 1, 1, two);
  EXPECT_EQ(t.count, 1);
  EXPECT_EQ(t.reason,
            "1: the CPUs this worker may use (affinity 2, no cgroup quota), less 1 loader thread");
  // More loaders than CPUs: the step still gets a thread.
  t = CpuThreadsFor(0, 4, 1, two);
  EXPECT_EQ(t.count, 1);
  EXPECT_EQ(t.reason,
            "1: the CPUs this worker may use (affinity 2, no cgroup quota), less 4 loader "
            "threads, at least 1");
  // The spec's count stands, whatever the host has.
  t = CpuThreadsFor(3, 4, 1, two);
  EXPECT_EQ(t.count, 3);
  EXPECT_EQ(t.reason, "3: spec.cpu_threads");
}

TEST(CpuThreads, RanksOnOneHostShareItsCpus) {
  const fs::path root = CgroupTree("ranks", "max 100000", "max 100000");
  const UsableCpus eight = UsableCpusFrom(8, root.string());
  const CpuThreads t = CpuThreadsFor(0, 1, 2, eight);
  EXPECT_EQ(t.count, 3);
  EXPECT_EQ(t.reason,
            "3: the CPUs this worker may use (affinity 8, no cgroup quota) shared by 2 ranks, "
            "less 1 loader thread");
}

}  // namespace
}  // namespace gpubench::cpu_cores
