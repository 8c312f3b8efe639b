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
#include "launcher/process.h"

namespace gpubench::server {

using google::protobuf::util::TimeUtil;

absl::StatusOr<v1::Job> JobManager::GetJob(const std::string& job_id) {
  {
    absl::MutexLock lock(&mu_);
    if (auto it = unsaved_.find(job_id); it != unsaved_.end()) return it->second;
  }
  return store_->jobs().Get(job_id);
}

void JobManager::OverlayUnsaved(std::vector<v1::Job>* jobs) {
  absl::MutexLock lock(&mu_);
  for (v1::Job& job : *jobs) {
    if (auto it = unsaved_.find(job.job_id()); it != unsaved_.end()) job = it->second;
  }
}

void JobManager::RememberUnsavedLocked(const v1::Job& job, const absl::Status& why) {
  // The store cannot write: this daemon still knows the truth, serves it
  // (GetJob, ListJobs) and writes it when the store takes writes again.
  Log(LogLevel::kError, "job ", job.job_id(), ": storing it (",
      EnumShortName(v1::JobState_descriptor(), job.state()), ") failed: ", why.message());
  unsaved_[job.job_id()] = job;
}

void JobManager::RememberUnsavedEvent(const v1::ProgressEvent& event, const absl::Status& why) {
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

absl::Status JobManager::FlushUnsaved() {
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
    // NotFound: the job was deleted meanwhile (Delete), its state with it.
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

absl::Status JobManager::StoreRun(v1::Job* job, v1::Run* run, const std::string& trace) {
  run->set_job_id(job->job_id());
  run->set_host_id(host_.host_id());
  // The job's mark, whatever the worker wrote: fleet counts a run as a
  // probe only where the daemon's own suite made it.
  run->set_daemon_probe(job->daemon_probe());
  if (!trace.empty()) {
    v1::ProfileSummary* p = run->mutable_result()->mutable_profile();
    p->set_has_trace(true);
    p->set_trace_size_bytes(trace.size());
    p->set_trace_sha256(Sha256Hex(trace));
  }
  if (!job->schedule_id().empty() && run_hook_) run_hook_(*job, run);
  absl::Status stored = EmitRun(job->job_id(), [&](v1::ProgressEvent* e) {
    *e->mutable_run_finished()->mutable_run() = *run;
  }, *run, trace);
  if (!stored.ok()) return stored;
  CountFinishedRun(*run, job);
  if (auto s = store_->jobs().Update(*job); !s.ok()) {
    absl::MutexLock lock(&mu_);
    RememberUnsavedLocked(*job, s);
  }
  return absl::OkStatus();
}

absl::Status JobManager::EmitRun(const std::string& job_id,
                                 const std::function<void(v1::ProgressEvent*)>& fill,
                                 const v1::Run& run, const std::string& trace_json) {
  return events_.Append(job_id, fill, [&](v1::ProgressEvent* e) -> absl::Status {
    auto id = store_->runs().Insert(run, *e, trace_json);
    if (id.ok()) {
      Log(LogLevel::kDebug, "job ", job_id, ": run ", run.index(), " stored as ", *id, " (",
          EnumShortName(v1::RunState_descriptor(), run.state()), ", ",
          run.result().throughput_samples_per_s(), " samples/s)");
      if (e->has_run_finished()) e->mutable_run_finished()->mutable_run()->set_run_id(*id);
      return absl::OkStatus();
    }
    // The run is lost to the store; say so where watchers and the log see
    // it, and let the caller fail the job.
    Log(LogLevel::kError, "job ", job_id, ": storing a run failed: ", id.status().message());
    e->clear_run_finished();
    e->mutable_log()->set_text(
        absl::StrCat("storing run ", run.index(), " failed: ", id.status().message()));
    return id.status();
  });
}

void JobManager::RecordEvent(const std::string& job_id,
                             const std::function<void(v1::ProgressEvent*)>& fill) {
  // Kept, not dropped, when the store refuses it; the job goes on. The
  // event log's own error is none: its persist step never fails.
  (void)events_.Append(job_id, fill, [&](v1::ProgressEvent* e) {
    if (absl::Status s = store_->jobs().AppendEvent(*e); !s.ok()) RememberUnsavedEvent(*e, s);
    return absl::OkStatus();
  });
}

void JobManager::Publish(const std::string& job_id,
                         const std::function<void(v1::ProgressEvent*)>& fill) {
  (void)events_.Append(job_id, fill, nullptr);  // nothing to store: cannot fail
}

void JobManager::RecordState(v1::Job* job, v1::JobState state, const std::string& error) {
  // SetState has kept what the store refused (unsaved_) and logged it:
  // nothing is left to do with its status here.
  (void)SetState(job, state, error);
}

absl::Status JobManager::SetState(v1::Job* job, v1::JobState state,
                                  const std::string& error) {
  job->set_state(state);
  job->set_error(error);
  Log(state == v1::JOB_STATE_FAILED ? LogLevel::kWarning : LogLevel::kInfo, "job ",
      job->job_id(), " ", EnumShortName(v1::JobState_descriptor(), state),
      error.empty() ? "" : ": ", error);
  if (IsTerminal(state) && job->end_time().seconds() == 0) {
    *job->mutable_end_time() = NowTimestamp();
  }
  return events_.Append(
      job->job_id(),
      [&](v1::ProgressEvent* e) {
        e->mutable_state_changed()->set_state(state);
        e->mutable_state_changed()->set_error(error);
      },
      [&](v1::ProgressEvent* e) {
        // The row and its event in one transaction; both are kept when the
        // store refuses them.
        const absl::Status stored = store_->jobs().Update(*job, *e);
        if (!stored.ok()) RememberUnsavedEvent(*e, stored);
        absl::MutexLock lock(&mu_);
        if (stored.ok()) {
          unsaved_.erase(job->job_id());
        } else {
          RememberUnsavedLocked(*job, stored);
        }
        return stored;
      },
      Ends(*job) ? EventLog::End::kEnded : EventLog::End::kNotEnded);
}

absl::Status JobManager::EventsAfter(const std::string& job_id, int64_t after_sequence,
                                     std::vector<v1::ProgressEvent>* events, bool* ended) {
  return events_.EventsAfter(
      job_id, after_sequence,
      [&]() -> absl::StatusOr<bool> {
        auto job = GetJob(job_id);
        if (!job.ok()) return job.status();
        return Ends(*job);
      },
      events, ended);
}

}  // namespace gpubench::server
