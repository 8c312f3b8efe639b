// The job recorder: a job's record in the store (its states, its durable
// events, its runs) and the events its watchers see, under one policy for
// a store that refuses a write. A state or a durable event the store
// refuses is kept in memory, served from there (Unsaved, Overlay), logged,
// and written first by the next Flush; the job goes on. Only a run the
// store refuses stops its job (StoreRun's error), and only a RUNNING state
// it refuses keeps a job from starting (SetState's caller). The job
// manager's second collaborator; tested alone in job_recorder_test.
#ifndef GPUBENCH_SERVER_JOB_RECORDER_H_
#define GPUBENCH_SERVER_JOB_RECORDER_H_

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "gpubench/v1/job.pb.h"
#include "server/event_log.h"
#include "storage/store.h"

namespace gpubench::server {

// A state a job leaves only by a requeue or never.
inline bool IsTerminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
         s == v1::JOB_STATE_CANCELLED || s == v1::JOB_STATE_INTERRUPTED;
}

// Whether no event will follow a job in this state: it ended, and is not
// an interrupted job that will be requeued (attempt <= max_requeues).
bool JobEnds(const v1::Job& job, int max_requeues);

// Thread-safe. Its mutex guards the unsaved states and events alone and is
// held for no store I/O; the event log has its own.
class JobRecorder {
 public:
  // events: the job's progress events and their watchers (not owned).
  // host_id: stamped on every stored run. max_requeues: how often an
  // interrupted job is queued again.
  JobRecorder(storage::Store* store, EventLog* events, std::string host_id, int max_requeues)
      : store_(store), events_(events), host_id_(std::move(host_id)),
        max_requeues_(max_requeues) {}

  // Called for each finished run of a scheduled job before it is stored;
  // set once, before any run.
  using RunHook = std::function<void(const v1::Job&, v1::Run*)>;
  void SetRunHook(RunHook hook) { run_hook_ = std::move(hook); }

  // Stores the job in state (with error) and a state-change event, in one
  // transaction, then publishes the event. Under the policy above; no lock
  // is held while it stores.
  void RecordState(v1::Job* job, v1::JobState state, const std::string& error);
  // RecordState, and the store's refusal, for the callers that act on it.
  absl::Status SetState(v1::Job* job, v1::JobState state, const std::string& error);
  // Marks a job INTERRUPTED and queues it again (QUEUED) when attempts
  // remain. The store's refusal of either state, which the policy keeps.
  absl::Status Interrupt(v1::Job* job);
  // Stores a durable progress event (under the policy), then publishes it.
  void RecordEvent(const std::string& job_id,
                   const std::function<void(v1::ProgressEvent*)>& fill);
  // Publishes an event watchers see and the store does not keep (progress).
  void Publish(const std::string& job_id, const std::function<void(v1::ProgressEvent*)>& fill);
  // Completes a finished run (job and host ids, the daemon's probe mark,
  // its traces' summary, the run hook's verdict), stores it with its event
  // and traces (rank 0's first; a rank each for a distributed run) in one
  // transaction, publishes the event and books the run into *job. The
  // store's error when the run could not be stored (its event then says
  // so); a job row the store refuses afterwards is kept.
  absl::Status StoreRun(v1::Job* job, v1::Run* run,
                        const std::vector<storage::RankTrace>& traces);

  // The job's newest state where the store could not take it.
  std::optional<v1::Job> Unsaved(const std::string& job_id);
  // The job as this daemon sees it: that state, else the store's.
  absl::StatusOr<v1::Job> GetJob(const std::string& job_id);
  // Replaces jobs read from the store by their newer unsaved states.
  void Overlay(std::vector<v1::Job>* jobs);
  // The unsaved jobs' states, counted.
  std::map<v1::JobState, int> UnsavedStates();
  // Writes every unsaved event, oldest first, then every unsaved job; the
  // first store error, if any (what is left stays kept).
  absl::Status Flush();
  // Logs each state still unsaved as lost (a shutdown whose last Flush
  // failed), with why.
  void LogLost(const absl::Status& why);
  // Forgets what is kept of a deleted job.
  void Forget(const std::string& job_id);

  bool Ends(const v1::Job& job) const { return JobEnds(job, max_requeues_); }

  // A run could not be stored for want of space (set by the runner); a
  // new job waits for room while it holds.
  void SetStoreFull(bool full) { store_full_.store(full); }
  bool store_full() const { return store_full_.load(); }

  // Unsaved events kept at most; beyond, the oldest is dropped (logged).
  static constexpr size_t kMaxUnsavedEvents = 4096;

 private:
  void RememberUnsaved(const v1::Job& job, const absl::Status& why) ABSL_LOCKS_EXCLUDED(mu_);
  void RememberUnsavedEvent(const v1::ProgressEvent& event, const absl::Status& why)
      ABSL_LOCKS_EXCLUDED(mu_);

  storage::Store* const store_;
  EventLog* const events_;
  const std::string host_id_;
  const int max_requeues_;
  RunHook run_hook_;
  std::atomic<bool> store_full_{false};

  absl::Mutex mu_;
  // Jobs whose latest state the store could not take (a full disk): the
  // truth, served before the store's copy until it is written.
  std::map<std::string, v1::Job> unsaved_ ABSL_GUARDED_BY(mu_);
  // Durable events (a job's states, its runs' starts and ends, its log
  // lines) the store could not take, in the order they happened: watchers
  // had them live; the store gets them first when it writes again.
  std::deque<v1::ProgressEvent> unsaved_events_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_JOB_RECORDER_H_
