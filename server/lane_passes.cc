// One lane of a job, pass by pass (JobRunner::RunPasses): the workers
// that run a lane's runs, what each reported stored, a crash blamed on its
// run, and the GPU setting a pass asks for set and undone around it.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/printable.h"
#include "launcher/clock_control.h"
#include "launcher/process.h"
#include "server/job_runner.h"
#include "server/job_manager_internal.h"
#include "server/rank_group.h"

namespace gpubench::server {

// One lane of a job, pass by pass: a worker (or a group of ranks) per
// pass, each given the lane's runs of the plan not yet stored. A worker
// that dies inside a run costs that run only: it is stored as failed, and
// the rest of the lane goes on in a fresh worker. Every pass stores at
// least one run or ends the lane.
class LanePasses {
 public:
  LanePasses(JobRunner* jobs, const std::shared_ptr<RunningJob>& running,
             const JobRunner::JobStart& start, const JobRunner::Lane& lane)
      : jobs_(jobs),
        running_(running),
        configs_(start.configs),
        lane_(lane),
        job_id_(running->job.job_id()),
        request_(start.request),
        mine_(lane.indices.begin(), lane.indices.end()),
        stored_(start.stored) {
    if (lane.rank.world_size() > 0) *request_.mutable_rank() = lane.rank;
    if (start.host_pair) *request_.mutable_rank() = *start.host_pair;
    // The other lanes' runs count as stored: never this lane's to run.
    for (int i = 0; i < static_cast<int>(configs_.size()); ++i) {
      if (!mine_.count(i)) stored_.insert(i);
    }
  }

  JobRunner::Passes Run() {
    for (int pass = 0; !r_.done && !stopped_; ++pass) {
      if (AllStored()) {
        // Nothing is left for a worker (every point stored, or crashed).
        r_.done = true;
        r_.exit = worker::ExitInfo{0, 0, ""};
        break;
      }
      // Runs that set their GPU's clocks or power go in passes of one
      // device and setting each, set before the worker starts and undone
      // after it ends, however it ends.
      const std::string key = PassKeyOf(configs_[FirstUnstored()]);
      pass_key_ = key;
      if (!key.empty() && !SetGpu(configs_[FirstUnstored()])) break;
      auto process = Start(pass, key);
      if (!process.ok()) {
        r_.stream = absl::UnavailableError(
            absl::StrCat("cannot start the worker: ", process.status().message()));
        UnsetGpu();
        break;
      }
      Pass p;
      Read(process->get(), &p);
      const bool go_on = AfterExit(process->get(), p);
      if (!UnsetGpu()) break;
      // A worker that ran every run of its setting ends done; the lane's
      // runs of other settings go on in a fresh one.
      if (r_.done && p.stored_now > 0 && !AllStored() && !stopped_ &&
          r_.stream.ok() && r_.store_error.ok() && r_.gpu_setup.ok()) {
        r_.done = false;
        continue;
      }
      if (!go_on) break;
    }
    return r_;
  }

 private:
  // What one worker did.
  struct Pass {
    int current = -1;    // the run it was in, if any
    int stored_now = 0;  // runs it finished and were stored
    // Its event stream broke, or carried what a worker never writes, while
    // a run's model code ran (a model writing to the worker's descriptor):
    // that run is blamed, as for a crash.
    std::string broken;
  };

  // The stream broke: inside a run, the run's fault (the sweep goes on in a
  // fresh worker); between runs, the job's.
  void Broke(Pass* p, const absl::Status& why) {
    if (p->current >= 0 && !stored_.count(p->current)) {
      p->broken = std::string(why.message());
    } else {
      r_.stream = why;
    }
  }

  bool AllStored() const {
    return std::all_of(lane_.indices.begin(), lane_.indices.end(),
                       [&](int i) { return stored_.count(i) > 0; });
  }

  int FirstUnstored() const {
    for (int i : lane_.indices) {
      if (!stored_.count(i)) return i;
    }
    return lane_.indices.front();
  }

  static GpuSetting SettingOf(const v1::RunConfig& c) {
    return GpuSetting{c.power_limit_w(), c.gpu_clocks()};
  }

  // The pass a run goes in: "" for the runs that leave the GPU as it is,
  // else its device and setting.
  std::string PassKeyOf(const v1::RunConfig& c) const {
    const GpuSetting s = SettingOf(c);
    if (s.empty()) return "";
    return absl::StrCat(jobs_->planner_->DeviceOf(c), " ", std::llround(s.power_limit_w * 1000), " mW ",
                        s.clocks);
  }

