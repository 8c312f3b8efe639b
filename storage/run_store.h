// Runs with their results, per-iteration samples, telemetry series and
// profiler traces (tables runs, samples, telemetry, traces), and the
// retention that trims them.
#ifndef GPUBENCH_STORAGE_RUN_STORE_H_
#define GPUBENCH_STORAGE_RUN_STORE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/filter.h"
#include "gpubench/v1/job.pb.h"
#include "gpubench/v1/result.pb.h"
#include "storage/query.h"
#include "storage/sqlite.h"

namespace gpubench::storage {

// Query filter; empty or zero fields match everything.
struct RunFilter {
  std::string workload;
  std::vector<ConfigPredicate> config_equals;  // every one holds
  std::string host_id;
  std::string job_id;
  std::string schedule_id;  // runs of jobs created by this schedule
  std::vector<v1::RunState> states;
  int64_t started_after_ns = 0;   // inclusive
  int64_t started_before_ns = 0;  // exclusive
};

// Caps applied by Prune; 0 means no cap.
struct RetentionLimits {
  int64_t max_runs_with_samples = 0;  // keep samples (and telemetry) of the newest N runs
  int64_t max_trace_bytes = 0;        // keep the newest traces within N bytes
};

// One rank's Chrome trace JSON of a run (0: rank 0's, or a run of one
// process's).
struct RankTrace {
  int rank = 0;
  std::string json;
};

// Thread-safe.
class RunStore {
 public:
  explicit RunStore(Database* db) : db_(db) {}

  // Stores a run with its result, samples and telemetry series in one
  // transaction; assigns run_id when empty. Returns the id. Samples that
  // are not finite numbers are InvalidArgument naming the field.
  absl::StatusOr<std::string> Insert(const v1::Run& run);
  // The same, with the job's progress event (which then carries the run as
  // stored: its id, no samples) and the run's Chrome traces not empty (as
  // PutTrace stores them), all in one transaction.
  absl::StatusOr<std::string> Insert(const v1::Run& run, const v1::ProgressEvent& event,
                                     const std::vector<RankTrace>& traces = {});
  // The runs of a job in sweep order; samples and telemetry series only when
  // asked for.
  absl::StatusOr<std::vector<v1::Run>> List(const std::string& job_id, bool include_samples);
  // One run; NotFound for an unknown id.
  absl::StatusOr<v1::Run> Get(const std::string& run_id, bool include_samples);
  // Runs newest first (start time, then id), without samples. page_size 0
  // means 100; at most 1000.
  absl::StatusOr<Page<v1::Run>> Query(const RunFilter& filter, int page_size,
                                      const std::string& page_token);
  // Deletes a job's runs that ended cancelled (with their samples, telemetry
  // and traces), so that a resumed job runs those sweep points again.
  // Returns how many went.
  absl::StatusOr<int64_t> DeleteCancelled(const std::string& job_id);

  // The last `limit` succeeded runs of a schedule's jobs with the same
  // config as `config` (every RunConfig field equal), newest first, without
  // samples; runs of job `exclude_job_id` are left out.
  absl::StatusOr<std::vector<v1::Run>> ScheduleHistory(const std::string& schedule_id,
                                                       const v1::RunConfig& config, int limit,
                                                       const std::string& exclude_job_id);
  // Stores a run's HistoryComparison (sets Run.history). NotFound.
  absl::Status SetHistory(const std::string& run_id, const v1::HistoryComparison& history);
  // Runs whose history verdict is REGRESSED (and IMPROVED when asked) that
  // ended at or after since_ns, newest first.
  absl::StatusOr<std::vector<v1::Run>> ListFlagged(int64_t since_ns, bool include_improvements);

  // A run's trace (of `rank`, for a distributed run): the uncompressed
  // bytes are compressed (zlib, before the write lock) and stored with
  // their size and sha256.
  absl::Status PutTrace(const std::string& run_id, const std::string& format,
                        const std::string& data, int rank = 0);
  // The info and uncompressed data; NotFound when the run has none of rank.
  absl::StatusOr<std::pair<v1::TraceInfo, std::string>> GetTrace(const std::string& run_id,
                                                                 int rank = 0);

  // How many runs each workload has stored in each state.
  struct Count {
    std::string workload;
    v1::RunState state = v1::RUN_STATE_UNSPECIFIED;
    int64_t runs = 0;
  };
  absl::StatusOr<std::vector<Count>> CountByWorkload();
  // The newest `limit` runs in `state`, newest first, without samples.
  absl::StatusOr<std::vector<v1::Run>> Newest(v1::RunState state, int limit);

  // Drops samples (with telemetry) and traces beyond the caps, oldest
  // first. Run results are always kept. Returns rows removed.
  absl::StatusOr<int64_t> Prune(const RetentionLimits& limits);

 private:
  // Runs read by a statement whose columns are the record, the samples
  // (or NULL), the run_id and optionally the telemetry (or NULL).
  absl::StatusOr<std::vector<v1::Run>> ReadRuns(const char* what, const std::string& sql,
                                                absl::FunctionRef<void(Statement&)> bind,
                                                bool include_samples);

  Database* const db_;
};

}  // namespace gpubench::storage

#endif  // GPUBENCH_STORAGE_RUN_STORE_H_
