// The progress events of jobs, as WatchJob streams them: each job's recent
// events in memory (per-iteration progress coalesced), its durable ones in
// the store, and the subscribers woken when a job gets events.
#ifndef GPUBENCH_SERVER_EVENT_LOG_H_
#define GPUBENCH_SERVER_EVENT_LOG_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "gpubench/v1/job.pb.h"
#include "storage/store.h"

namespace gpubench::server {

// Thread-safe. Readers (EventsAfter) never wait for the disk: an event is
// stored before it is published, with no lock of the log held, in the
// manner of LevelDB's DBImpl::Write. Appends to one job are serialized, so
// each job's events are published in sequence order.
class EventLog {
 public:
  // Logs of ended jobs kept in memory; older ones are read from the store.
  static constexpr size_t kKeptEndedLogs = 64;

  explicit EventLog(storage::Store* store) : store_(store) {}

  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Whether a job has ended once this event is published.
  enum class End { kUnchanged, kEnded, kNotEnded };

  // Appends the next event of job_id: gives it its sequence and time, lets
  // `fill` set its content, then `persist` (when given) store it, without the
  // log's lock held, then publishes it and wakes the job's subscribers.
  // persist may change the event (a run id, or a log line in place of a run
  // that could not be stored); the event is published either way. Returns
  // persist's status.
  absl::Status Append(const std::string& job_id,
                      const std::function<void(v1::ProgressEvent*)>& fill,
                      const std::function<absl::Status(v1::ProgressEvent*)>& persist,
                      End end = End::kUnchanged);

  // Events of a job with sequence > after_sequence, in order, and whether
  // the job has ended (no event will follow the returned ones). `ended_in_store`
  // decides that for a job without a log in memory (it ended before this
  // daemon started); NotFound from it for an unknown job.
  absl::Status EventsAfter(const std::string& job_id, int64_t after_sequence,
                           const std::function<absl::StatusOr<bool>()>& ended_in_store,
                           std::vector<v1::ProgressEvent>* events, bool* ended);

  // Drops a job's events kept in memory (a deleted job's), unless an
  // Append to it is in flight.
  void Forget(const std::string& job_id);

  // Calls notify (on the appending thread) whenever job_id gets events.
  // notify must not call Subscribe or Unsubscribe. Returns a token.
  int64_t Subscribe(const std::string& job_id, std::function<void()> notify);
  // After it returns, the notify of token is not running and never will.
  void Unsubscribe(int64_t token);

 private:
  struct JobLog {
    std::vector<v1::ProgressEvent> events;  // in sequence order
    int64_t first_sequence = 1;             // earlier ones are in the store
    int64_t next_sequence = 1;
    bool ended = false;
    int appenders = 0;  // Appends in flight; the log is not evicted meanwhile
    // Held by the job's one appender at a time, across its store write.
    std::shared_ptr<absl::Mutex> append_mu = std::make_shared<absl::Mutex>();
  };

  // The job's log, created (continuing the stored sequence) when absent.
  JobLog* LogLocked(const std::string& job_id, int64_t last_stored_sequence)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notify(const std::string& job_id) ABSL_LOCKS_EXCLUDED(listeners_mu_);

  storage::Store* const store_;

  absl::Mutex mu_;
  std::map<std::string, JobLog> logs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> ended_logs_ ABSL_GUARDED_BY(mu_);  // oldest first

  absl::Mutex listeners_mu_;
  int64_t next_token_ ABSL_GUARDED_BY(listeners_mu_) = 1;
  std::map<int64_t, std::pair<std::string, std::function<void()>>> listeners_
      ABSL_GUARDED_BY(listeners_mu_);
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_EVENT_LOG_H_