  // Sets c's GPU as c asks; false (the lane ends with the reason) where
  // the daemon does not allow it or NVML refuses.
  bool SetGpu(const v1::RunConfig& c) {
    ClockControl* clocks = jobs_->options_.clock_control;
    const std::string device = jobs_->planner_->DeviceOf(c);
    int index = 0;
    if (!absl::SimpleAtoi(device.substr(device.find(':') + 1), &index)) index = 0;
    if (clocks == nullptr) {
      r_.gpu_setup = absl::FailedPreconditionError(
          "this daemon does not allow clock control (gpubenchd --allow-clock-control)");
      return false;
    }
    const std::string bus =
        index < jobs_->host_.gpus_size() ? jobs_->host_.gpus(index).pci_bus_id() : std::string();
    auto applied = clocks->Apply(bus, index, SettingOf(c));
    if (!applied.ok()) {
      r_.gpu_setup = applied.status();
      return false;
    }
    gpu_ = GpuSet{bus, index, *applied};
    std::vector<std::string> what;
    if (applied->power_limit_mw > 0) {
      what.push_back(absl::StrCat("power limit ", applied->power_limit_mw / 1000.0, " W"));
    }
    if (applied->locked_mhz > 0) {
      what.push_back(absl::StrCat("graphics clock locked at ", applied->locked_mhz, " MHz"));
    }
    jobs_->recorder_->RecordEvent(job_id_, [&](v1::ProgressEvent* e) {
      e->mutable_log()->set_text(absl::StrCat(device, ": ", absl::StrJoin(what, ", "),
                                              " for the runs that ask for it; undone after"));
    });
    return true;
  }

  // Undoes SetGpu; false (the lane ends with the reason) where it cannot.
  bool UnsetGpu() {
    if (!gpu_) return true;
    const absl::Status s = jobs_->options_.clock_control->Restore(gpu_->bus, gpu_->index);
    gpu_.reset();
    if (s.ok()) return true;
    if (r_.gpu_setup.ok()) r_.gpu_setup = s;
    return false;
  }

  absl::StatusOr<std::unique_ptr<worker::Worker>> Start(int pass, const std::string& key) {
    request_.clear_runs();
    for (int i : lane_.indices) {
      if (stored_.count(i) || PassKeyOf(configs_[i]) != key) continue;
      v1::PlannedRun* run = request_.add_runs();
      run->set_index(i);
      *run->mutable_config() = configs_[i];
    }
    absl::StatusOr<std::unique_ptr<worker::Worker>> process;
    {
      absl::MutexLock lock(&running_->group_mu);
      request_.set_process_group(running_->group_workers > 0 ? running_->process_group : 0);
      // A pair across hosts runs its one rank here alone.
      process = lane_.rank.world_size() > 0 && !request_.rank().has_host_pair()
                    ? StartRankGroup(jobs_->launcher_, request_)
                    : jobs_->launcher_->Start(request_);
      if (process.ok() && running_->group_workers++ == 0) {
        running_->process_group = (*process)->ProcessGroup();
      }
    }
    if (!process.ok()) return process.status();
    Log(LogLevel::kDebug, "job ", job_id_, ": worker started (pass ", pass + 1, ", ",
        stored_.size() - (configs_.size() - lane_.indices.size()), " run(s) already stored",
        lane_.rank.world_size() > 0 ? absl::StrCat(", ", lane_.rank.world_size(), " ranks") : "",
        ")");
    {
      absl::MutexLock lock(&running_->mu);
      // A stop that came while no worker ran must not be missed.
      stopped_ = running_->cancel || running_->shutdown || running_->timed_out;
      running_->processes.insert(process->get());
    }
    if (stopped_) (*process)->Stop();
    return process;
  }

  // The worker's events until it ends (or is killed), then its exit.
  void Read(worker::Worker* process, Pass* p) {
    while (true) {
      v1::WorkerEvent event;
      auto got = process->Next(&event);
      if (!got.ok()) {
        Broke(p, got.status());
        process->Kill();
        break;
      }
      if (!*got || !Take(&event, process, p)) break;
    }
    r_.exit = process->Wait();
  }

