// The job runner in process, with scripted workers (no worker binary, no
// LibTorch) over a real SQLite store: crash isolation, cancel, timeout and
// requeue after a shutdown, each decided by JobManager itself; the probe
// suite's mark.
#include "server/job_manager.h"

#include <functional>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "tests/server/job_manager_fixture.h"

namespace gpubench::server {
namespace {

TEST_F(JobManagerTest, AWorkerCrashFailsOnlyItsRunAndAFreshWorkerGoesOn) {
  Script script;
  script.crash_at = 1;
  auto jobs = Manager(script);
  auto job = jobs->Submit(Sweep(3), "", "tester");
  ASSERT_TRUE(job.ok()) << job.status();
  v1::Job done = WaitFor(*jobs, job->job_id(), Terminal);
  // The job is not a success with a run missing, and says how many failed.
  EXPECT_EQ(done.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(done.error().find("1 of 3 runs failed"), std::string::npos) << done.error();
  EXPECT_EQ(done.runs_failed(), 1);
  EXPECT_EQ(started_.load(), 2);  // the crashed one, then a fresh one for run 2
  auto runs = store_->runs().List(job->job_id(), false);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[0].state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ((*runs)[1].state(), v1::RUN_STATE_FAILED);
  EXPECT_NE((*runs)[1].error().find("signal 11"), std::string::npos) << (*runs)[1].error();
  EXPECT_NE((*runs)[1].error().find("Segmentation fault"), std::string::npos);
  EXPECT_EQ((*runs)[2].state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(done.runs_done(), 3);
}

// A model that writes to the worker's event descriptor breaks its stream
// inside its run: that run fails saying so, the worker is killed, and the
// sweep goes on in a fresh worker, as after a crash.
TEST_F(JobManagerTest, AStreamBrokenInsideARunFailsThatRunByName) {
  Script script;
  script.break_stream_at = 1;
  auto jobs = Manager(script);
  auto job = jobs->Submit(Sweep(3), "", "tester");
  ASSERT_TRUE(job.ok()) << job.status();
  v1::Job done = WaitFor(*jobs, job->job_id(), Terminal);
  EXPECT_EQ(done.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(done.error().find("1 of 3 runs failed"), std::string::npos) << done.error();
  auto runs = store_->runs().List(job->job_id(), false);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[0].state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ((*runs)[1].state(), v1::RUN_STATE_FAILED);
  EXPECT_NE((*runs)[1].error().find("the worker's event stream broke in this run"),
            std::string::npos)
      << (*runs)[1].error();
  EXPECT_NE((*runs)[1].error().find("a malformed event"), std::string::npos);
  EXPECT_EQ((*runs)[2].state(), v1::RUN_STATE_SUCCEEDED);
}

// What this host cannot run is refused when the job is planned, naming the
// field, rather than failing in a worker after it was queued.
TEST_F(JobManagerTest, WhatTheHostCannotRunIsRefusedAtSubmitNamingTheField) {
  auto jobs = Manager(Script());
  struct Case {
    std::function<void(v1::JobSpec*)> set;
    const char* field;
  };
  const Case cases[] = {
      {[](v1::JobSpec* s) { s->mutable_base()->set_device("cuda"); }, "spec.base.device"},
      {[](v1::JobSpec* s) { s->mutable_base()->set_device("cuda:3"); }, "spec.base.device"},
      {[](v1::JobSpec* s) {
         s->mutable_sweep()->add_device("cpu");
         s->mutable_sweep()->add_device("cuda:0");
       },
       "spec.sweep.device"},
      {[](v1::JobSpec* s) { s->mutable_base()->set_device("mps"); }, "spec.base.device"},
      {[](v1::JobSpec* s) { s->mutable_base()->set_precision(v1::PRECISION_FP16); },
       "spec.base.precision"},
  };
  for (const Case& c : cases) {
    v1::JobSpec spec = Sweep(1);
    spec.mutable_base()->set_workload("mlp");
    c.set(&spec);
    auto plan = jobs->PlanJob(spec);
    EXPECT_TRUE(absl::IsInvalidArgument(plan.status())) << spec.ShortDebugString();
    EXPECT_NE(plan.status().message().find(c.field), std::string::npos) << plan.status();
  }
  // What means nothing there is taken, with a note naming it, once.
  v1::JobSpec idle = Sweep(2);
  idle.mutable_base()->set_workload("resnet18");
  idle.mutable_base()->mutable_params()->set_model_size("large");  // resnet18 has no sizes
  idle.mutable_base()->set_cudnn_benchmark(true);
  idle.mutable_base()->set_precision(v1::PRECISION_TF32);
  auto noted = jobs->PlanJob(idle);
  ASSERT_TRUE(noted.ok()) << noted.status();
  const std::string notes = absl::StrJoin(noted->notes, "\n");
  EXPECT_EQ(noted->notes.size(), 3u) << notes;  // not one per run
  EXPECT_NE(notes.find("params.model_size means nothing for resnet18"), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("cudnn_benchmark means nothing on the CPU"), std::string::npos) << notes;
  EXPECT_NE(notes.find("tf32 means nothing on the CPU"), std::string::npos) << notes;
  idle.mutable_base()->set_precision(v1::PRECISION_FP32_DEFAULT);
  auto pytorch_default = jobs->PlanJob(idle);
  ASSERT_TRUE(pytorch_default.ok()) << pytorch_default.status();
  EXPECT_NE(absl::StrJoin(pytorch_default->notes, "\n")
                .find("precision fp32_default means nothing on the CPU: it runs fp32 there"),
            std::string::npos);
  EXPECT_TRUE(jobs->PlanJob(Sweep(1))->notes.empty());
  // With the GPU there, the same cuda:0 plans.
  host_.add_gpus()->set_index(0);
  v1::JobSpec on_gpu = Sweep(1);
  on_gpu.mutable_base()->set_device("cuda:0");
  on_gpu.mutable_base()->set_precision(v1::PRECISION_FP16);
  EXPECT_TRUE(Manager(Script())->PlanJob(on_gpu).ok());
}

// A worker killed (at a limit, say) after its last run was stored lost
// nothing: the job ends on its runs, and its log says how the worker ended.
TEST_F(JobManagerTest, AWorkerKilledAfterItsLastRunLosesNothing) {
  Script script;
  script.die_after_last = true;
  auto jobs = Manager(script);
  auto job = jobs->Submit(Sweep(2), "", "tester");
  ASSERT_TRUE(job.ok()) << job.status();
  const v1::Job done = WaitFor(*jobs, job->job_id(), Terminal);
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.error();
  auto runs = store_->runs().List(job->job_id(), false);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 2u);
  EXPECT_EQ(started_.load(), 1);  // no second worker for nothing
  std::vector<v1::ProgressEvent> events;
  bool ended = false;
  ASSERT_TRUE(jobs->EventsAfter(job->job_id(), 0, &events, &ended).ok());
  bool said = false;
  for (const auto& e : events) {
    said |= e.has_log() && e.log().text().find("after its last run was stored") !=
                               std::string::npos;
  }
  EXPECT_TRUE(said);
}

// A worker runs what the plan gave it: a run it reports under another
// index is refused and the worker stopped, and a config it reports is
// replaced by the plan's.
TEST_F(JobManagerTest, AWorkerIsHeldToThePlan) {
  Script script;
  script.rogue_index = 7;
  script.rogue_config = true;
  auto jobs = Manager(script);
  auto job = jobs->Submit(Sweep(3), "", "tester");
  ASSERT_TRUE(job.ok()) << job.status();
  v1::Job done = WaitFor(*jobs, job->job_id(), Terminal);
  EXPECT_EQ(done.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(done.error().find("reported run 7, which it was not given"), std::string::npos)
      << done.error();
  auto runs = store_->runs().List(job->job_id(), false);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);  // run 0; nothing under index 7
  EXPECT_EQ((*runs)[0].index(), 0);
  EXPECT_EQ((*runs)[0].config().batch_size(), 1);  // the plan's, not the 999 reported
}

TEST_F(JobManagerTest, CancelStopsARunningWorkerAndEndsTheJobCancelled) {
  Script script;
  script.hang = true;
  auto jobs = Manager(script);
  absl::StatusOr<v1::Job> job = SubmitRunning(*jobs, Sweep(2));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(jobs->Cancel(job->job_id()).ok());
  v1::Job done = WaitFor(*jobs, job->job_id(), Terminal);
  EXPECT_EQ(done.state(), v1::JOB_STATE_CANCELLED) << done.error();
  // A queued job is cancelled at once, without a worker.
  auto running = jobs->Submit(Sweep(1), "", "tester");
  auto queued = jobs->Submit(Sweep(1), "", "tester");
  ASSERT_TRUE(queued.ok());
  auto cancelled = jobs->Cancel(queued->job_id());
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(jobs->GetJob(queued->job_id())->state(), v1::JOB_STATE_CANCELLED);
  jobs->Cancel(running->job_id()).IgnoreError();
}

// Events the store cannot take while a job ends (another process holds its
// write lock) are not dropped: the job still reads cancelled, and once the
// store writes again its stored events are the whole stream, in order.
TEST_F(JobManagerTest, DurableEventsTheStoreRefusedAreWrittenWhenItWritesAgain) {
  Script script;
  script.hang = true;
  auto jobs = Manager(script);
  absl::StatusOr<v1::Job> job = SubmitRunning(*jobs, Sweep(2));
  ASSERT_TRUE(job.ok()) << job.status();
  auto stored = [&] { return *store_->jobs().ListEvents(job->job_id(), 0); };
  const size_t before = stored().size();
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  ASSERT_TRUE(jobs->Cancel(job->job_id()).ok());
  EXPECT_EQ(WaitFor(*jobs, job->job_id(), Terminal).state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(stored().size(), before);  // nothing more could be written
  // While the lock is held no job is accepted.
  EXPECT_EQ(jobs->Submit(Sweep(1), "", "tester").status().code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_EQ(sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  auto next = jobs->Submit(Sweep(1), "", "tester");  // writes what waited first
  ASSERT_TRUE(next.ok()) << next.status();
  const std::vector<v1::ProgressEvent> events = stored();
  ASSERT_GT(events.size(), before);
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].sequence(), static_cast<int64_t>(i + 1));
  }
  ASSERT_TRUE(events.back().has_state_changed()) << events.back().DebugString();
  EXPECT_EQ(events.back().state_changed().state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(store_->jobs().Get(job->job_id())->state(), v1::JOB_STATE_CANCELLED);
  jobs->Cancel(next->job_id()).IgnoreError();
}

// On a clock that moves only when told: the job runs until its hour is up,
// its worker ignores the stop, and after the grace it is killed.
TEST_F(JobManagerTest, AWorkerThatIgnoresStopIsKilledAtTheTimeout) {
  Script script;
  script.hang = true;
  script.ignore_stop = true;
  ManualJobClock clock;
  auto jobs = Manager(script, &clock);
  const absl::Time submitted = clock.Now();
  auto job = jobs->Submit(Sweep(2, /*timeout_s=*/3600), "", "tester");
  ASSERT_TRUE(job.ok());
  WaitFor(*jobs, job->job_id(), [](const v1::Job& j) { return j.state() == v1::JOB_STATE_RUNNING; });
  // A minute at a time until the job ends (at most two hours).
  v1::Job done;
  for (int minute = 0; minute < 120; ++minute) {
    done = *jobs->GetJob(job->job_id());
    if (Terminal(done)) break;
    clock.Advance(absl::Minutes(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the watchdog looks
  }
  done = WaitFor(*jobs, job->job_id(), Terminal);
  EXPECT_EQ(done.state(), v1::JOB_STATE_FAILED);
  EXPECT_GE(clock.Now() - submitted, absl::Hours(1));  // not a minute early
  EXPECT_LE(clock.Now() - submitted, absl::Minutes(70));   // nor long after
  EXPECT_NE(done.error().find("timed out after 3600 s"), std::string::npos) << done.error();
  EXPECT_NE(done.worker_exit().find("signal 9"), std::string::npos) << done.worker_exit();
}

TEST_F(JobManagerTest, AShutdownInterruptsTheJobAndTheNextStartRunsItAgain) {
  std::string id;
  {
    Script script;
    script.hang = true;
    auto jobs = Manager(script);
    auto job = jobs->Submit(Sweep(2), "", "tester");
    ASSERT_TRUE(job.ok());
    id = job->job_id();
    WaitFor(*jobs, id, [](const v1::Job& j) { return j.state() == v1::JOB_STATE_RUNNING; });
    jobs->Shutdown();
    auto stored = store_->jobs().Get(id);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->state(), v1::JOB_STATE_QUEUED);  // interrupted, then requeued
    EXPECT_EQ(stored->attempt(), 1);
  }
  auto jobs = Manager(Script{});  // the daemon again, with workers that finish
  v1::Job done = WaitFor(*jobs, id, Terminal);
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.error();
  EXPECT_EQ(done.attempt(), 2);
  auto runs = store_->runs().List(id, false);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 2u);
  // Its events tell the whole story, in order, across both daemons.
  std::vector<v1::ProgressEvent> events;
  bool ended = false;
  ASSERT_TRUE(jobs->EventsAfter(id, 0, &events, &ended).ok());
  std::vector<v1::JobState> states;
  for (const auto& e : events) {
    if (e.has_state_changed()) states.push_back(e.state_changed().state());
  }
  EXPECT_EQ(states, (std::vector<v1::JobState>{
                        v1::JOB_STATE_QUEUED, v1::JOB_STATE_RUNNING, v1::JOB_STATE_INTERRUPTED,
                        v1::JOB_STATE_QUEUED, v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED}));
  EXPECT_TRUE(ended);
}

// A queued job runs the plan stored with it at submit, not its spec
// expanded again: here the stored plan's batch sizes differ from the
// spec's. A queued job with no plan fails at the next start, saying so.
TEST_F(JobManagerTest, AQueuedJobRunsItsStoredPlanAndOneWithoutAPlanFailsSayingSo) {
  auto planned = Manager(Script())->PlanJob(Sweep(3));
  ASSERT_TRUE(planned.ok()) << planned.status();
  v1::JobPlan plan;
  for (int batch : {7, 9}) {
    v1::RunConfig* run = plan.add_runs();
    *run = planned->runs[0];
    run->set_batch_size(batch);
  }
  v1::Job job;
  *job.mutable_spec() = planned->spec;
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_run_count(plan.runs_size());
  auto with_plan = store_->jobs().Insert(job, plan);
  auto without_plan = store_->jobs().Insert(job);
  ASSERT_TRUE(with_plan.ok() && without_plan.ok());
  auto jobs = Manager(Script());
  EXPECT_EQ(WaitFor(*jobs, *with_plan, Terminal).state(), v1::JOB_STATE_SUCCEEDED);
  auto runs = store_->runs().List(*with_plan, false);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].config().batch_size(), 7);
  EXPECT_EQ((*runs)[1].config().batch_size(), 9);
  const v1::Job failed = WaitFor(*jobs, *without_plan, Terminal);
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(failed.error().find("plan"), std::string::npos) << failed.error();
}

// Issue 44: only the daemon's own probe suite makes probe runs. A caller's
// spec that names a probe is refused (a dry run's plan too); the suite's
// jobs, built here from the host, are marked the daemon's, and so is every
// run of theirs as it is stored, and no other run.
TEST_F(JobManagerTest, OnlyTheDaemonsOwnProbeSuiteNamesAProbeAndItsRunsAreMarked) {
  auto jobs = Manager(Script());
  v1::JobSpec forged = Sweep(1);
  forged.mutable_base()->set_probe("v1/matmul_bf16");
  for (const absl::Status& s : {jobs->PlanJob(forged).status(),
                                jobs->Submit(forged, "", "ci").status()}) {
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_NE(s.message().find("spec.base.probe"), std::string::npos) << s;
  }
  v1::RunProbeRequest request;
  request.set_small(true);
  request.set_dry_run(true);
  auto planned = jobs->SubmitProbeSuite(request, "ops");
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(planned->size(), 4u);  // a host without GPUs: the CPU's four probes
  // Level 2 adds the sustained product, held its whole time; a level or a
  // time out of range is refused naming the field.
  request.set_level(2);
  request.set_sustain_s(5);
  auto level2 = jobs->SubmitProbeSuite(request, "ops");
  ASSERT_TRUE(level2.ok()) << level2.status();
  ASSERT_EQ(level2->size(), 5u);
  const v1::JobSpec& held = level2->back().spec();
  EXPECT_EQ(held.base().probe(), "v1/sustained_bf16");
  EXPECT_EQ(held.measurement().min_time_ms(), 5000);
  EXPECT_EQ(held.measurement().max_time_ms(), 5000);
  // Level 3 adds the product loaded on every device at once.
  request.set_level(3);
  request.set_load_s(7);
  auto level3 = jobs->SubmitProbeSuite(request, "ops");
  ASSERT_TRUE(level3.ok()) << level3.status();
  ASSERT_EQ(level3->size(), 6u);
  EXPECT_EQ(level3->back().spec().base().probe(), "v1/loaded_bf16");
  EXPECT_EQ(level3->back().spec().measurement().max_time_ms(), 7000);
  for (auto [level, sustain, load, field] :
       {std::tuple{4, 5, 0, "level"}, std::tuple{2, 601, 0, "sustain_s"},
        std::tuple{-1, 5, 0, "level"}, std::tuple{3, 5, 3601, "load_s"}}) {
    request.set_level(level);
    request.set_sustain_s(sustain);
    request.set_load_s(load);
    auto refused = jobs->SubmitProbeSuite(request, "ops");
    EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
    EXPECT_TRUE(absl::StartsWith(refused.status().message(), std::string(field) + ": "))
        << refused.status();
  }
  request = v1::RunProbeRequest();
  request.set_small(true);
  auto suite = jobs->SubmitProbeSuite(request, "ops");
  ASSERT_TRUE(suite.ok()) << suite.status();
  ASSERT_EQ(suite->size(), 4u);
  auto plain = jobs->Submit(Sweep(1), "", "ci");
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (const v1::Job& job : *suite) {
    EXPECT_TRUE(job.daemon_probe());
    EXPECT_EQ(job.submitted_by(), "ops");
    EXPECT_EQ(WaitFor(*jobs, job.job_id(), Terminal).state(), v1::JOB_STATE_SUCCEEDED);
    auto runs = store_->runs().List(job.job_id(), false);
    ASSERT_TRUE(runs.ok()) << runs.status();
    ASSERT_FALSE(runs->empty());
    for (const v1::Run& r : *runs) {
      EXPECT_TRUE(r.daemon_probe()) << r.config().probe();
      EXPECT_FALSE(r.config().probe().empty());
    }
  }
  EXPECT_EQ(WaitFor(*jobs, plain->job_id(), Terminal).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_FALSE(jobs->GetJob(plain->job_id())->daemon_probe());
  auto runs = store_->runs().List(plain->job_id(), false);
  ASSERT_TRUE(runs.ok() && runs->size() == 1u);
  EXPECT_FALSE((*runs)[0].daemon_probe());
}

}  // namespace
}  // namespace gpubench::server
