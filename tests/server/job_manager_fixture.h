// The job manager's test fixture: scripted workers (no worker binary, no
// LibTorch) that play a real worker's event stream, over a real SQLite store.
#ifndef GPUBENCH_TESTS_SERVER_JOB_MANAGER_FIXTURE_H_
#define GPUBENCH_TESTS_SERVER_JOB_MANAGER_FIXTURE_H_

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
  bool die_after_last = false;  // killed (SIGKILL) after its last run, before "done"
  int break_stream_at = -1;  // the first worker's stream breaks inside this run
  // Each run's trace is {"rank": R}, its worker's rank, and every worker
  // also writes other ranks' traces itself, as only a rank group may.
  bool traces = false;
};

// A worker that plays the event stream of a real one for its request.
class FakeWorker : public worker::Worker {
 public:
  FakeWorker(const v1::WorkerRequest& request, const Script& script, bool first,
             pid_t group = 0)
      : group_(group),
        script_(script),
        crash_(first && script.crash_at >= 0),
        break_(first && script.break_stream_at >= 0),
        hang_(script.hang && (script.hang_only_on.empty() ||
                              (request.runs_size() > 0 &&
                               request.runs(0).config().device() == script.hang_only_on))),
        rank0_(request.has_rank() && request.rank().rank() == 0),
        rank_(request.has_rank() ? request.rank().rank() : 0) {
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
    if (step_ == 2 * runs_.size() && script_.die_after_last) {
      End(-1, 9);
      return false;
    }
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
    if (break_ && run.index == script_.break_stream_at) {
      // What a model that writes to the worker's event descriptor leaves.
      return absl::DataLossError("a malformed event: length 1919252000 over the limit");
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
    if (script_.traces) {
      event->mutable_run_finished()->set_trace_json("{\"rank\": " + std::to_string(rank_) + "}");
      for (int smuggled : {1, -3, 1}) {
        v1::RankTrace* t = event->mutable_run_finished()->add_rank_traces();
        t->set_rank(smuggled);
        t->set_trace_json("smuggled");
      }
    }
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
  const bool break_;  // this worker's stream breaks (Script::break_stream_at)
  const bool hang_;
  const bool rank0_;
  const int rank_;
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

// The empty workload on the CPU over batch sizes 1..runs.
inline v1::JobSpec EmptySweep(int runs, int64_t timeout_s = 0) {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("empty");
  spec.mutable_base()->set_device("cpu");
  for (int b = 1; b <= runs; ++b) spec.mutable_sweep()->add_batch_size(b);
  spec.set_timeout_s(timeout_s);
  return spec;
}

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

  std::unique_ptr<JobManager> Manager(Script script, JobClock* clock = nullptr,
                                      ClockControl* clock_control = nullptr) {
    DaemonOptions options;
    options.clock = clock;
    options.clock_control = clock_control;
    options.stop_grace_ms = 200;
    auto jobs = std::make_unique<JobManager>(
        options, store_.get(), host_,
        std::make_unique<FakeLauncher>(script, &started_, &requests_, &requests_mu_));
    EXPECT_TRUE(jobs->Start().ok());
    return jobs;
  }

  static v1::JobSpec Sweep(int runs, int64_t timeout_s = 0) {
    return EmptySweep(runs, timeout_s);
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

}  // namespace gpubench::server

#endif  // GPUBENCH_TESTS_SERVER_JOB_MANAGER_FIXTURE_H_
