// Telemetry without a GPU: the NVML loader's clean failure, host sampling,
// and the summary and throttle rules on recorded samples.
#include "launcher/telemetry.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>
#include <vector>

namespace gpubench::telemetry {
namespace {

TEST(Telemetry, MissingNvmlIsARecordedReasonNotAnError) {
  setenv("GPUBENCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  std::string why;
  std::unique_ptr<Source> nvml = OpenNvml("", 0, &why);
  unsetenv("GPUBENCH_NVML_LIBRARY");
  EXPECT_EQ(nvml, nullptr);
  EXPECT_NE(why.find("telemetry unavailable"), std::string::npos) << why;
  EXPECT_NE(why.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << why;
  Series series;
  series.unavailable_reason = why;
  const Summary s = Summarize(series, 1000, 1000);
  EXPECT_FALSE(s.available);
  EXPECT_EQ(s.unavailable_reason, why);
  EXPECT_EQ(s.sample_count, 0);
}

// Spins until this process has used ms of CPU (not of wall time: on a
// loaded machine it takes longer, but does the same work).
void SpinCpu(int ms) {
  auto cpu_ms = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1000.0 + t.tv_nsec / 1e6;
  };
  const double end = cpu_ms() + ms;
  volatile double x = 0;
  while (cpu_ms() < end) x = x + 1;
}

TEST(Telemetry, HostSamplerRecordsCpuAndRssOfThisProcess) {
  Sampler sampler(OpenHost(), 20);
  sampler.Start();
  SpinCpu(300);
  const Series series = sampler.Stop();
  EXPECT_EQ(series.source, "host");
  ASSERT_GE(series.samples.size(), 5u);
  EXPECT_GT(series.samples.back().host_rss_bytes, 1 << 20);
  EXPECT_GT(series.samples.back().offset_ms, series.samples.front().offset_ms);
  const Summary s = Summarize(series, 0, 1000);
  EXPECT_TRUE(s.available);
  // One busy thread: near 100% alone, less on a loaded machine (a tenth
  // would take eight other busy processes a core), near 0 idle.
  EXPECT_GT(s.host_cpu_utilization_pct.mean, 10);
  EXPECT_LT(s.host_cpu_utilization_pct.mean, 250);
}

// Another process's CPU work over a window counts as contention; this
// process's own does not.
TEST(Telemetry, OtherCpuLoadCountsOtherProcessesBusyCores) {
  const auto start = std::chrono::steady_clock::now();
  OtherCpuLoad load;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    SpinCpu(600);
    _exit(0);
  }
  int status = 0;
  struct rusage usage {};
  wait4(child, &status, 0, &usage);
  double cores = -1;
  ASSERT_TRUE(load.Read(&cores));
  const double window_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double child_s = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 +
                         usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
  ASSERT_GT(child_s, 0.5) << "the child did not spin";
  // Every CPU second the child used is in the other processes' load (with
  // other tests' on a shared machine, so more, never less), whatever the
  // load stretched the window to. /proc/stat counts 10 ms ticks.
  EXPECT_GE(cores * window_s, child_s - 0.05)
      << cores << " cores over " << window_s << " s, the child used " << child_s << " s";
}

// A child that spins until killed, in process group `group` (0: a new one
// that it leads), outside the test's.
pid_t Spinner(pid_t group) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, group);
    volatile double x = 0;
    while (true) x = x + 1;
  }
  setpgid(pid, group == 0 ? pid : group);  // set whichever runs first
  return pid;
}

// Stops a spinner, so that its CPU time stays put.
void Freeze(pid_t pid) {
  kill(pid, SIGSTOP);
  int status = 0;
  waitpid(pid, &status, WUNTRACED);
}

// Kills and reaps a spinner; its CPU seconds as the kernel accounted them.
double Reap(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
         usage.ru_stime.tv_usec / 1e6;
}