  // One event (its traces moved out when stored); false when the worker
  // was killed over it.
  bool Take(v1::WorkerEvent* event, worker::Worker* process, Pass* p) {
    // A worker runs only what it was given, and a run once: anything else
    // is a worker (or the code in it) writing what it should not.
    const int reported = event->has_run_started()    ? event->run_started().index()
                         : event->has_run_finished() ? event->run_finished().run().index()
                                                    : -1;
    if ((event->has_run_started() || event->has_run_finished()) &&
        (!mine_.count(reported) || stored_.count(reported))) {
      Broke(p, absl::DataLossError(absl::StrCat(
                   "the worker reported run ", reported, ", which it was not given to run")));
      process->Kill();
      return false;
    }
    if (event->has_run_started()) {
      p->current = event->run_started().index();
      jobs_->NoteJobsBeside(job_id_);
      jobs_->recorder_->RecordEvent(job_id_, [&](v1::ProgressEvent* e) {
        *e->mutable_run_started() = event->run_started();
      });
    } else if (event->has_run_progress()) {
      jobs_->recorder_->Publish(job_id_, [&](v1::ProgressEvent* e) {
        *e->mutable_run_progress() = event->run_progress();
      });
    } else if (event->has_log()) {
      jobs_->recorder_->Publish(job_id_, [&](v1::ProgressEvent* e) {
        e->mutable_log()->set_text(Bounded(event->log().text(), kMaxMessageBytes));
      });
    } else if (event->has_run_finished()) {
      p->current = -1;
      if (!Finished(event->mutable_run_finished(), process)) return false;
      ++p->stored_now;
    } else if (event->has_done()) {
      r_.done = true;
      r_.cancelled_by_worker = event->done().cancelled();
    }
    return true;
  }

  // Stores a finished run; false (the worker killed) when the store cannot.
  bool Finished(v1::RunFinished* finished, worker::Worker* process) {
    v1::Run run = finished->run();
    *run.mutable_config() = configs_[run.index()];  // the plan's, whatever it said
    // NVML cannot read a clock lock back: the daemon's own is recorded.
    if (gpu_ && gpu_->applied.locked_mhz > 0) {
      run.mutable_fingerprint()->set_locked_gpu_clock_mhz(gpu_->applied.locked_mhz);
    }
    // The error is the model's to choose (an assert's message): the store,
    // every reply and the HTML view keep a bounded one.
    run.set_error(Bounded(run.error(), kMaxMessageBytes));
    jobs_->FillContention(job_id_, &run);
    std::vector<storage::RankTrace> traces;
    Keep(run.index(), 0, finished->mutable_trace_json(), &traces);
    // Only a rank group adds other ranks' traces (rank_group.cc): one each
    // of ranks 1 .. world_size-1; anything else a worker wrote is dropped.
    std::set<int> ranks;
    for (v1::RankTrace& t : *finished->mutable_rank_traces()) {
      if (t.rank() >= 1 && t.rank() < run.config().world_size() && ranks.insert(t.rank()).second) {
        Keep(run.index(), t.rank(), t.mutable_trace_json(), &traces);
      }
    }
    r_.store_error = Store(&run, traces);
    if (!r_.store_error.ok()) {
      if (absl::IsResourceExhausted(r_.store_error)) jobs_->recorder_->SetStoreFull(true);
      // Nothing more can be kept: stop rather than measure for nothing.
      process->Kill();
      return false;
    }
    stored_.insert(run.index());
    if (run.state() == v1::RUN_STATE_OUT_OF_MEMORY) *request_.add_out_of_memory() = run.config();
    r_.any_ok |= run.state() == v1::RUN_STATE_SUCCEEDED;
    return true;
  }

  // After the worker's exit: true to go on with a fresh worker.
  bool AfterExit(worker::Worker* process, const Pass& p) {
    {
      absl::MutexLock lock(&running_->group_mu);
      if (--running_->group_workers == 0) running_->process_group = 0;
    }
    std::string limit_hit;
    bool out_of_memory = false;
    {
      absl::MutexLock lock(&running_->mu);
      running_->processes.erase(process);
      stopped_ = running_->cancel || running_->shutdown || running_->timed_out;
      if (auto hit = running_->limit_hits.find(process); hit != running_->limit_hits.end()) {
        limit_hit = std::move(hit->second.first);
        out_of_memory = hit->second.second;
        running_->limit_hits.erase(hit);
      }
    }
    if (r_.done || stopped_ || !r_.store_error.ok() || !r_.stream.ok() || r_.exit.ok()) {
      return false;
    }
    int current = p.current;
    if (current < 0 && !limit_hit.empty()) {
      // Killed for a limit before its first event: it was starting the
      // next run to do.
      for (int i = 0; i < static_cast<int>(configs_.size()) && current < 0; ++i) {
        if (!stored_.count(i) && PassKeyOf(configs_[i]) == pass_key_) current = i;
      }
    }
    if ((current < 0 || stored_.count(current)) && AllStored()) {
      // Died (or was killed at a limit) after its last run was stored:
      // nothing is lost, the job ends on its runs. The log says how.
      jobs_->recorder_->RecordEvent(job_id_, [&](v1::ProgressEvent* e) {
        e->mutable_log()->set_text(absl::StrCat(
            "the worker ended with ", r_.exit.Describe(), " after its last run was stored",
            limit_hit.empty() ? "" : absl::StrCat(": the daemon killed it, ", limit_hit)));
      });
      return true;
    }
    if (current < 0 || stored_.count(current)) {
      // Died between runs. A group whose rank failed its run (stored) and
      // stopped goes on with the rest in fresh workers; otherwise there is
      // no culprit to blame.
      if (lane_.rank.world_size() == 0 || p.stored_now == 0) return false;
      r_.crash = r_.exit;
      ++r_.crashes;
      return true;
    }
    if (!StoreCrashed(current, limit_hit, out_of_memory, p.broken)) return false;
    r_.crash = r_.exit;
    ++r_.crashes;
    return true;
  }

