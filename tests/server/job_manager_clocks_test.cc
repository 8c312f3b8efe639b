// Runs that set their GPU's power limit or clocks, through the job runner
// with scripted workers and the stand-in NVML: one worker per setting, each
// undone after its worker, a crash included; refused where not allowed.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "launcher/clock_control.h"
#include "tests/server/job_manager_fixture.h"
#include "tests/support/read_file.h"

namespace gpubench::server {
namespace {

using testing_support::ReadFile;

class JobManagerClocksTest : public JobManagerTest {
 protected:
  void SetUp() override {
    JobManagerTest::SetUp();
    dir_ = ::testing::TempDir() + "/job_manager_clocks_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::system(("rm -rf '" + dir_ + "' && mkdir -p '" + dir_ + "'").c_str());
    setenv("GPUBENCH_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("FAKE_NVML_STATE", (dir_ + "/gpu").c_str(), 1);
    v1::GpuInfo* gpu = host_.add_gpus();
    gpu->set_index(0);
    gpu->set_pci_bus_id("00000000:1B:00.0");
  }
  void TearDown() override { unsetenv("FAKE_NVML_STATE"); }

  // A sweep of two batches at each power limit, on the GPU.
  static v1::JobSpec PowerSweep(std::initializer_list<double> watts) {
    v1::JobSpec spec = Sweep(2);
    spec.mutable_base()->set_device("cuda:0");
    for (double w : watts) spec.mutable_sweep()->add_power_limit_w(w);
    return spec;
  }

  std::string dir_;
};

TEST_F(JobManagerClocksTest, EachPowerLimitRunsInItsOwnWorkerAndIsUndoneEvenAfterACrash) {
  std::string why;
  ClockControl clocks(nvml::Library::Open(&why), dir_ + "/clock_state");
  Script script;
  script.crash_at = 2;  // the first worker (500 W: runs 0 and 2) dies in run 2
  auto jobs = Manager(script, nullptr, &clocks);
  auto job = jobs->Submit(PowerSweep({500, 420}), "", "tester");
  ASSERT_TRUE(job.ok()) << job.status();
  const v1::Job done = WaitFor(*jobs, job->job_id(), Terminal);
  EXPECT_EQ(done.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(done.runs_failed(), 1);
  // Two workers, one a setting, each given only its setting's runs.
  ASSERT_EQ(requests_.size(), 2u);
  for (const v1::WorkerRequest& r : requests_) {
    ASSERT_EQ(r.runs_size(), 2);
    EXPECT_EQ(r.runs(0).config().power_limit_w(), r.runs(1).config().power_limit_w());
  }
  EXPECT_EQ(requests_[0].runs(0).config().power_limit_w(), 500);
  // Set before each worker, put back after it: after the crash too.
  EXPECT_EQ(ReadFile(dir_ + "/gpu.log"), "power 500000\npower 700000\npower 420000\npower 700000\n");
  EXPECT_EQ(ReadFile(dir_ + "/gpu"), "700000 0\n");
  auto runs = store_->runs().List(job->job_id(), false);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 4u);
  EXPECT_EQ((*runs)[2].state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ((*runs)[3].state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ((*runs)[3].config().power_limit_w(), 420);

  // A lock is recorded in each run's fingerprint (NVML cannot read it back).
  v1::JobSpec locked = Sweep(1);
  locked.mutable_base()->set_device("cuda:0");
  locked.mutable_base()->set_gpu_clocks("1410");
  auto lock_job = jobs->Submit(locked, "", "tester");
  ASSERT_TRUE(lock_job.ok()) << lock_job.status();
  EXPECT_EQ(WaitFor(*jobs, lock_job->job_id(), Terminal).state(), v1::JOB_STATE_SUCCEEDED);
  auto lock_runs = store_->runs().List(lock_job->job_id(), false);
  ASSERT_TRUE(lock_runs.ok());
  ASSERT_EQ(lock_runs->size(), 1u);
  EXPECT_EQ((*lock_runs)[0].fingerprint().locked_gpu_clock_mhz(), 1410);
  EXPECT_EQ(ReadFile(dir_ + "/gpu"), "700000 0\n");
  // A limit the board does not take fails the job saying so, and sets nothing.
  auto job_low = jobs->Submit(PowerSweep({150}), "", "tester");
  ASSERT_TRUE(job_low.ok()) << job_low.status();
  const v1::Job low = WaitFor(*jobs, job_low->job_id(), Terminal);
  EXPECT_EQ(low.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(low.error().find("150 W is outside this GPU's range, 200-700 W"), std::string::npos)
      << low.error();
  EXPECT_EQ(ReadFile(dir_ + "/gpu"), "700000 0\n");
}

TEST_F(JobManagerClocksTest, WithoutTheOperatorsLeaveASettingIsRefusedAtSubmit) {
  auto jobs = Manager(Script());
  auto swept = jobs->PlanJob(PowerSweep({500}));
  EXPECT_TRUE(absl::IsInvalidArgument(swept.status())) << swept.status();
  EXPECT_NE(swept.status().message().find("spec.sweep.power_limit_w: this daemon does not allow "
                                          "clock control"),
            std::string::npos)
      << swept.status();
  EXPECT_NE(swept.status().message().find("--allow-clock-control"), std::string::npos);
  v1::JobSpec locked = Sweep(1);
  locked.mutable_base()->set_device("cuda:0");
  locked.mutable_base()->set_gpu_clocks("max");
  auto base = jobs->PlanJob(locked);
  EXPECT_NE(base.status().message().find("spec.base.gpu_clocks"), std::string::npos)
      << base.status();
  // On the CPU a setting means nothing: refused by the spec's own checks.
  v1::JobSpec on_cpu = Sweep(1);
  on_cpu.mutable_base()->set_power_limit_w(500);
  auto cpu = jobs->PlanJob(on_cpu);
  EXPECT_NE(cpu.status().message().find("power_limit_w: sets a GPU's clocks or power: it needs "
                                        "device cuda"),
            std::string::npos)
      << cpu.status();
  // ddp and collective take whichever GPUs are free: no setting for them.
  v1::JobSpec ddp = Sweep(1);
  ddp.mutable_base()->set_workload("collective");
  ddp.mutable_base()->set_device("cuda");
  ddp.mutable_base()->set_power_limit_w(500);
  auto ranks = jobs->PlanJob(ddp);
  EXPECT_NE(ranks.status().message().find("collective takes whichever GPUs are free"),
            std::string::npos)
      << ranks.status();
}

}  // namespace
}  // namespace gpubench::server
