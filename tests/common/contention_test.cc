// When a run counts as contended, and which runs may serve as a baseline.
#include "common/contention.h"

#include <gtest/gtest.h>

namespace gpubench {
namespace {

TEST(Contention, JobsBesideOtherGpuProcessesOrBusyCoresMakeARunContended) {
  v1::Contention quiet;
  quiet.set_other_cpu_cores(kContendedOtherCores);  // at the line: still quiet
  quiet.set_load_average_1m(7);                     // recorded, not judged
  EXPECT_FALSE(IsContended(quiet));
  v1::Contention busy = quiet;
  busy.set_other_cpu_cores(kContendedOtherCores + 0.1);
  EXPECT_TRUE(IsContended(busy));
  v1::Contention beside;
  beside.add_jobs_beside("j1");
  EXPECT_TRUE(IsContended(beside));
  v1::Contention shared_gpu;
  shared_gpu.set_gpu_processes(1);
  EXPECT_TRUE(IsContended(shared_gpu));
}

TEST(Contention, ContendedAndThermallyThrottledRunsAreNoBaselineButAPowerCapIs) {
  v1::Run run;
  EXPECT_EQ(NotABaselineBecause(run), "");
  // A GPU under full load runs at its power cap: that is its normal state.
  run.mutable_result()->mutable_telemetry()->add_throttle_reasons("sw_power_cap");
  EXPECT_EQ(NotABaselineBecause(run), "");
  run.mutable_result()->mutable_telemetry()->add_throttle_reasons("hw_thermal");
  EXPECT_EQ(NotABaselineBecause(run), "throttled (hw_thermal)");
  v1::Contention* c = run.mutable_result()->mutable_contention();
  c->add_jobs_beside("j1");
  c->add_jobs_beside("j2");
  c->set_other_cpu_cores(1.5);
  c->set_contended(true);
  EXPECT_EQ(NotABaselineBecause(run), "contended (2 jobs beside, 1.5 cores busy elsewhere)");
}

}  // namespace
}  // namespace gpubench