  // The run a worker died in (or was killed in at a limit), failed.
  bool StoreCrashed(int index, const std::string& limit_hit, bool out_of_memory,
                    const std::string& broken) {
    const worker::ExitInfo& exit = r_.exit;
    v1::Run crashed;
    crashed.set_job_id(job_id_);
    crashed.set_index(index);
    *crashed.mutable_config() = configs_[index];
    // Killed at the memory limit, the run ran out of (host) memory: the
    // larger batch sizes of its config are skipped, as after the engine's
    // own out-of-memory error. CPU runs reach this: Linux overcommits.
    crashed.set_state(out_of_memory ? v1::RUN_STATE_OUT_OF_MEMORY : v1::RUN_STATE_FAILED);
    const std::string cause =
        !broken.empty()
            ? "the worker's event stream broke in this run (its model wrote to the worker's "
              "output?): " + broken + "; the daemon killed it ("
        : limit_hit.empty() ? "the worker died in this run ("
                            : "the daemon killed the worker in this run: " + limit_hit + " (";
    crashed.set_error(absl::StrCat(
        cause, exit.Describe(),
        "); the rest of the sweep went on in a fresh worker. Its stderr ended: ",
        exit.stderr_tail.substr(exit.stderr_tail.size() > 2000 ? exit.stderr_tail.size() - 2000
                                                               : 0)));
    *crashed.mutable_start_time() = NowTimestamp();
    *crashed.mutable_end_time() = crashed.start_time();
    r_.store_error = Store(&crashed, {});
    if (!r_.store_error.ok()) return false;
    stored_.insert(index);
    if (out_of_memory) *request_.add_out_of_memory() = configs_[index];
    return true;
  }

  // A rank's trace of run `index` into traces, moved out of json, unless it
  // is empty or over what a run may keep (said in the job's log).
  void Keep(int index, int rank, std::string* json, std::vector<storage::RankTrace>* traces) {
    if (json->empty()) return;
    if (json->size() > kMaxTraceBytes) {
      jobs_->recorder_->RecordEvent(job_id_, [&](v1::ProgressEvent* e) {
        e->mutable_log()->set_text(absl::StrCat(
            "run ", index, ": ", rank != 0 ? absl::StrCat("rank ", rank, "'s ") : "its ",
            "profiler trace of ", json->size(), " bytes is over the ", kMaxTraceBytes >> 20,
            " MiB a run may keep; not stored"));
      });
      return;
    }
    traces->push_back({rank, std::move(*json)});
  }

  absl::Status Store(v1::Run* run, const std::vector<storage::RankTrace>& traces) {
    absl::MutexLock lock(&running_->store_mu);
    return jobs_->recorder_->StoreRun(&running_->job, run, traces);
  }

  JobRunner* const jobs_;
  const std::shared_ptr<RunningJob>& running_;
  const std::vector<v1::RunConfig>& configs_;
  const JobRunner::Lane& lane_;
  const std::string& job_id_;
  v1::WorkerRequest request_;
  const std::set<int> mine_;
  std::set<int> stored_;  // this lane's stored runs, and every other lane's
  JobRunner::Passes r_;
  bool stopped_ = false;
  std::string pass_key_;  // the pass's runs' PassKeyOf
  // The GPU this pass set (SetGpu), until UnsetGpu.
  struct GpuSet {
    std::string bus;  // PCI bus id; empty: by index
    int index = 0;
    AppliedSetting applied;
  };
  std::optional<GpuSet> gpu_;
};

JobRunner::Passes JobRunner::RunPasses(const std::shared_ptr<RunningJob>& running,
                                        const JobStart& start, const Lane& lane) {
  return LanePasses(this, running, start, lane).Run();
}

}  // namespace gpubench::server
