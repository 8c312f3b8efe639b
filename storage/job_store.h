// Jobs and their durable progress events (tables jobs, job_events).
#ifndef GPUBENCH_STORAGE_JOB_STORE_H_
#define GPUBENCH_STORAGE_JOB_STORE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpubench/v1/job.pb.h"
#include "storage/query.h"
#include "storage/sqlite.h"

namespace gpubench::storage {

// List filter; empty or zero fields match everything.
struct JobFilter {
  std::vector<v1::JobState> states;
  std::string workload;  // the spec's base workload
  std::string schedule_id;
  int64_t submitted_after_ns = 0;   // inclusive
  int64_t submitted_before_ns = 0;  // exclusive
};

// What JobStore::Delete removed.
struct DeletedJob {
  v1::Job job;        // its record as stored
  int64_t runs = 0;   // its runs, deleted with it
  int64_t bytes = 0;  // what its rows held, as SubmitterBytes counts them
};

// Thread-safe.
class JobStore {
 public:
  explicit JobStore(Database* db) : db_(db) {}

  // Inserts a job and its plan (none when it has no runs) in one
  // transaction; assigns job_id when empty. Returns the id.
  absl::StatusOr<std::string> Insert(const v1::Job& job,
                                     const v1::JobPlan& plan = v1::JobPlan());
  // The plan stored with a job. NotFound when it has none.
  absl::StatusOr<v1::JobPlan> GetPlan(const std::string& job_id);
  // Replaces a job's stored state and record. NotFound for an unknown id.
  absl::Status Update(const v1::Job& job);
  // The same, with the event that goes with it, in one transaction.
  absl::Status Update(const v1::Job& job, const v1::ProgressEvent& event);
  absl::StatusOr<v1::Job> Get(const std::string& job_id);  // NotFound
  // Deletes a job with everything stored of it, in one transaction: its
  // events and plan, its runs and their samples, telemetry and traces (ON
  // DELETE CASCADE). Whether it may go (it has ended) is the caller's
  // decision. NotFound for an unknown id. SQLite reuses the freed pages, so
  // the room counts again under StoreOptions::max_bytes.
  absl::StatusOr<DeletedJob> Delete(const std::string& job_id);
  // The bytes the jobs of one submitter (Job.submitted_by) hold: their
  // records, events and plans, and their runs' records and configs,
  // samples, telemetry and traces (the stored lengths; SQLite's page and
  // index overhead aside). 0 for a submitter without jobs.
  absl::StatusOr<int64_t> SubmitterBytes(const std::string& submitted_by);
  // How many jobs are stored in each state.
  absl::StatusOr<std::map<v1::JobState, int64_t>> CountByState();

  // Jobs newest first (submit time, then id). page_size 0 means 50; at most
  // 1000. A page_token from a previous page; a garbled one is
  // InvalidArgument naming "page_token".
  absl::StatusOr<Page<v1::Job>> List(const JobFilter& filter, int page_size,
                                     const std::string& page_token);

  // Durable progress events of a job (state changes, run started, run
  // finished; not per-iteration progress), for WatchJob after a restart.
  absl::Status AppendEvent(const v1::ProgressEvent& event);
  // Events with sequence > after_sequence, in order.
  absl::StatusOr<std::vector<v1::ProgressEvent>> ListEvents(const std::string& job_id,
                                                            int64_t after_sequence);
  // Highest stored sequence of a job; 0 when it has none.
  absl::StatusOr<int64_t> LastSequence(const std::string& job_id);

 private:
  Database* const db_;
};

// Appends an event inside the caller's write (RunStore stores a run and its
// event in one transaction).
absl::Status AppendEventIn(Connection& c, const v1::ProgressEvent& event);

}  // namespace gpubench::storage

#endif  // GPUBENCH_STORAGE_JOB_STORE_H_
