// The job runner in process, with scripted workers (no worker binary, no
// LibTorch) over a real SQLite store: crash isolation, cancel, timeout and
// requeue after a shutdown, each decided by JobManager itself.
#include "server/job_manager.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "common/spec.h"
#include "storage/store.h"

namespace gpubench::server {
namespace {

// Workers that wait in their first run until `want` of them are in one at
// once (or 5 s pass), and the most that ever were.
struct Meeting {
  std::mutex mu;
  std::condition_variable cv;
  int want = 0;
  int in_run = 0;
  int most = 0;
};

// What the scripted workers do.
struct Script {
  Meeting* meeting = nullptr;
  int crash_at = -1;         // the first worker dies (SIGSEGV) when it starts this run
  bool hang = false;         // every worker waits in its first run until stopped
  bool ignore_stop = false;  // ... and only a kill ends it
  std::string hang_only_on;  // with hang: only workers of jobs on this device
  int rogue_index = -1;      // reports its second run under this index instead
  bool rogue_config = false; // reports each run with batch size 999
};

// A worker that plays the event stream of a real one for its request.
class FakeWorker : public worker::Worker {
 public:
  FakeWorker(const v1::WorkerRequest& request, const Script& script, bool first,
             pid_t group = 0)
      : group_(group),
        script_(script),
        crash_(first && script.crash_at >= 0),
        hang_(script.hang && (script.hang_only_on.empty() ||
                              (request.runs_size() > 0 &&
                               request.runs(0).config().device() == script.hang_only_on))),
        rank0_(request.has_rank() && request.rank().rank() == 0) {
    // What a real worker runs: the runs the daemon gave it, nothing else.
    for (const v1::PlannedRun& run : request.runs()) {
      runs_.push_back({run.index(), run.config(), request.job_run_count()});
    }
  }

  absl::StatusOr<bool> Next(v1::WorkerEvent* event) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (ended_) return false;
    if (rank0_ && !opened_) {  // rank 0 reports its store first
      opened_ = true;
      event->mutable_rendezvous()->set_store_port(4321);
      return true;
    }
    if (script_.meeting != nullptr && step_ == 1) Meet(*script_.meeting);
    if (step_ == 2 * runs_.size()) {
      event->mutable_done()->set_runs_executed(runs_.size());
      End(0, 0);
      return true;
    }
    Planned run = runs_[step_ / 2];
    if (step_ / 2 == 1 && script_.rogue_index >= 0) run.index = script_.rogue_index;
    if (script_.rogue_config) run.config.set_batch_size(999);
    if (step_ % 2 == 0) {
      ++step_;
      event->mutable_run_started()->set_index(run.index);
      event->mutable_run_started()->set_run_count(run.count);
      *event->mutable_run_started()->mutable_config() = run.config;
      return true;
    }
    if (crash_ && run.index == script_.crash_at) {
      End(-1, 11);
      return false;
    }
    if (hang_ && step_ == 1) {
      cv_.wait(lock, [&] { return killed_ || (stopped_ && !script_.ignore_stop); });
      if (killed_) {
        End(-1, 9);
        return false;
      }
      event->mutable_done()->set_cancelled(true);  // stopped at an iteration boundary
      End(0, 0);
      return true;
    }
    ++step_;
    v1::Run* r = event->mutable_run_finished()->mutable_run();
    r->set_index(run.index);
    *r->mutable_config() = run.config;
    r->set_state(v1::RUN_STATE_SUCCEEDED);
    r->mutable_result()->set_throughput_samples_per_s(100 + run.index);
    for (float ms : {1.0f, 1.1f, 0.9f}) r->mutable_samples()->add_device_ms(ms);
    *r->mutable_start_time() = NowTimestamp();
    *r->mutable_end_time() = NowTimestamp();
    return true;
  }
  void Stop() override {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    cv_.notify_all();
  }
  void Kill() override {
    std::lock_guard<std::mutex> lock(mu_);
    killed_ = true;
    cv_.notify_all();
  }
  worker::ExitInfo Wait() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ended_) End(-1, 9);  // killed while not reading
    return exit_;
  }
  int64_t RssBytes() const override { return 1 << 20; }
  pid_t ProcessGroup() const override { return group_; }

 private:
  struct Planned {
    int index;
    v1::RunConfig config;
    int count;
  };
  static void Meet(Meeting& m) {
    std::unique_lock<std::mutex> lock(m.mu);
    m.most = std::max(m.most, ++m.in_run);
    m.cv.notify_all();
    m.cv.wait_for(lock, std::chrono::seconds(5), [&] { return m.in_run >= m.want; });
  }
  void End(int code, int signal) {
    ended_ = true;
    exit_.exit_code = code;
    exit_.signal = signal;
    if (signal == 11) exit_.stderr_tail = "Segmentation fault in a scripted worker";
  }

  const pid_t group_;
  const Script script_;
  const bool crash_;
  const bool hang_;
  const bool rank0_;
  bool opened_ = false;
  std::vector<Planned> runs_;
  size_t step_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false, killed_ = false, ended_ = false;
  worker::ExitInfo exit_;
};

