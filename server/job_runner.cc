#include "server/job_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/contention.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/printable.h"
#include "common/spec.h"
#include "google/protobuf/util/time_util.h"
#include "common/sha256.h"
#include "server/rank_group.h"
#include "launcher/clock_control.h"
#include "launcher/process.h"
#include "report/fleet_rank.h"

namespace gpubench::server {

void JobRunner::Run(const std::shared_ptr<RunningJob>& running) {
  JobStart start;
  if (StartJob(running.get(), &start)) {
    const Passes passes = RunLanes(running, &start);
    EndJob(running.get(), passes);
  }
  {
    absl::MutexLock lock(&running->mu);
    running->finished = true;
    running->processes.clear();
  }
  running->cv.SignalAll();
}

void JobRunner::JobStarted(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  for (auto& [id, others] : beside_) others.insert(job_id);
  beside_[job_id];
}

void JobRunner::JobEnded(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  beside_.erase(job_id);
}

absl::Status JobRunner::FindHostPair(const v1::Job& job, JobStart* start) const {
  if (!report::IsHostPair(job.spec().base())) return absl::OkStatus();
  start->host_pair = host_pairs_ != nullptr ? host_pairs_->Find(job.job_id()) : std::nullopt;
  if (start->host_pair) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "a pair across hosts lives in the memory of the daemon that queued it, which has "
      "restarted since: run gpubench qualify --pairs again");
}

bool JobRunner::StartJob(RunningJob* running, JobStart* start) {
  const std::string job_id = running->job.job_id();
  auto loaded = recorder_->GetJob(job_id);
  if (!loaded.ok()) {
    return false;
  }
  v1::Job& job = running->job;
  job = *loaded;
  if (IsTerminal(job.state())) {  // cancelled between dispatch and here
    return false;
  }
  job.set_attempt(job.attempt() + 1);
  job.set_host_id(host_.host_id());
  *job.mutable_start_time() = NowTimestamp();
  job.clear_error();
  if (auto s = recorder_->SetState(&job, v1::JOB_STATE_RUNNING, ""); !s.ok()) {
    // A store that cannot take the job's state cannot take its runs either.
    if (absl::IsResourceExhausted(s)) recorder_->SetStoreFull(true);
    recorder_->RecordState(&job, v1::JOB_STATE_FAILED,
             absl::StrCat("the store cannot record the job, so it did not run: ", s.message()));
    return false;
  }

  v1::WorkerRequest& request = start->request;
  request.set_job_id(job_id);
  // The job's settings only: each worker gets its runs from the plan.
  *request.mutable_settings() = WorkerSettingsOf(job.spec());
  request.set_model_dir(options_.model_dir);
  for (const std::string& root : options_.model_roots) request.add_model_roots(root);
  *request.mutable_aot() = options_.aot;
  // The plan made at submit; its models are checked again at start: an
  // operator may have narrowed the roots since.
  auto plan = store_->jobs().GetPlan(job_id);
  if (plan.ok()) start->configs.assign(plan->runs().begin(), plan->runs().end());
  absl::Status models =
      plan.ok() ? planner_->CheckModels(start->configs, &request)
                : absl::FailedPreconditionError(absl::StrCat(
                      "the job's plan cannot be read, so it did not run: ",
                      plan.status().message()));
  request.set_job_run_count(start->configs.size());
  if (models.ok()) models = FindHostPair(job, start);
  if (!models.ok()) {
    recorder_->RecordState(&job, v1::JOB_STATE_FAILED, std::string(models.message()));
    return false;
  }
  if (job.attempt() > 1) {
    // A resumed job: the runs the stop cancelled are run again, so only the
    // ones that finished are kept and skipped.
    if (auto gone = store_->runs().DeleteCancelled(job_id); !gone.ok()) {
      recorder_->RecordState(&job, v1::JOB_STATE_FAILED,
               absl::StrCat("cannot resume: ", gone.status().message()));
      return false;
    }
  }
  auto done_runs = store_->runs().List(job_id, false);
  if (!done_runs.ok()) {
    recorder_->RecordState(&job, v1::JOB_STATE_FAILED,
             absl::StrCat("cannot read the job's stored runs: ", done_runs.status().message()));
    return false;
  }
  for (const v1::Run& r : *done_runs) {
    start->stored.insert(r.index());
    if (r.state() == v1::RUN_STATE_OUT_OF_MEMORY) *start->request.add_out_of_memory() = r.config();
  }
  job.set_runs_done(start->stored.size());
  job.set_runs_failed(std::count_if(done_runs->begin(), done_runs->end(), [](const v1::Run& r) {
    return r.state() == v1::RUN_STATE_FAILED;
  }));
  // Only a measured run makes a job a success: runs out of memory or
  // skipped after one measured nothing.
  start->any_ok = std::any_of(done_runs->begin(), done_runs->end(), [](const v1::Run& r) {
    return r.state() == v1::RUN_STATE_SUCCEEDED;
  });
  return true;
}


