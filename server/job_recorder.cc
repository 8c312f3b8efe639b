#include "server/job_recorder.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/spec.h"

namespace gpubench::server {

bool JobEnds(const v1::Job& job, int max_requeues) {
  // An interrupted job that will be requeued has not ended.
  return IsTerminal(job.state()) &&
         !(job.state() == v1::JOB_STATE_INTERRUPTED && job.attempt() <= max_requeues);
}

void JobRecorder::RememberUnsaved(const v1::Job& job, const absl::Status& why) {
  // The store cannot write: this daemon still knows the truth, serves it
  // (GetJob, ListJobs) and writes it when the store takes writes again.
  Log(LogLevel::kError, "job ", job.job_id(), ": storing it (",
      EnumShortName(v1::JobState_descriptor(), job.state()), ") failed: ", why.message());
  absl::MutexLock lock(&mu_);
  unsaved_[job.job_id()] = job;
}

void JobRecorder::RememberUnsavedEvent(const v1::ProgressEvent& event, const absl::Status& why) {
  Log(LogLevel::kError, "job ", event.job_id(), ": storing event ", event.sequence(),
      " failed, kept until the store writes again: ", why.message());
  absl::MutexLock lock(&mu_);
  if (unsaved_events_.size() == kMaxUnsavedEvents) {
    const v1::ProgressEvent& lost = unsaved_events_.front();
    Log(LogLevel::kError, "job ", lost.job_id(), ": event ", lost.sequence(),
        " is lost: more than ", kMaxUnsavedEvents, " events wait for the store");
    unsaved_events_.pop_front();
  }
  unsaved_events_.push_back(event);
}

std::optional<v1::Job> JobRecorder::Unsaved(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  if (auto it = unsaved_.find(job_id); it != unsaved_.end()) return it->second;
  return std::nullopt;
}

absl::StatusOr<v1::Job> JobRecorder::GetJob(const std::string& job_id) {
  if (std::optional<v1::Job> unsaved = Unsaved(job_id)) return *std::move(unsaved);
  return store_->jobs().Get(job_id);
}

void JobRecorder::Overlay(std::vector<v1::Job>* jobs) {
  absl::MutexLock lock(&mu_);
  for (v1::Job& job : *jobs) {
    if (auto it = unsaved_.find(job.job_id()); it != unsaved_.end()) job = it->second;
  }
}

std::map<v1::JobState, int> JobRecorder::UnsavedStates() {
  absl::MutexLock lock(&mu_);
  std::map<v1::JobState, int> states;
  for (const auto& [id, job] : unsaved_) ++states[job.state()];
  return states;
}

absl::Status JobRecorder::Flush() {
  // Events first, oldest first; each leaves the list once written.
  while (true) {
    v1::ProgressEvent event;
    {
      absl::MutexLock lock(&mu_);
      if (unsaved_events_.empty()) break;
      event = unsaved_events_.front();
    }
    if (auto s = store_->jobs().AppendEvent(event); !s.ok()) return s;
    absl::MutexLock lock(&mu_);
    if (!unsaved_events_.empty() &&
        unsaved_events_.front().SerializeAsString() == event.SerializeAsString()) {
      unsaved_events_.pop_front();
    }
  }
  std::map<std::string, v1::Job> pending;
  {
    absl::MutexLock lock(&mu_);
    pending = unsaved_;
  }
  for (const auto& [id, job] : pending) {
    // NotFound: the job was deleted meanwhile, its state with it.
    if (auto s = store_->jobs().Update(job); !s.ok() && !absl::IsNotFound(s)) return s;
    absl::MutexLock lock(&mu_);
    auto it = unsaved_.find(id);
    // Unless it changed again meanwhile.
    if (it != unsaved_.end() && it->second.SerializeAsString() == job.SerializeAsString()) {
      unsaved_.erase(it);
    }
  }
  return absl::OkStatus();
}

void JobRecorder::LogLost(const absl::Status& why) {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, job] : unsaved_) {
    Log(LogLevel::kError, "job ", id, ": its state (",
        EnumShortName(v1::JobState_descriptor(), job.state()),
        ") is lost at shutdown, so the next start requeues it: ", why.message());
  }
}

void JobRecorder::Forget(const std::string& job_id) {
  // What the store could not take of a deleted job would otherwise be
  // written again for a job that is gone (and refused, holding up every
  // later write).
  absl::MutexLock lock(&mu_);
  unsaved_.erase(job_id);
  unsaved_events_.erase(
      std::remove_if(unsaved_events_.begin(), unsaved_events_.end(),
                     [&](const v1::ProgressEvent& e) { return e.job_id() == job_id; }),
      unsaved_events_.end());
}

