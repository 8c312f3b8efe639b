// The job runner alone (server/job_runner.h): a planned job stored as
// queued, run to its end by JobRunner with scripted workers (the job
// manager's test fixture's) and a clock that moves only when told, without
// a job manager, a queue or a dispatcher.
#include "server/job_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/event_log.h"
#include "server/job_clock.h"
#include "server/job_planner.h"
#include "server/job_recorder.h"
#include "report/fleet_rank.h"
#include "tests/server/job_manager_fixture.h"

namespace gpubench::server {
namespace {

class JobRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/job_runner_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
    auto store = storage::Store::Open({path_});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    host_.set_host_id("runner-host");
    options_.clock = &clock_;
    options_.stop_grace_ms = 200;
    events_ = std::make_unique<EventLog>(store_.get());
    recorder_ = std::make_unique<JobRecorder>(store_.get(), events_.get(), host_.host_id(), 0);
    planner_ = std::make_unique<JobPlanner>(PlannerOptions{}, store_.get(), host_);
  }

  // The runner with workers playing script.
  std::unique_ptr<JobRunner> Runner(const Script& script) {
    launcher_ = std::make_unique<FakeLauncher>(script, &started_, &requests_, &requests_mu_);
    return std::make_unique<JobRunner>(options_, store_.get(), host_, planner_.get(),
                                       recorder_.get(), launcher_.get(), &host_pairs_);
  }

  // spec planned and stored as a queued job, as a submit leaves it, and
  // handed to the runner as the dispatcher does (the daemon's own probe
  // specs planned without the probe check).
  std::shared_ptr<RunningJob> Queued(const v1::JobSpec& spec, bool daemon_probe = false) {
    auto plan = daemon_probe ? planner_->PlanSpec(spec) : planner_->PlanJob(spec);
    EXPECT_TRUE(plan.ok()) << plan.status();
    v1::Job job;
    *job.mutable_spec() = plan->spec;
    job.set_state(v1::JOB_STATE_QUEUED);
    job.set_run_count(plan->runs.size());
    v1::JobPlan stored;
    for (const v1::RunConfig& run : plan->runs) *stored.add_runs() = run;
    auto id = store_->jobs().Insert(job, stored);
    EXPECT_TRUE(id.ok()) << id.status();
    auto running = std::make_shared<RunningJob>();
    running->job.set_job_id(*id);
    running->leases = planner_->LeasesOf(job, plan->runs).leases;
    return running;
  }

  std::vector<v1::Run> Runs(const std::string& job_id) {
    auto runs = store_->runs().List(job_id, false);
    EXPECT_TRUE(runs.ok()) << runs.status();
    return runs.ok() ? *runs : std::vector<v1::Run>();
  }

  std::string path_;
  std::unique_ptr<storage::Store> store_;
  v1::HostInfo host_;
  ManualJobClock clock_;
  DaemonOptions options_;
  std::unique_ptr<EventLog> events_;
  std::unique_ptr<JobRecorder> recorder_;
  std::unique_ptr<JobPlanner> planner_;
  std::unique_ptr<FakeLauncher> launcher_;
  std::atomic<int> started_{0};
  std::mutex requests_mu_;
  std::vector<v1::WorkerRequest> requests_;
  HostPairs host_pairs_;
};

