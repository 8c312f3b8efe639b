// The job manager's lanes on a fake GPU host: jobs on other GPUs side by
// side, cuda:all in a worker per GPU, and k-GPU jobs taking k free ones.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tests/server/job_manager_fixture.h"

namespace gpubench::server {
namespace {

// Jobs on different GPUs run side by side and each run records the other;
// a CPU job, or an exclusive one (a schedule's, by default), waits until
// the host is free and then runs alone.
TEST_F(JobManagerTest, JobsOnOtherGpusRunBesideAndSaySoWhileCpuAndExclusiveJobsWait) {
  host_.add_gpus()->set_index(0);
  host_.add_gpus()->set_index(1);
  Script script;
  script.hang = true;
  script.hang_only_on = "cuda:0";
  auto jobs = Manager(script);
  auto on = [](const std::string& device) {
    v1::JobSpec spec = Sweep(1);
    spec.mutable_base()->set_device(device);
    return spec;
  };
  auto gpu0 = jobs->Submit(on("cuda:0"), "", "tester");
  ASSERT_TRUE(gpu0.ok()) << gpu0.status();
  WaitFor(*jobs, gpu0->job_id(),
          [](const v1::Job& j) { return j.state() == v1::JOB_STATE_RUNNING; });
  auto gpu1 = jobs->Submit(on("cuda:1"), "", "tester");
  auto cpu = jobs->Submit(on("cpu"), "", "tester");
  auto scheduled = jobs->Submit(on("cuda:1"), "snightly", "scheduler");
  ASSERT_TRUE(gpu1.ok() && cpu.ok() && scheduled.ok());
  EXPECT_EQ(WaitFor(*jobs, gpu1->job_id(), Terminal).state(), v1::JOB_STATE_SUCCEEDED);
  auto beside = store_->runs().List(gpu1->job_id(), false);
  ASSERT_TRUE(beside.ok() && beside->size() == 1u);
  const v1::Contention& c = (*beside)[0].result().contention();
  ASSERT_EQ(c.jobs_beside_size(), 1);
  EXPECT_EQ(c.jobs_beside(0), gpu0->job_id());
  EXPECT_TRUE(c.contended());
  EXPECT_GT(c.cpu_count(), 0);
  // The CPU job and the schedule's job wait while cuda:0 is busy: the
  // dispatcher has looked at them and started neither.
  WaitForIdle(*jobs);
  EXPECT_EQ(jobs->CurrentLoad().queued, 2);  // neither was taken from the queue
  EXPECT_EQ(jobs->GetJob(cpu->job_id())->state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(jobs->GetJob(scheduled->job_id())->state(), v1::JOB_STATE_QUEUED);
  ASSERT_TRUE(jobs->Cancel(gpu0->job_id()).ok());
  for (const auto* job : {&*cpu, &*scheduled}) {
    EXPECT_EQ(WaitFor(*jobs, job->job_id(), Terminal).state(), v1::JOB_STATE_SUCCEEDED);
    auto runs = store_->runs().List(job->job_id(), false);
    ASSERT_TRUE(runs.ok() && runs->size() == 1u);
    EXPECT_EQ((*runs)[0].result().contention().jobs_beside_size(), 0)
        << (*runs)[0].result().contention().ShortDebugString();
  }
}

// A fake host of four GPUs: cuda:all runs the same point on each, in four
// workers at the same time, each skipping the other GPUs' points.
TEST_F(JobManagerTest, CudaAllRunsEachGpusPointsInItsOwnWorkerSideBySide) {
  for (int i = 0; i < 4; ++i) host_.add_gpus()->set_index(i);
  Meeting meeting;
  meeting.want = 4;
  Script script;
  script.meeting = &meeting;
  auto jobs = Manager(script);
  v1::JobSpec spec = Sweep(1);
  spec.mutable_base()->set_device("cuda:all");
  // The plan (what SubmitJob and a dry run answer) is the rewritten spec's.
  auto plan = jobs->PlanJob(spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->runs.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(plan->runs[i].device(), "cuda:" + std::to_string(i));
  auto job = jobs->Submit(spec, "", "tester");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(job->spec().parallel_devices());
  EXPECT_EQ(job->spec().SerializeAsString(), plan->spec.SerializeAsString());
  ASSERT_EQ(job->spec().sweep().device_size(), 4);
  EXPECT_EQ(job->run_count(), 4);
  // The plan is stored with the job, and is what its workers are given.
  auto stored = store_->jobs().GetPlan(job->job_id());
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->runs_size(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(stored->runs(i).SerializeAsString(), plan->runs[i].SerializeAsString()) << i;
  }
  EXPECT_EQ(WaitFor(*jobs, job->job_id(), Terminal).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(meeting.most, 4);  // all four were in a run at once
  auto runs = store_->runs().List(job->job_id(), false);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*runs)[i].config().device(), "cuda:" + std::to_string(i));
    EXPECT_EQ((*runs)[i].state(), v1::RUN_STATE_SUCCEEDED);
  }
  {
    std::lock_guard<std::mutex> lock(requests_mu_);
    ASSERT_EQ(requests_.size(), 4u);
    // Each lane's worker gets its one run of the plan, and no sweep to
    // expand again.
    std::set<std::string> devices;
    for (const v1::WorkerRequest& r : requests_) {
      ASSERT_EQ(r.runs_size(), 1);
      EXPECT_EQ(r.job_run_count(), 4);
      // The settings the plan holds, defaults filled at submit (the spec
      // set none): the worker fills nothing of its own.
      EXPECT_EQ(r.settings().SerializeAsString(),
                WorkerSettingsOf(job->spec()).SerializeAsString());
      EXPECT_EQ(r.settings().measurement().min_iterations(), 20);
      EXPECT_GT(r.settings().telemetry().interval_ms(), 0);
      devices.insert(r.runs(0).config().device());
    }
    EXPECT_EQ(devices, (std::set<std::string>{"cuda:0", "cuda:1", "cuda:2", "cuda:3"}));
    // The lanes share the first lane's process group, so that each counts
    // the others as its job's own, not as contention.
    EXPECT_EQ(requests_[0].process_group(), 0);  // a new group (the fake's 1000)
    for (int i = 1; i < 4; ++i) EXPECT_EQ(requests_[i].process_group(), 1000) << i;
  }
  // The next job's worker starts a group of its own.
  auto next = jobs->Submit(Sweep(1), "", "tester");
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(WaitFor(*jobs, next->job_id(), Terminal).state(), v1::JOB_STATE_SUCCEEDED);
  {
    std::lock_guard<std::mutex> lock(requests_mu_);
    ASSERT_EQ(requests_.size(), 5u);
    EXPECT_EQ(requests_[4].process_group(), 0);
  }
  // No GPU on the host: refused, naming the field.
  host_.clear_gpus();
  auto none = Manager(Script())->Submit(spec, "", "tester");
  EXPECT_TRUE(absl::IsInvalidArgument(none.status())) << none.status();
  EXPECT_NE(none.status().message().find("spec.base.device"), std::string::npos);
}

// On a fake 4-GPU host with cuda:1 busy, a 4-rank ddp job waits (three are
// free; it takes four together or none) and keeps the free ones from a
// 3-rank job queued after it; once cuda:1 is free its ranks get cuda:0-3 in
// order and rank 0's store port. More ranks than GPUs is refused at submit.
TEST_F(JobManagerTest, AJobOfKGpusTakesKFreeOnesAndItsRanksGetThem) {
  for (int i = 0; i < 4; ++i) host_.add_gpus()->set_index(i);
  Script script;
  script.hang = true;
  script.hang_only_on = "cuda:1";
  auto jobs = Manager(script);
  v1::JobSpec busy = Sweep(1);
  busy.mutable_base()->set_device("cuda:1");
  auto first = jobs->Submit(busy, "", "tester");
  ASSERT_TRUE(first.ok()) << first.status();
  WaitFor(*jobs, first->job_id(),
          [](const v1::Job& j) { return j.state() == v1::JOB_STATE_RUNNING; });
  v1::JobSpec ddp;
  ddp.mutable_base()->set_workload("ddp");
  ddp.mutable_base()->set_device("cuda");
  ddp.mutable_base()->set_world_size(4);
  auto wide = jobs->Submit(ddp, "", "tester");
  ASSERT_TRUE(wide.ok()) << wide.status();
  ddp.mutable_base()->set_world_size(3);
  auto three = jobs->Submit(ddp, "", "tester");
  ASSERT_TRUE(three.ok()) << three.status();
  // Four GPUs wanted, three free: the 4-rank job waits and keeps them, so
  // the 3-rank job queued after it waits too.
  WaitForIdle(*jobs);
  EXPECT_EQ(jobs->CurrentLoad().queued, 2);  // neither was taken from the queue
  EXPECT_EQ(jobs->GetJob(wide->job_id())->state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(jobs->GetJob(three->job_id())->state(), v1::JOB_STATE_QUEUED);
  ASSERT_TRUE(jobs->Cancel(first->job_id()).ok());
  EXPECT_EQ(WaitFor(*jobs, wide->job_id(), Terminal).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(WaitFor(*jobs, three->job_id(), Terminal).state(), v1::JOB_STATE_SUCCEEDED);
  {
    std::lock_guard<std::mutex> lock(requests_mu_);
    std::vector<const v1::WorkerRequest*> ranks;
    for (const v1::WorkerRequest& r : requests_) {
      if (r.has_rank() && r.rank().world_size() == 4) ranks.push_back(&r);
    }
    ASSERT_EQ(ranks.size(), 4u);
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(ranks[r]->rank().rank(), r);
      ASSERT_EQ(ranks[r]->rank().devices_size(), 4);
      EXPECT_EQ(ranks[r]->rank().devices(r), "cuda:" + std::to_string(r));
      EXPECT_EQ(ranks[r]->rank().store_port(), r == 0 ? 0 : 4321);
    }
  }
  auto runs = store_->runs().List(wide->job_id(), false);
  ASSERT_TRUE(runs.ok() && runs->size() == 1u);
  EXPECT_EQ((*runs)[0].state(), v1::RUN_STATE_SUCCEEDED);
  ddp.mutable_base()->set_world_size(5);
  auto too_wide = jobs->Submit(ddp, "", "tester");
  EXPECT_TRUE(absl::IsInvalidArgument(too_wide.status())) << too_wide.status();
  EXPECT_NE(too_wide.status().message().find("spec.base.world_size: 5 ranks on cuda need as "
                                             "many GPUs; this host has 4"),
            std::string::npos)
      << too_wide.status();
}

// Other ranks' traces come only from the rank group, one a rank of the
// run: what a worker writes of them itself (a model in it may) is dropped.
TEST_F(JobManagerTest, OtherRanksTracesAreTheGroupsAndNeverAWorkersOwn) {
  for (int i = 0; i < 2; ++i) host_.add_gpus()->set_index(i);
  Script script;
  script.traces = true;
  auto jobs = Manager(script);
  v1::JobSpec ddp;
  ddp.mutable_base()->set_workload("ddp");
  ddp.mutable_base()->set_device("cuda");
  ddp.mutable_base()->set_world_size(2);
  for (const v1::JobSpec& spec : {Sweep(1), ddp}) {
    auto job = jobs->Submit(spec, "", "tester");
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(WaitFor(*jobs, job->job_id(), Terminal).state(), v1::JOB_STATE_SUCCEEDED);
    auto runs = store_->runs().List(job->job_id(), false);
    ASSERT_TRUE(runs.ok() && runs->size() == 1u);
    const v1::Run& run = (*runs)[0];
    const bool ranked = spec.base().world_size() == 2;
    EXPECT_EQ(run.result().profile().traced_ranks_size(), ranked ? 2 : 0)
        << run.result().profile().ShortDebugString();
    EXPECT_EQ(store_->runs().GetTrace(run.run_id())->second, "{\"rank\": 0}");
    auto one = store_->runs().GetTrace(run.run_id(), 1);
    if (ranked) {
      ASSERT_TRUE(one.ok()) << one.status();
      EXPECT_EQ(one->second, "{\"rank\": 1}");  // rank 1's own, not rank 0's word
    } else {
      EXPECT_TRUE(absl::IsNotFound(one.status())) << one.status();
    }
    EXPECT_TRUE(absl::IsNotFound(store_->runs().GetTrace(run.run_id(), -3).status()));
  }
}

}  // namespace
}  // namespace gpubench::server