class FakeLauncher : public worker::WorkerLauncher {
 public:
  FakeLauncher(Script script, std::atomic<int>* started,
               std::vector<v1::WorkerRequest>* requests, std::mutex* requests_mu)
      : script_(script), started_(started), requests_(requests), requests_mu_(requests_mu) {}
  absl::StatusOr<std::unique_ptr<worker::Worker>> Start(
      const v1::WorkerRequest& request) override {
    {
      std::lock_guard<std::mutex> lock(*requests_mu_);
      requests_->push_back(request);
    }
    const bool first = started_->fetch_add(1) == 0;
    // As the process launcher: the group asked for, else a new one.
    const pid_t group = request.process_group() != 0 ? request.process_group() : next_group_++;
    return std::unique_ptr<worker::Worker>(new FakeWorker(request, script_, first, group));
  }

 private:
  std::atomic<pid_t> next_group_{1000};
  const Script script_;
  std::atomic<int>* const started_;
  std::vector<v1::WorkerRequest>* const requests_;
  std::mutex* const requests_mu_;
};

class JobManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/job_manager_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
    storage::StoreOptions options;
    options.path = path_;
    options.busy_timeout_ms = 100;  // a write lock held elsewhere fails writes quickly
    auto store = storage::Store::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    host_.set_host_id("test-host");
  }

  std::unique_ptr<JobManager> Manager(Script script, JobClock* clock = nullptr) {
    DaemonOptions options;
    options.clock = clock;
    options.stop_grace_ms = 200;
    auto jobs = std::make_unique<JobManager>(
        options, store_.get(), host_,
        std::make_unique<FakeLauncher>(script, &started_, &requests_, &requests_mu_));
    EXPECT_TRUE(jobs->Start().ok());
    return jobs;
  }

  static v1::JobSpec Sweep(int runs, int64_t timeout_s = 0) {
    v1::JobSpec spec;
    spec.mutable_base()->set_workload("empty");
    spec.mutable_base()->set_device("cpu");
    for (int b = 1; b <= runs; ++b) spec.mutable_sweep()->add_batch_size(b);
    spec.set_timeout_s(timeout_s);
    return spec;
  }

  // Polls until the job reaches a state that ends it, or 20 s pass.
  v1::Job WaitFor(JobManager& jobs, const std::string& id,
                  std::function<bool(const v1::Job&)> done) {
    v1::Job job;
    for (int i = 0; i < 400; ++i) {
      job = *jobs.GetJob(id);
      if (done(job)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return job;
  }
  // Submits spec and waits until it runs.
  absl::StatusOr<v1::Job> SubmitRunning(JobManager& jobs, const v1::JobSpec& spec) {
    auto job = jobs.Submit(spec, "", "tester");
    if (!job.ok()) return job;
    return WaitFor(jobs, job->job_id(),
                   [](const v1::Job& j) { return j.state() == v1::JOB_STATE_RUNNING; });
  }
  // Until the dispatcher has looked at every queued job and started none
  // more (or 20 s pass).
  static void WaitForIdle(JobManager& jobs) {
    for (int i = 0; i < 2000 && !jobs.DispatcherIdle(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(jobs.DispatcherIdle());
  }
  static bool Terminal(const v1::Job& j) {
    return j.state() == v1::JOB_STATE_SUCCEEDED || j.state() == v1::JOB_STATE_FAILED ||
           j.state() == v1::JOB_STATE_CANCELLED;
  }

  std::string path_;
  std::unique_ptr<storage::Store> store_;
  v1::HostInfo host_;
  std::atomic<int> started_{0};
  std::mutex requests_mu_;
  std::vector<v1::WorkerRequest> requests_;  // every worker started, in order
};

TEST_F(JobManagerTest, AWorkerCrashFailsOnlyItsRunAndAFreshWorkerGoesOn) {
  Script script;
  script.crash_at = 1;
  auto jobs = Manager(script);
  auto job = jobs->Submit(Sweep(3), "", "tester");
  ASSERT_TRUE(job.ok()) << job.status();
  v1::Job done = WaitFor(*jobs, job->job_id(), Terminal);
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.error();
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
      EXPECT_FALSE(r.spec().has_sweep());
      EXPECT_FALSE(r.spec().has_base());
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

}  // namespace
}  // namespace gpubench::server