// A process group's CPU time is read process by process from /proc: every
// member of the group, nothing else (not this process, not another group).
TEST(Telemetry, GroupCpuSecondsCountsEveryProcessOfTheGroupAndNoOther) {
  const pid_t leader = Spinner(0);
  const pid_t member = Spinner(leader);
  const pid_t foreign = Spinner(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (pid_t pid : {leader, member, foreign}) Freeze(pid);
  std::map<pid_t, double> group, other;
  ASSERT_TRUE(GroupCpuSeconds(leader, &group));
  ASSERT_TRUE(GroupCpuSeconds(foreign, &other));
  const double leader_s = Reap(leader), member_s = Reap(member), foreign_s = Reap(foreign);
  ASSERT_EQ(group.size(), 2u);
  ASSERT_EQ(group.count(leader), 1u);
  ASSERT_EQ(group.count(member), 1u);
  ASSERT_EQ(other.size(), 1u);
  ASSERT_EQ(other.count(foreign), 1u);
  // /proc counts clock ticks (10 ms); the kernel's own figure is finer.
  EXPECT_GT(leader_s + member_s, 0.02);
  EXPECT_NEAR(group[leader], leader_s, 0.03);
  EXPECT_NEAR(group[member], member_s, 0.03);
  EXPECT_NEAR(other[foreign], foreign_s, 0.03);
}

// The job's own group (a distributed run's other ranks) is left out of the
// other processes' load and counted as the job's; a process of another
// group still counts as other.
TEST(Telemetry, OtherCpuLoadLeavesOutTheJobsOwnGroupOnly) {
  const pid_t own = Spinner(0);  // stands for the other rank
  OtherCpuLoad by_group(own);
  OtherCpuLoad alone(0);  // this process alone is its own
  const pid_t foreign = Spinner(0);
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  Freeze(own);
  Freeze(foreign);
  double other = -1, job = -1, other_alone = -1, job_alone = -1;
  ASSERT_TRUE(by_group.Read(&other, &job));
  ASSERT_TRUE(alone.Read(&other_alone, &job_alone));
  const double window_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double own_s = Reap(own), foreign_s = Reap(foreign);
  ASSERT_GT(own_s, 0.1) << "the spinner did not run";
  // The group's spinner ran before the window too: it is counted from the
  // first reading. Load from elsewhere (other tests) is in both readings.
  EXPECT_GT(job, 0.1);
  EXPECT_LE(job * window_s, own_s + 0.03);
  EXPECT_EQ(job_alone, 0);
  EXPECT_NEAR(other_alone - other, job, 0.1);
  // The foreign spinner started inside the window: all of it is other.
  EXPECT_GE(other * window_s, foreign_s - 0.05);
}

// Only a worker started by the launcher (which sets the variable) takes its
// process group for its job's own: a test binary shares its group.
TEST(Telemetry, OwnProcessGroupOnlyWhereTheLauncherSaysSo) {
  unsetenv(kJobProcessGroupEnv);
  EXPECT_EQ(OwnProcessGroup(), 0);
  setenv(kJobProcessGroupEnv, "1", 1);
  EXPECT_EQ(OwnProcessGroup(), getpgrp());
  unsetenv(kJobProcessGroupEnv);
}

Series Recorded(const std::vector<uint64_t>& masks, float power_w) {
  Series series;
  series.source = "nvml";
  for (size_t i = 0; i < masks.size(); ++i) {
    Sample s;
    s.offset_ms = 100 * i;
    s.power_w = power_w;
    s.sm_clock_mhz = 1980 - 10 * i;
    s.throttle_reasons_mask = masks[i];
    series.samples.push_back(s);
  }
  return series;
}

TEST(Telemetry, ThrottledOnlyForThermalOrPowerReasons) {
  // Idle and application-clock reasons are not throttling.
  EXPECT_FALSE(Summarize(Recorded({0x1, 0x2, 0x0, 0x1}, 300), 1, 1000).throttled);
  const Summary thermal = Summarize(Recorded({0x0, 0x20, 0x0}, 300), 1, 1000);
  EXPECT_TRUE(thermal.throttled);
  EXPECT_EQ(thermal.throttle_reasons, std::vector<std::string>{"sw_thermal"});
  const Summary power = Summarize(Recorded({0x4 | 0x1, 0x0}, 300), 1, 1000);
  EXPECT_TRUE(power.throttled);
  EXPECT_EQ(power.throttle_reasons, (std::vector<std::string>{"gpu_idle", "sw_power_cap"}));
  for (uint64_t bit : {0x8, 0x40, 0x80}) {
    EXPECT_TRUE(IsThermalOrPowerThrottle(bit)) << bit;
  }
}

TEST(Telemetry, EnergyIsTheIntegralOfPower) {
  // 11 readings 100 ms apart at 250 W span 1 s: 250 W on average. A 1 s
  // window at 5000 samples/s: 250 J, 20 samples per joule.
  const Summary s = Summarize(Recorded(std::vector<uint64_t>(11, 0), 250), 5000, 1000);
  EXPECT_NEAR(s.energy_j, 250, 1e-6);
  EXPECT_NEAR(s.samples_per_joule, 20, 1e-9);
  EXPECT_NEAR(s.power_w.mean, 250, 1e-6);
  EXPECT_NEAR(s.sm_clock_mhz.max, 1980, 1e-6);
  EXPECT_NEAR(s.sm_clock_mhz.mean, 1930, 1e-6);
  EXPECT_EQ(s.sample_count, 11);
}

TEST(Telemetry, SamplesPerJouleCountsWorkAndEnergyOverOneInterval) {
  // The readings span 1 s of a 1.5 s window (they start and stop inside it).
  // Dividing the window's 7500 samples by the 250 J between the first and
  // last reading would claim 30 samples per joule; at 250 W the GPU does 20.
  const Summary s = Summarize(Recorded(std::vector<uint64_t>(11, 0), 250), 5000, 1500);
  EXPECT_NEAR(s.samples_per_joule, 20, 1e-9);
  EXPECT_NEAR(s.energy_j, 375, 1e-6);
}

TEST(Telemetry, PowerIsAveragedOverTimeNotOverReadings) {
  // Readings at 0, 100 and 1000 ms: 100 W, 100 W, then 400 W. By time the
  // mean is (100*0.1 + 250*0.9) / 1 = 235 W, not the readings' 200 W.
  Series series;
  series.source = "nvml";
  for (auto [at, watts] : {std::pair<int64_t, double>{0, 100}, {100, 100}, {1000, 400}}) {
    Sample x;
    x.offset_ms = at;
    x.power_w = watts;
    series.samples.push_back(x);
  }
  const Summary s = Summarize(series, 470, 1000);
  EXPECT_NEAR(s.samples_per_joule, 2, 1e-9);
  EXPECT_NEAR(s.energy_j, 235, 1e-6);
}

}  // namespace
}  // namespace gpubench::telemetry
