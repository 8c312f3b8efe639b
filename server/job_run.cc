#include "server/job_manager.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "absl/strings/match.h"
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
#include "server/job_manager_internal.h"
#include "worker/process.h"

namespace gpubench::server {

using google::protobuf::util::TimeUtil;

void JobManager::RunJob(std::shared_ptr<Running> running) {
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
  absl::MutexLock lock(&mu_);
  queue_.Release(running->leases);
  running_.erase(running->job.job_id());
  beside_.erase(running->job.job_id());
  --job_threads_;  // the last touch of *this by this thread
  cv_.SignalAll();
}

bool JobManager::StartJob(Running* running, JobStart* start) {
  const std::string job_id = running->job.job_id();
  auto loaded = GetJob(job_id);
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
  if (auto s = SetState(&job, v1::JOB_STATE_RUNNING, ""); !s.ok()) {
    // A store that cannot take the job's state cannot take its runs either.
    if (absl::IsResourceExhausted(s)) store_full_.store(true);
    SetState(&job, v1::JOB_STATE_FAILED,
             absl::StrCat("the store cannot record the job, so it did not run: ", s.message()))
        .IgnoreError();
    return false;
  }

  v1::WorkerRequest& request = start->request;
  request.set_job_id(job_id);
  // The job's settings only: each worker gets its runs from the plan.
  *request.mutable_spec() = job.spec();
  request.mutable_spec()->clear_base();
  request.mutable_spec()->clear_sweep();
  request.set_model_dir(options_.model_dir);
  for (const std::string& root : options_.model_roots) request.add_model_roots(root);
  *request.mutable_aot() = options_.aot;
  // Checked again at start: an operator may have narrowed the roots since.
  auto configs = ExpandSweep(job.spec());
  absl::Status models = configs.ok() ? CheckModels(*configs, &request) : configs.status();
  if (configs.ok()) start->configs = std::move(*configs);
  request.set_job_run_count(start->configs.size());
  if (!models.ok()) {
    SetState(&job, v1::JOB_STATE_FAILED, std::string(models.message())).IgnoreError();
    return false;
  }
  if (job.attempt() > 1) {
    // A resumed job: the runs the stop cancelled are run again, so only the
    // ones that finished are kept and skipped.
    if (auto gone = store_->runs().DeleteCancelled(job_id); !gone.ok()) {
      SetState(&job, v1::JOB_STATE_FAILED,
               absl::StrCat("cannot resume: ", gone.status().message()))
          .IgnoreError();
      return false;
    }
  }
  auto done_runs = store_->runs().List(job_id, false);
  if (!done_runs.ok()) {
    SetState(&job, v1::JOB_STATE_FAILED,
             absl::StrCat("cannot read the job's stored runs: ", done_runs.status().message()))
        .IgnoreError();
    return false;
  }
  for (const v1::Run& r : *done_runs) {
    start->stored.insert(r.index());
    if (r.state() == v1::RUN_STATE_OUT_OF_MEMORY) *start->request.add_out_of_memory() = r.config();
  }
  job.set_runs_done(start->stored.size());
  // Only a measured run makes a job a success: runs out of memory or
  // skipped after one measured nothing.
  start->any_ok = std::any_of(done_runs->begin(), done_runs->end(), [](const v1::Run& r) {
    return r.state() == v1::RUN_STATE_SUCCEEDED;
  });
  return true;
}


JobManager::Passes JobManager::RunLanes(const std::shared_ptr<Running>& running,
                                       JobStart* start) {
  const std::vector<Lane> lanes = LanesOf(running->job, start->configs, running->leases);
  Passes r;
  r.done = true;
  r.any_ok = start->any_ok;
  auto merge = [&r](const Passes& p) {
    r.done = r.done && p.done;
    r.cancelled_by_worker = r.cancelled_by_worker || p.cancelled_by_worker;
    if (r.stream.ok()) r.stream = p.stream;
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
    if (stopped || !r.store_error.ok() || !r.stream.ok()) {
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

JobManager::Passes JobManager::RunPasses(const std::shared_ptr<Running>& running,
                                        const JobStart& start, const Lane& lane) {
  // One worker (or one group of ranks) per pass. A worker that dies inside
  // a run costs that run only: it is stored as failed, and the rest of the
  // lane goes on in a fresh worker. Every pass stores at least one run or
  // ends the lane.
  const std::string& job_id = running->job.job_id();
  v1::Job& job = running->job;
  v1::WorkerRequest request = start.request;
  if (lane.rank.world_size() > 0) *request.mutable_rank() = lane.rank;
  const std::vector<v1::RunConfig>* configs = &start.configs;
  const std::set<int> mine(lane.indices.begin(), lane.indices.end());
  // The lane's runs still to do are those not in `stored` (the other
  // lanes' count as stored): each pass's worker gets them from the plan.
  std::set<int> stored = start.stored;
  for (int i = 0; i < static_cast<int>(configs->size()); ++i) {
    if (!mine.count(i)) stored.insert(i);
  }
  auto all_stored = [&] {
    return std::all_of(lane.indices.begin(), lane.indices.end(),
                       [&](int i) { return stored.count(i) > 0; });
  };
  Passes r;
  bool& done = r.done;
  bool& cancelled_by_worker = r.cancelled_by_worker;
  absl::Status& stream = r.stream;
  absl::Status& store_error = r.store_error;
  worker::ExitInfo& exit = r.exit;
  worker::ExitInfo& crash = r.crash;
  int& crashes = r.crashes;
  bool& any_ok = r.any_ok;
  bool stopped = false;
  auto store = [&](v1::Run* run, const std::string& trace) {
    absl::MutexLock lock(&running->store_mu);
    return StoreRun(&job, run, trace);
  };
  for (int pass = 0; !done && !stopped; ++pass) {
    if (all_stored()) {
      // Nothing is left for a worker (every point stored, or crashed).
      done = true;
      exit = worker::ExitInfo{0, 0, ""};
      break;
    }
    request.clear_runs();
    for (int i : lane.indices) {
      if (stored.count(i)) continue;
      v1::PlannedRun* run = request.add_runs();
      run->set_index(i);
      *run->mutable_config() = (*configs)[i];
    }
    absl::StatusOr<std::unique_ptr<worker::Worker>> process;
    {
      absl::MutexLock lock(&running->group_mu);
      request.set_process_group(running->group_workers > 0 ? running->process_group : 0);
      process = lane.rank.world_size() > 0 ? StartRankGroup(launcher_.get(), request)
                                           : launcher_->Start(request);
      if (process.ok() && running->group_workers++ == 0) {
        running->process_group = (*process)->ProcessGroup();
      }
    }
    if (!process.ok()) {
      stream = absl::UnavailableError(
          absl::StrCat("cannot start the worker: ", process.status().message()));
      break;
    }
    Log(LogLevel::kDebug, "job ", job_id, ": worker started (pass ", pass + 1, ", ",
        stored.size() - (configs->size() - lane.indices.size()), " run(s) already stored",
        lane.rank.world_size() > 0 ? absl::StrCat(", ", lane.rank.world_size(), " ranks") : "",
        ")");
    {
      absl::MutexLock lock(&running->mu);
      // A stop that came while no worker ran must not be missed.
      stopped = running->cancel || running->shutdown || running->timed_out;
      running->processes.insert(process->get());
    }
    if (stopped) (*process)->Stop();
    int current = -1;  // the run the worker is in, if any
    int stored_now = 0;
    v1::RunConfig current_config;
    while (true) {
      v1::WorkerEvent event;
      auto got = (*process)->Next(&event);
      if (!got.ok()) {
        stream = got.status();
        (*process)->Kill();
        break;
      }
      if (!*got) break;
      // A worker runs only what it was given, and a run once: anything
      // else is a worker (or the code in it) writing what it should not.
      const int reported = event.has_run_started()    ? event.run_started().index()
                           : event.has_run_finished() ? event.run_finished().run().index()
                                                      : -1;
      if ((event.has_run_started() || event.has_run_finished()) &&
          (!mine.count(reported) || stored.count(reported))) {
        stream = absl::DataLossError(absl::StrCat(
            "the worker reported run ", reported, ", which it was not given to run"));
        (*process)->Kill();
        break;
      }
      if (event.has_run_started()) {
        current = event.run_started().index();
        current_config = (*configs)[current];
        {
          absl::MutexLock lock(&mu_);
          std::set<std::string>& others = beside_[job_id];
          others.clear();
          for (const auto& entry : running_) {
            if (entry.first != job_id) others.insert(entry.first);
          }
        }
        Emit(job_id, [&](v1::ProgressEvent* e) {
          *e->mutable_run_started() = event.run_started();
        }, true, nullptr).IgnoreError();
      } else if (event.has_run_progress()) {
        Emit(job_id, [&](v1::ProgressEvent* e) {
          *e->mutable_run_progress() = event.run_progress();
        }, false, nullptr).IgnoreError();
      } else if (event.has_log()) {
        Emit(job_id, [&](v1::ProgressEvent* e) {
          e->mutable_log()->set_text(Bounded(event.log().text(), kMaxMessageBytes));
        }, false, nullptr).IgnoreError();
      } else if (event.has_run_finished()) {
        v1::Run run = event.run_finished().run();
        *run.mutable_config() = (*configs)[run.index()];  // the plan's, whatever it said
        // The error is the model's to choose (an assert's message): the
        // store, every reply and the HTML view keep a bounded one.
        run.set_error(Bounded(run.error(), kMaxMessageBytes));
        current = -1;
        FillContention(job_id, &run);
        const std::string& trace = event.run_finished().trace_json();
        const bool trace_fits = trace.size() <= kMaxTraceBytes;
        if (!trace_fits) {
          Emit(job_id, [&](v1::ProgressEvent* e) {
            e->mutable_log()->set_text(absl::StrCat(
                "run ", run.index(), ": its profiler trace of ", trace.size(),
                " bytes is over the ", kMaxTraceBytes >> 20, " MiB a run may keep; not stored"));
          }, true, nullptr).IgnoreError();
        }
        store_error = store(&run, trace_fits ? trace : std::string());
        if (!store_error.ok()) {
          if (absl::IsResourceExhausted(store_error)) store_full_.store(true);
          // Nothing more can be kept: stop rather than measure for nothing.
          (*process)->Kill();
          break;
        }
        stored.insert(run.index());
        ++stored_now;
        if (run.state() == v1::RUN_STATE_OUT_OF_MEMORY) *request.add_out_of_memory() = run.config();
        any_ok |= run.state() == v1::RUN_STATE_SUCCEEDED;
      } else if (event.has_done()) {
        done = true;
        cancelled_by_worker = event.done().cancelled();
      }
    }
    exit = (*process)->Wait();
    {
      absl::MutexLock lock(&running->group_mu);
      if (--running->group_workers == 0) running->process_group = 0;
    }
    std::string limit_hit;
    bool out_of_memory = false;
    {
      absl::MutexLock lock(&running->mu);
      running->processes.erase(process->get());
      stopped = running->cancel || running->shutdown || running->timed_out;
      if (auto hit = running->limit_hits.find(process->get()); hit != running->limit_hits.end()) {
        limit_hit = std::move(hit->second.first);
        out_of_memory = hit->second.second;
        running->limit_hits.erase(hit);
      }
    }
    if (done || stopped || !store_error.ok() || !stream.ok() || exit.ok()) break;
    if (current < 0 && !limit_hit.empty()) {
      // Killed for a limit before its first event: it was starting the
      // next run to do.
      for (int i = 0; i < static_cast<int>(configs->size()); ++i) {
        if (!stored.count(i)) {
          current = i;
          current_config = (*configs)[i];
          break;
        }
      }
    }
    if (current < 0 || stored.count(current)) {
      // Died between runs. A group whose rank failed its run (stored) and
      // stopped goes on with the rest in fresh workers; otherwise there is
      // no culprit to blame.
      if (lane.rank.world_size() > 0 && stored_now > 0) {
        crash = exit;
        ++crashes;
        continue;
      }
      break;
    }
    v1::Run crashed;
    crashed.set_job_id(job_id);
    crashed.set_index(current);
    *crashed.mutable_config() = current_config;
    // Killed at the memory limit, the run ran out of (host) memory: the
    // larger batch sizes of its config are skipped, as after the engine's
    // own out-of-memory error. CPU runs reach this: Linux overcommits.
    crashed.set_state(out_of_memory ? v1::RUN_STATE_OUT_OF_MEMORY : v1::RUN_STATE_FAILED);
    crashed.set_error(absl::StrCat(limit_hit.empty() ? "the worker died in this run ("
                                                     : "the daemon killed the worker in this run: " +
                                                           limit_hit + " (",
                                   exit.Describe(),
                                   "); the rest of the sweep went on in a fresh worker. "
                                   "Its stderr ended: ",
                                   exit.stderr_tail.substr(
                                       exit.stderr_tail.size() > 2000
                                           ? exit.stderr_tail.size() - 2000
                                           : 0)));
    *crashed.mutable_start_time() = NowTimestamp();
    *crashed.mutable_end_time() = crashed.start_time();
    store_error = store(&crashed, "");
    if (!store_error.ok()) break;
    stored.insert(current);
    if (out_of_memory) *request.add_out_of_memory() = current_config;
    crash = exit;
    ++crashes;
  }
  return r;
}

void JobManager::EndJob(Running* running, const Passes& passes) {
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
    SetState(&job, v1::JOB_STATE_FAILED,
             absl::StrCat("a run could not be stored, so the job stopped: ",
                          store_error.message(), "; runs stored before it are kept"))
        .IgnoreError();
  } else if (timed_out) {
    const int64_t limit = job.spec().timeout_s() > 0
                              ? std::min(job.spec().timeout_s(), options_.max_job_seconds)
                              : options_.max_job_seconds;
    SetState(&job, v1::JOB_STATE_FAILED,
             absl::StrCat("timed out after ", limit, " s; completed runs are kept"))
        .IgnoreError();
  } else if (cancel) {
    SetState(&job, v1::JOB_STATE_CANCELLED, "cancelled; completed runs are kept")
        .IgnoreError();
  } else if (shutdown) {
    Interrupt(&job).IgnoreError();
  } else if (!done || !exit.ok() || !stream.ok()) {
    SetState(&job, v1::JOB_STATE_FAILED,
             stream.ok() ? absl::StrCat("worker ended early: ", exit.Describe())
                         : absl::StrCat("worker stream broken: ", stream.message()))
        .IgnoreError();
  } else if (passes.cancelled_by_worker) {
    SetState(&job, v1::JOB_STATE_CANCELLED, "the worker was stopped").IgnoreError();
  } else {
    const std::string crashed =
        crashes == 0 ? ""
                     : absl::StrCat("; the worker died in ", crashes, " run(s), last with ",
                                    crash.Describe());
    SetState(&job, any_ok ? v1::JOB_STATE_SUCCEEDED : v1::JOB_STATE_FAILED,
             any_ok ? ""
                    : absl::StrCat("no run was measured: each failed, ran out of memory or "
                                   "was skipped after one that did",
                                   crashed))
        .IgnoreError();
  }
  if (auto pruned = store_->runs().Prune(options_.retention); !pruned.ok()) {
    Emit(job_id, [&](v1::ProgressEvent* e) {
      e->mutable_log()->set_text(absl::StrCat("retention: ", pruned.status().message()));
    }, false, nullptr).IgnoreError();
  }
  if (job.state() == v1::JOB_STATE_QUEUED) {  // requeued after a shutdown
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      queue_.Push(job_id, job.spec().priority(),
                  TimeUtil::TimestampToNanoseconds(job.submit_time()), running->leases, 0,
                  job.submitted_by());
    }
  }
}

void JobManager::FillContention(const std::string& job_id, v1::Run* run) {
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

void JobManager::Watchdog(std::shared_ptr<Running> running) {
  using Clock = std::chrono::steady_clock;
  const int64_t limit_s =
      running->job.spec().timeout_s() > 0
          ? std::min(running->job.spec().timeout_s(), options_.max_job_seconds)
          : options_.max_job_seconds;
  const auto deadline = Clock::now() + std::chrono::seconds(limit_s);
  // The memory limit is a poll of the worker's RSS: an rlimit would break
  // CUDA (worker/process.h). The scratch folder's is a poll too.
  const bool watch = options_.worker_max_rss_bytes > 0 || options_.worker_max_scratch_bytes > 0;
  const auto poll = std::chrono::milliseconds(watch ? 200 : 0);
  absl::MutexLock lock(&running->mu);
  bool stop = false;
  while (!stop) {
    const auto wake = poll.count() > 0 ? std::min(deadline, Clock::now() + poll) : deadline;
    // Until a stop, the next poll or the deadline.
    while (!(stop = running->finished || running->cancel || running->shutdown) &&
           Clock::now() < wake) {
      running->cv.WaitWithTimeout(&running->mu, absl::FromChrono(wake - Clock::now()));
    }
    if (running->finished) return;
    if (stop) break;
    if (Clock::now() >= deadline) {
      running->timed_out = true;
      break;
    }
    for (worker::Worker* process : running->processes) {
      if (running->limit_hits.count(process)) continue;  // killed already
      const int64_t rss = options_.worker_max_rss_bytes > 0 ? process->RssBytes() : 0;
      const int64_t scratch =
          options_.worker_max_scratch_bytes > 0 ? process->ScratchBytes() : 0;
      if (rss > options_.worker_max_rss_bytes && options_.worker_max_rss_bytes > 0) {
        running->limit_hits[process] = {
            absl::StrCat("its resident memory ", rss, " bytes passed the host memory limit of ",
                         options_.worker_max_rss_bytes, " bytes (gpubenchd --worker-max-rss-bytes)"),
            true};
        process->Kill();
      } else if (scratch > options_.worker_max_scratch_bytes &&
                 options_.worker_max_scratch_bytes > 0) {
        running->limit_hits[process] = {
            absl::StrCat("its scratch folder held ", scratch, " bytes, past the limit of ",
                         options_.worker_max_scratch_bytes,
                         " bytes (gpubenchd --worker-max-scratch-bytes)"),
            false};
        process->Kill();
      }
    }
  }
  for (worker::Worker* process : running->processes) process->Stop();
  const auto kill_at = Clock::now() + std::chrono::milliseconds(options_.stop_grace_ms);
  while (!running->finished && Clock::now() < kill_at) {
    running->cv.WaitWithTimeout(&running->mu, absl::FromChrono(kill_at - Clock::now()));
  }
  if (!running->finished) {
    for (worker::Worker* process : running->processes) process->Kill();
  }
}

}  // namespace gpubench::server
