// A job's own workers are not contention (issue 29): a distributed run's
// ranks run in one process group of their own, and each rank's telemetry
// leaves the group's CPU work out of other_cpu_cores, through a real
// gpubenchd with real Gloo ranks on the CPU. A process outside the group
// still counts. Registered RUN_SERIAL: other tests' load would be other CPU
// work too.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/contention.h"
#include "gpubench/v1/service.grpc.pb.h"
#include "tests/support/daemon_process.h"

namespace gpubench {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;
using testing_support::JobRuns;
using testing_support::SubmitJobSpec;
using testing_support::WaitForJobEnd;
using testing_support::WorkerChildren;

// Ranks on the CPU need Gloo, which the wheel's LibTorch keeps internal:
// there this file has no test (distributed_test checks the error a CPU
// rank then gets).
#ifdef GPUBENCH_TEST_GLOO

// ddp of the mlp on two CPU ranks, measured for at least a second.
v1::JobSpec TwoRankDdp() {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("ddp");
  spec.mutable_base()->set_device("cpu");
  spec.mutable_base()->set_batch_size(64);
  spec.mutable_base()->set_world_size(2);
  spec.mutable_base()->mutable_params()->set_ddp_model("mlp");
  auto* m = spec.mutable_measurement();
  m->set_warmup_iterations(2);
  m->set_min_iterations(10);
  m->set_min_time_ms(1000);
  m->set_max_time_ms(2000);
  return spec;
}

struct Stat {
  pid_t pgrp = -1;
  double cpu_s = 0;  // utime + stime, and cutime + cstime: reaped children's
};

// A process's group and CPU time (its own and its reaped children's).
Stat StatOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  Stat s;
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return s;
  char state;
  int ppid, pgrp;
  unsigned long long skip, utime, stime, cutime, cstime;
  if (std::sscanf(stat.c_str() + close + 2,
                  "%c %d %d %*d %*d %*d %*u %llu %llu %llu %llu %llu %llu %llu %llu", &state,
                  &ppid, &pgrp, &skip, &skip, &skip, &skip, &utime, &stime, &cutime,
                  &cstime) == 11) {
    s.pgrp = pgrp;
    s.cpu_s = static_cast<double>(utime + stime + cutime + cstime) / sysconf(_SC_CLK_TCK);
  }
  return s;
}

// The host's busy CPU seconds (/proc/stat: all but idle and iowait).
double HostBusySeconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  return static_cast<double>(user + nice + system + irq + softirq + steal) /
         sysconf(_SC_CLK_TCK);
}

// Waits (at most 10 s) until parent has n worker children.
std::vector<pid_t> AwaitWorkers(pid_t parent, size_t n) {
  std::vector<pid_t> workers;
  for (int i = 0; i < 200 && (workers = WorkerChildren(parent)).size() < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return workers;
}

// Both ranks run in one process group, not the daemon's: the other rank's
// CPU work is the job's own (job_cpu_cores, about what rank 0 itself
// burns), not other processes' (other_cpu_cores), and the run is not
// contended for it. Before, other_cpu_cores held the other rank's core.
TEST(ContentionOwn, ADistributedRunsOtherRankIsNotContention) {
  Daemon d(FreshDir("contention_own_ranks"));
  ASSERT_TRUE(d.serving()) << d.log();
  const double busy_before = HostBusySeconds();
  const double daemon_before = StatOf(d.pid()).cpu_s;
  const double self_before = StatOf(getpid()).cpu_s;
  const auto start = std::chrono::steady_clock::now();
  std::string id;
  ASSERT_TRUE(SubmitJobSpec(d, TwoRankDdp(), &id).ok());
  const std::vector<pid_t> workers = AwaitWorkers(d.pid(), 2);
  ASSERT_EQ(workers.size(), 2u) << d.log();
  const pid_t daemon_group = StatOf(d.pid()).pgrp;
  const pid_t group = StatOf(workers[0]).pgrp;
  EXPECT_EQ(StatOf(workers[1]).pgrp, group);
  EXPECT_NE(group, daemon_group);
  EXPECT_GT(group, 0);

  const v1::Job job = WaitForJobEnd(d, id);
  // Every worker is reaped now: the daemon's children's time holds theirs.
  const double window_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double elsewhere =
      ((HostBusySeconds() - busy_before) - (StatOf(d.pid()).cpu_s - daemon_before) -
       (StatOf(getpid()).cpu_s - self_before)) /
      window_s;
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error() << d.log();
  const std::vector<v1::Run> runs = JobRuns(d, id);
  ASSERT_EQ(runs.size(), 1u);
  const v1::Run& run = runs[0];
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
  const v1::Contention& c = run.result().contention();
  const double rank0_cores = run.result().telemetry().host_cpu_utilization_pct().mean() / 100;
  ASSERT_GT(rank0_cores, 0.1) << run.result().telemetry().ShortDebugString();
  // The ranks do the same work: the other one burns about what rank 0 does.
  EXPECT_GT(c.job_cpu_cores(), rank0_cores / 2) << c.ShortDebugString();
  EXPECT_EQ(c.jobs_beside_size(), 0);
  EXPECT_EQ(c.gpu_processes(), 0);
  EXPECT_EQ(c.contended(), c.other_cpu_cores() > kContendedOtherCores) << c.ShortDebugString();
  // Where nothing else ran (the suite runs this test alone), the run is
  // quiet; on a shared machine other work may still make it contended,
  // rightly.
  if (elsewhere < 0.2) {
    EXPECT_LT(c.other_cpu_cores(), kContendedOtherCores) << c.ShortDebugString();
    EXPECT_FALSE(c.contended()) << c.ShortDebugString();
  } else {
    std::printf("%.2f cores busy outside the daemon during the job: the quiet run's threshold "
                "is not checked (%s)\n",
                elsewhere, c.ShortDebugString().c_str());
  }
  EXPECT_TRUE(WorkerChildren(d.pid()).empty());
}

// A process outside the job's group (two spinning children of this test)
// still counts as other CPU work beside a distributed run, which is then
// contended.
TEST(ContentionOwn, AForeignBusyProcessStillCounts) {
  Daemon d(FreshDir("contention_own_foreign"));
  ASSERT_TRUE(d.serving()) << d.log();
  std::vector<pid_t> spinners;
  for (int i = 0; i < 2; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      volatile double x = 0;
      while (true) x = x + 1;
    }
    spinners.push_back(pid);
  }
  std::string id;
  const grpc::Status submitted = SubmitJobSpec(d, TwoRankDdp(), &id);
  const v1::Job job = submitted.ok() ? WaitForJobEnd(d, id) : v1::Job();
  double spun_s = 0;
  for (pid_t pid : spinners) {
    spun_s += StatOf(pid).cpu_s;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  ASSERT_TRUE(submitted.ok()) << submitted.error_message();
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error() << d.log();
  ASSERT_GT(spun_s, 0.5) << "the spinners did not run";
  const std::vector<v1::Run> runs = JobRuns(d, id);
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_EQ(runs[0].state(), v1::RUN_STATE_SUCCEEDED) << runs[0].error();
  const v1::Contention& c = runs[0].result().contention();
  EXPECT_GT(c.other_cpu_cores(), kContendedOtherCores) << c.ShortDebugString();
  EXPECT_TRUE(c.contended()) << c.ShortDebugString();
  EXPECT_GT(c.job_cpu_cores(), 0) << c.ShortDebugString();
}
#endif  // GPUBENCH_TEST_GLOO

}  // namespace
}  // namespace gpubench
