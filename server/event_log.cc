#include "server/event_log.h"

#include <algorithm>
#include <climits>

#include "common/clock.h"

namespace gpubench::server {
namespace {

// Watchers get runs without their series; GetRun has them.
void StripSeries(v1::ProgressEvent* e) {
  if (!e->has_run_finished()) return;
  e->mutable_run_finished()->mutable_run()->clear_samples();
  e->mutable_run_finished()->mutable_run()->clear_telemetry_series();
}

}  // namespace

EventLog::JobLog* EventLog::LogLocked(const std::string& job_id, int64_t last_stored_sequence) {
  auto it = logs_.find(job_id);
  if (it != logs_.end()) return &it->second;
  JobLog& log = logs_[job_id];
  log.next_sequence = last_stored_sequence + 1;
  log.first_sequence = log.next_sequence;
  return &log;
}

absl::Status EventLog::Append(const std::string& job_id,
                              const std::function<void(v1::ProgressEvent*)>& fill,
                              const std::function<absl::Status(v1::ProgressEvent*)>& persist,
                              End end) {
  // The job's log (continuing the stored sequence when this daemon has none
  // in memory: a restart, or an evicted log), pinned against eviction until
  // this event is published.
  std::shared_ptr<absl::Mutex> append_mu;
  {
    mu_.Lock();
    if (logs_.count(job_id) == 0) {
      mu_.Unlock();
      auto last = store_->jobs().LastSequence(job_id);
      mu_.Lock();
      LogLocked(job_id, last.ok() ? *last : 0);
    }
    JobLog& log = logs_[job_id];
    ++log.appenders;
    append_mu = log.append_mu;
    mu_.Unlock();
  }
  absl::MutexLock append(append_mu.get());
  v1::ProgressEvent e;
  e.set_job_id(job_id);
  {
    absl::MutexLock lock(&mu_);
    e.set_sequence(logs_[job_id].next_sequence++);
  }
  *e.mutable_time() = NowTimestamp();
  fill(&e);
  const absl::Status stored = persist ? persist(&e) : absl::OkStatus();
  StripSeries(&e);
  {
    absl::MutexLock lock(&mu_);
    JobLog& log = logs_[job_id];
    // Only the latest progress of a run is worth keeping: a long run would
    // otherwise grow the log by one event a window.
    if (e.has_run_progress() && !log.events.empty() && log.events.back().has_run_progress()) {
      log.events.back() = std::move(e);
    } else {
      log.events.push_back(std::move(e));
    }
    --log.appenders;
    if (end == End::kNotEnded) {
      ended_logs_.erase(std::remove(ended_logs_.begin(), ended_logs_.end(), job_id),
                        ended_logs_.end());
      log.ended = false;
    } else if (end == End::kEnded && !log.ended) {
      ended_logs_.push_back(job_id);
      log.ended = true;
    }
    // Forget the oldest ended logs no one is appending to; the store keeps
    // their durable events for late watchers.
    for (auto it = ended_logs_.begin();
         ended_logs_.size() > kKeptEndedLogs && it != ended_logs_.end();) {
      if (logs_[*it].appenders > 0) {
        ++it;
        continue;
      }
      logs_.erase(*it);
      it = ended_logs_.erase(it);
    }
  }
  Notify(job_id);
  return stored;
}

absl::Status EventLog::EventsAfter(const std::string& job_id, int64_t after_sequence,
                                   const std::function<absl::StatusOr<bool>()>& ended_in_store,
                                   std::vector<v1::ProgressEvent>* events, bool* ended) {
  events->clear();
  int64_t first_in_memory;
  {
    absl::MutexLock lock(&mu_);
    auto it = logs_.find(job_id);
    first_in_memory = it == logs_.end() ? INT64_MAX : it->second.first_sequence;
  }
  // Older events come from the store (durable ones only).
  if (after_sequence + 1 < first_in_memory) {
    auto stored = store_->jobs().ListEvents(job_id, after_sequence);
    if (!stored.ok()) return stored.status();
    for (auto& e : *stored) {
      if (e.sequence() >= first_in_memory) break;
      StripSeries(&e);
      events->push_back(std::move(e));
    }
  }
  mu_.Lock();
  auto it = logs_.find(job_id);
  if (it == logs_.end()) {
    mu_.Unlock();
    if (first_in_memory != INT64_MAX) {
      // Evicted since the first look: its events after after_sequence are
      // all in the store now. Read them from there, or the watcher would see
      // the job end without its last events.
      return EventsAfter(job_id, after_sequence, ended_in_store, events, ended);
    }
    // Not in memory: the job ended before this daemon started, or is queued
    // from a previous run of the daemon without events yet.
    auto in_store = ended_in_store();
    if (!in_store.ok()) return in_store.status();
    *ended = *in_store;
    return absl::OkStatus();
  }
  const JobLog& log = it->second;
  const int64_t from = std::max(after_sequence + 1, log.first_sequence);
  for (const auto& e : log.events) {
    if (e.sequence() >= from) events->push_back(e);
  }
  *ended = log.ended;
  mu_.Unlock();
  return absl::OkStatus();
}

void EventLog::Forget(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto it = logs_.find(job_id);
  if (it == logs_.end() || it->second.appenders > 0) return;
  logs_.erase(it);
  ended_logs_.erase(std::remove(ended_logs_.begin(), ended_logs_.end(), job_id),
                    ended_logs_.end());
}

void EventLog::Notify(const std::string& job_id) {
  absl::MutexLock lock(&listeners_mu_);
  for (auto& [token, listener] : listeners_) {
    if (listener.first == job_id) listener.second();
  }
}

int64_t EventLog::Subscribe(const std::string& job_id, std::function<void()> notify) {
  absl::MutexLock lock(&listeners_mu_);
  const int64_t token = next_token_++;
  listeners_[token] = {job_id, std::move(notify)};
  return token;
}

void EventLog::Unsubscribe(int64_t token) {
  absl::MutexLock lock(&listeners_mu_);
  listeners_.erase(token);
}

}  // namespace gpubench::server