JobRunner::Passes JobRunner::RunLanes(const std::shared_ptr<RunningJob>& running,
                                       JobStart* start) {
  const std::vector<Lane> lanes = planner_->LanesOf(running->job, start->configs, running->leases);
  Passes r;
  r.done = true;
  r.any_ok = start->any_ok;
  auto merge = [&r](const Passes& p) {
    r.done = r.done && p.done;
    r.cancelled_by_worker = r.cancelled_by_worker || p.cancelled_by_worker;
    if (r.stream.ok()) r.stream = p.stream;
    if (r.gpu_setup.ok()) r.gpu_setup = p.gpu_setup;
    if (r.store_error.ok()) r.store_error = p.store_error;
    if (!p.exit.ok() || r.exit.exit_code < 0) r.exit = p.exit;
    if (p.crashes > 0) r.crash = p.crash;
    r.crashes += p.crashes;
    r.any_ok = r.any_ok || p.any_ok;
  };
  std::thread watchdog([this, running] { Watchdog(running); });
  // Parallel lanes (one per GPU) side by side, then the others in turn.
  std::vector<Passes> parallel(lanes.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (!lanes[i].parallel) continue;
    threads.emplace_back(
        [this, &running, &start, &lanes, &parallel, i] {
          parallel[i] = RunPasses(running, *start, lanes[i]);
        });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (lanes[i].parallel) merge(parallel[i]);
  }
  for (const Lane& lane : lanes) {
    if (lane.parallel) continue;
    bool stopped;
    {
      absl::MutexLock lock(&running->mu);
      stopped = running->cancel || running->shutdown || running->timed_out;
    }
    if (stopped || !r.store_error.ok() || !r.stream.ok() || !r.gpu_setup.ok()) {
      r.done = false;
      break;
    }
    merge(RunPasses(running, *start, lane));
  }
  {
    absl::MutexLock lock(&running->mu);
    running->finished = true;  // ends the watchdog
    running->processes.clear();
  }
  running->cv.SignalAll();
  watchdog.join();
  return r;
}

void JobRunner::NoteJobsBeside(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  std::set<std::string> others;
  for (const auto& entry : beside_) {
    if (entry.first != job_id) others.insert(entry.first);
  }
  beside_[job_id] = std::move(others);
}

namespace {

// Why a job's workers stopped before its sweep was done.
std::string EndedEarly(const absl::Status& gpu_setup, const absl::Status& stream,
                       const worker::ExitInfo& exit) {
  if (!gpu_setup.ok()) {
    return absl::StrCat("GPU setup: ", gpu_setup.message(), "; completed runs are kept");
  }
  if (!stream.ok()) return absl::StrCat("worker stream broken: ", stream.message());
  return absl::StrCat("worker ended early: ", exit.Describe());
}

}  // namespace

void JobRunner::EndJob(RunningJob* running, const Passes& passes) {
  const std::string& job_id = running->job.job_id();
  v1::Job& job = running->job;
  const bool done = passes.done, any_ok = passes.any_ok;
  const absl::Status& stream = passes.stream;
  const absl::Status& store_error = passes.store_error;
  const worker::ExitInfo& exit = passes.exit;
  const worker::ExitInfo& crash = passes.crash;
  const int crashes = passes.crashes;
  bool cancel, shutdown, timed_out;
  {
    absl::MutexLock lock(&running->mu);
    cancel = running->cancel;
    shutdown = running->shutdown;
    timed_out = running->timed_out;
  }

  *job.mutable_end_time() = NowTimestamp();
  const worker::ExitInfo& shown = exit.ok() && crashes > 0 ? crash : exit;
  job.set_worker_exit(shown.Describe());
  if (!shown.ok()) job.set_worker_stderr_tail(shown.stderr_tail);
  if (!store_error.ok()) {
    recorder_->RecordState(&job, v1::JOB_STATE_FAILED,
             absl::StrCat("a run could not be stored, so the job stopped: ",
                          store_error.message(), "; runs stored before it are kept"));
  } else if (timed_out) {
    const int64_t limit = job.spec().timeout_s() > 0
                              ? std::min(job.spec().timeout_s(), options_.max_job_seconds)
                              : options_.max_job_seconds;
    recorder_->RecordState(&job, v1::JOB_STATE_FAILED,
             absl::StrCat("timed out after ", limit, " s; completed runs are kept"));
  } else if (cancel) {
    recorder_->RecordState(&job, v1::JOB_STATE_CANCELLED, "cancelled; completed runs are kept");
  } else if (shutdown) {
    (void)recorder_->Interrupt(&job);
  } else if (!done || !exit.ok() || !stream.ok() || !passes.gpu_setup.ok()) {
    recorder_->RecordState(&job, v1::JOB_STATE_FAILED, EndedEarly(passes.gpu_setup, stream, exit));
  } else if (passes.cancelled_by_worker) {
    recorder_->RecordState(&job, v1::JOB_STATE_CANCELLED, "the worker was stopped");
  } else {
    const std::string crashed =
        crashes == 0 ? ""
                     : absl::StrCat("; the worker died in ", crashes, " run(s), last with ",
                                    crash.Describe());
    // Succeeded means every run it counts was measured and stored.
    std::string why;
    if (job.runs_failed() > 0) {
      why = absl::StrCat(job.runs_failed(), " of ", job.run_count(),
                         " runs failed (`gpubench show` says why)", crashed,
                         any_ok ? "; the measured runs are kept" : "");
    } else if (!any_ok) {
      why = absl::StrCat("no run was measured: each ran out of memory or was skipped after one "
                         "that did",
                         crashed);
    }
    recorder_->RecordState(&job, why.empty() ? v1::JOB_STATE_SUCCEEDED : v1::JOB_STATE_FAILED, why);
  }
  if (auto pruned = store_->runs().Prune(options_.retention); !pruned.ok()) {
    recorder_->Publish(job_id, [&](v1::ProgressEvent* e) {
      e->mutable_log()->set_text(absl::StrCat("retention: ", pruned.status().message()));
    });
  }
}

void JobRunner::FillContention(const std::string& job_id, v1::Run* run) {
  v1::Contention* c = run->mutable_result()->mutable_contention();
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& id : beside_[job_id]) c->add_jobs_beside(id);
  }
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) c->set_load_average_1m(load[0]);
  c->set_cpu_count(std::max(1u, std::thread::hardware_concurrency()));
  c->set_contended(IsContended(*c));
}

}  // namespace gpubench::server