// A pair across hosts runs its one rank here, alone (no rank group), with
// the rank RunHostPair kept for it; once its daemon restarted (the rank is
// gone with its memory) it fails at its start, saying so, and no worker
// starts.
TEST_F(JobRunnerTest, APairAcrossHostsRunsItsOneRankOrFailsAfterARestart) {
  auto runner = Runner(Script());
  const v1::JobSpec spec = report::HostPairJob(host_, "peer-host");
  auto joined = Queued(spec, /*daemon_probe=*/true);
  v1::RunHostPairRequest join;
  join.set_side(v1::RunHostPairRequest::SIDE_JOIN);
  join.set_peer("peer-host");
  join.set_store_address("10.0.0.1:29500");
  join.set_secret(std::string(32, 's'));
  auto rank = PairRankOf(join, "10.0.0.2:29500", "cpu");
  ASSERT_TRUE(rank.ok()) << rank.status();
  host_pairs_.Add(joined->job.job_id(), *rank);
  runner->Run(joined);
  EXPECT_EQ(joined->job.state(), v1::JOB_STATE_SUCCEEDED) << joined->job.error();
  EXPECT_EQ(started_.load(), 1);
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_[0].rank().rank(), 1);
  EXPECT_EQ(requests_[0].rank().host_pair().store_address(), "10.0.0.1:29500");

  auto forgotten = Queued(spec, /*daemon_probe=*/true);
  runner->Run(forgotten);
  EXPECT_EQ(forgotten->job.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(forgotten->job.error().find("restarted since"), std::string::npos)
      << forgotten->job.error();
  EXPECT_EQ(started_.load(), 1);
}

// Every planned run is measured and stored in one worker, which gets the
// plan's runs and settings; the job succeeds, and its runs record the job
// that ran beside them.
TEST_F(JobRunnerTest, AJobRunsItsPlanToTheEnd) {
  auto runner = Runner(Script());
  auto running = Queued(EmptySweep(3));
  runner->JobStarted("j-beside");
  runner->JobStarted(running->job.job_id());
  runner->Run(running);
  {
    absl::MutexLock lock(&running->mu);
    EXPECT_TRUE(running->finished);
  }
  EXPECT_EQ(running->job.state(), v1::JOB_STATE_SUCCEEDED) << running->job.error();
  EXPECT_EQ(store_->jobs().Get(running->job.job_id())->state(), v1::JOB_STATE_SUCCEEDED);
  const std::vector<v1::Run> runs = Runs(running->job.job_id());
  ASSERT_EQ(runs.size(), 3u);
  for (const v1::Run& r : runs) {
    EXPECT_EQ(r.host_id(), "runner-host");
    ASSERT_EQ(r.result().contention().jobs_beside_size(), 1);
    EXPECT_EQ(r.result().contention().jobs_beside(0), "j-beside");
  }
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_[0].runs_size(), 3);
  EXPECT_EQ(requests_[0].settings().SerializeAsString(),
            WorkerSettingsOf(running->job.spec()).SerializeAsString());
  runner->JobEnded("j-beside");
  runner->JobEnded(running->job.job_id());
}

// A worker that dies inside a run costs that run: it is stored as failed,
// the rest runs in a fresh worker, and the job fails saying how many.
TEST_F(JobRunnerTest, AWorkerCrashCostsItsRunOnly) {
  Script script;
  script.crash_at = 1;
  auto runner = Runner(script);
  auto running = Queued(EmptySweep(3));
  runner->Run(running);
  EXPECT_EQ(running->job.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(running->job.error().find("1 of 3 runs failed"), std::string::npos)
      << running->job.error();
  const std::vector<v1::Run> runs = Runs(running->job.job_id());
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[1].state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(runs[2].state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(started_.load(), 2);
}

// On the clock seam: a worker that ignores its stop runs until the job's
// hour is up on the manual clock, then is killed after the grace period,
// and the job fails as timed out, in milliseconds of real time.
TEST_F(JobRunnerTest, AJobThatOutlivesItsTimeoutIsStoppedOnTheClock) {
  Script script;
  script.hang = true;
  script.ignore_stop = true;
  auto runner = Runner(script);
  auto running = Queued(EmptySweep(2, /*timeout_s=*/3600));
  std::thread run([&] { runner->Run(running); });
  for (int minute = 0; minute < 120; ++minute) {
    {
      absl::MutexLock lock(&running->mu);
      if (running->finished) break;
    }
    clock_.Advance(absl::Minutes(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  run.join();
  EXPECT_EQ(running->job.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(running->job.error(), "timed out after 3600 s; completed runs are kept");
}

}  // namespace
}  // namespace gpubench::server