absl::Status JobRecorder::StoreRun(v1::Job* job, v1::Run* run,
                                   const std::vector<storage::RankTrace>& traces) {
  run->set_job_id(job->job_id());
  run->set_host_id(host_id_);
  // The job's mark, whatever the worker wrote: fleet counts a run as a
  // probe only where the daemon's own suite made it.
  run->set_daemon_probe(job->daemon_probe());
  v1::ProfileSummary* p = run->mutable_result()->mutable_profile();
  p->clear_traced_ranks();
  for (const storage::RankTrace& t : traces) {
    if (run->config().world_size() > 1) p->add_traced_ranks(t.rank);
    if (t.rank != 0) continue;
    p->set_has_trace(true);
    p->set_trace_size_bytes(t.json.size());
    p->set_trace_sha256(Sha256Hex(t.json));
  }
  if (!job->schedule_id().empty() && run_hook_) run_hook_(*job, run);
  const std::string& job_id = job->job_id();
  absl::Status stored = events_->Append(
      job_id,
      [&](v1::ProgressEvent* e) { *e->mutable_run_finished()->mutable_run() = *run; },
      [&](v1::ProgressEvent* e) -> absl::Status {
        auto id = store_->runs().Insert(*run, *e, traces);
        if (id.ok()) {
          Log(LogLevel::kDebug, "job ", job_id, ": run ", run->index(), " stored as ", *id,
              " (", EnumShortName(v1::RunState_descriptor(), run->state()), ", ",
              run->result().throughput_samples_per_s(), " samples/s)");
          e->mutable_run_finished()->mutable_run()->set_run_id(*id);
          return absl::OkStatus();
        }
        // The run is lost to the store; say so where watchers and the log
        // see it, and let the caller fail the job.
        Log(LogLevel::kError, "job ", job_id, ": storing a run failed: ",
            id.status().message());
        e->clear_run_finished();
        e->mutable_log()->set_text(
            absl::StrCat("storing run ", run->index(), " failed: ", id.status().message()));
        return id.status();
      });
  if (!stored.ok()) return stored;
  CountFinishedRun(*run, job);
  if (auto s = store_->jobs().Update(*job); !s.ok()) RememberUnsaved(*job, s);
  return absl::OkStatus();
}

void JobRecorder::RecordEvent(const std::string& job_id,
                              const std::function<void(v1::ProgressEvent*)>& fill) {
  // Kept, not dropped, when the store refuses it; the job goes on. The
  // event log's own error is none: its persist step never fails.
  (void)events_->Append(job_id, fill, [&](v1::ProgressEvent* e) {
    if (absl::Status s = store_->jobs().AppendEvent(*e); !s.ok()) RememberUnsavedEvent(*e, s);
    return absl::OkStatus();
  });
}

void JobRecorder::Publish(const std::string& job_id,
                          const std::function<void(v1::ProgressEvent*)>& fill) {
  (void)events_->Append(job_id, fill, nullptr);  // nothing to store: cannot fail
}

void JobRecorder::RecordState(v1::Job* job, v1::JobState state, const std::string& error) {
  // SetState has kept what the store refused and logged it: nothing is
  // left to do with its status here.
  (void)SetState(job, state, error);
}

absl::Status JobRecorder::SetState(v1::Job* job, v1::JobState state, const std::string& error) {
  job->set_state(state);
  job->set_error(error);
  Log(state == v1::JOB_STATE_FAILED ? LogLevel::kWarning : LogLevel::kInfo, "job ",
      job->job_id(), " ", EnumShortName(v1::JobState_descriptor(), state),
      error.empty() ? "" : ": ", error);
  if (IsTerminal(state) && job->end_time().seconds() == 0) {
    *job->mutable_end_time() = NowTimestamp();
  }
  return events_->Append(
      job->job_id(),
      [&](v1::ProgressEvent* e) {
        e->mutable_state_changed()->set_state(state);
        e->mutable_state_changed()->set_error(error);
      },
      [&](v1::ProgressEvent* e) {
        // The row and its event in one transaction; both are kept when the
        // store refuses them.
        const absl::Status stored = store_->jobs().Update(*job, *e);
        if (stored.ok()) {
          absl::MutexLock lock(&mu_);
          unsaved_.erase(job->job_id());
        } else {
          RememberUnsavedEvent(*e, stored);
          RememberUnsaved(*job, stored);
        }
        return stored;
      },
      Ends(*job) ? EventLog::End::kEnded : EventLog::End::kNotEnded);
}

absl::Status JobRecorder::Interrupt(v1::Job* job) {
  const std::string why =
      job->state() == v1::JOB_STATE_RUNNING && job->start_time().seconds() > 0
          ? "the daemon stopped while the job was running"
          : "interrupted";
  if (auto s = SetState(job, v1::JOB_STATE_INTERRUPTED, why); !s.ok()) return s;
  if (job->attempt() > max_requeues_) return absl::OkStatus();
  return SetState(job, v1::JOB_STATE_QUEUED, "");
}

}  // namespace gpubench::server
