// The SQLite store: jobs, runs with their results, and per-iteration samples.
// One file per daemon (or per local CLI data directory), in WAL mode.
#ifndef GPUBENCH_STORAGE_STORE_H_
#define GPUBENCH_STORAGE_STORE_H_

#include <functional>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpubench/v1/job.pb.h"
#include "gpubench/v1/result.pb.h"

struct sqlite3;
struct sqlite3_stmt;

namespace gpubench::storage {

struct StoreOptions {
  std::string path;               // the database file; created if missing
  int busy_timeout_ms = 5000;     // wait this long for a lock held elsewhere
  int64_t max_bytes = 0;          // the file grows no larger (0: no limit); beyond,
                                  // writes fail with ResourceExhausted
  bool check_integrity = false;   // run integrity_check before anything else; a
                                  // damaged file is DataLoss saying why, left untouched
};

// The schema version this build writes; Open migrates older files up to it.
inline constexpr int kSchemaVersion = 4;

// ListJobs filter; empty or zero fields match everything.
struct JobFilter {
  std::vector<v1::JobState> states;
  std::string workload;       // the spec's base workload
  std::string schedule_id;
  int64_t submitted_after_ns = 0;   // inclusive
  int64_t submitted_before_ns = 0;  // exclusive
};

// QueryRuns filter; empty or zero fields match everything.
struct RunFilter {
  std::string workload;
  // "field=value" on the run's RunConfig, protobuf field names, nested with
  // dots: "batch_size=32", "precision=PRECISION_BF16",
  // "params.model_size=small", "channels_last=true". An unknown field is
  // InvalidArgument naming it.
  std::vector<std::string> config_equals;
  std::string host_id;
  std::string job_id;
  std::string schedule_id;  // runs of jobs created by this schedule
  std::vector<v1::RunState> states;
  int64_t started_after_ns = 0;   // inclusive
  int64_t started_before_ns = 0;  // exclusive
};

// One page of a listing. next_page_token is empty on the last page.
template <typename T>
struct Page {
  std::vector<T> items;
  std::string next_page_token;
};

// Caps applied by Store::Prune; 0 means no cap.
struct RetentionLimits {
  int64_t max_runs_with_samples = 0;  // keep samples (and telemetry) of the newest N runs
  int64_t max_trace_bytes = 0;        // keep the newest traces within N bytes
};

// Thread-safe. Writes go one at a time through one connection; reads use a
// pool of read-only connections beside it (WAL), so a read never waits for a
// write to commit.
class Store {
 public:
  // Opens (creating if needed) and migrates the database. A file that is not
  // a database, or is from a newer gpubench, fails with FailedPrecondition
  // naming the file; it is never overwritten. Open reads only the header and
  // schema (fast on a large file); IntegrityCheck() reads everything.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const StoreOptions& options);
  ~Store();

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Inserts a job; assigns job_id when empty. Returns the id.
  absl::StatusOr<std::string> InsertJob(const v1::Job& job);
  // Replaces a job's stored state and record. NotFound for an unknown id.
  absl::Status UpdateJob(const v1::Job& job);
  absl::StatusOr<v1::Job> GetJob(const std::string& job_id);

  // Stores a run with its result, samples and telemetry series in one
  // transaction; assigns run_id when empty. Returns the id.
  absl::StatusOr<std::string> InsertRun(const v1::Run& run);
  // The runs of a job in sweep order; samples and telemetry series only when
  // asked for.
  absl::StatusOr<std::vector<v1::Run>> ListRuns(const std::string& job_id,
                                                bool include_samples);
  // Deletes a job's runs that ended cancelled (with their samples, telemetry
  // and traces), so that a resumed job runs those sweep points again.
  // Returns how many went.
  absl::StatusOr<int64_t> DeleteCancelledRuns(const std::string& job_id);

  // Jobs newest first (submit time, then id). page_size 0 means 50; at most
  // 1000. A page_token from a previous page; a garbled one is
  // InvalidArgument naming "page_token".
  absl::StatusOr<Page<v1::Job>> ListJobs(const JobFilter& filter,
                                         int page_size,
                                         const std::string& page_token);

  // One run; NotFound for an unknown id.
  absl::StatusOr<v1::Run> GetRun(const std::string& run_id, bool include_samples);

  // Runs newest first (start time, then id), without samples. page_size 0
  // means 100; at most 1000.
  absl::StatusOr<Page<v1::Run>> QueryRuns(const RunFilter& filter,
                                          int page_size,
                                          const std::string& page_token);

  // Durable progress events of a job (state changes, run started, run
  // finished; not per-iteration progress), for WatchJob after a restart.
  // UpdateJob and InsertRun take the event that goes with them, so the two
  // land in one transaction.
  absl::Status UpdateJob(const v1::Job& job, const v1::ProgressEvent& event);
  // trace_json, when not empty, is the run's Chrome trace, stored (as
  // PutTrace does) in the same transaction.
  absl::StatusOr<std::string> InsertRun(const v1::Run& run,
                                        const v1::ProgressEvent& event,
                                        const std::string& trace_json = "");
  absl::Status AppendEvent(const v1::ProgressEvent& event);
  // Events with sequence > after_sequence, in order.
  absl::StatusOr<std::vector<v1::ProgressEvent>> ListEvents(
      const std::string& job_id, int64_t after_sequence);
  // Highest stored sequence of a job; 0 when it has none.
  absl::StatusOr<int64_t> LastSequence(const std::string& job_id);

  // Host facts, keyed by host_id; the daemon writes them at start-up.
  absl::Status PutHost(const v1::HostInfo& host);
  absl::StatusOr<v1::HostInfo> GetHost(const std::string& host_id);

  // Schedules. InsertSchedule assigns schedule_id when empty.
  absl::StatusOr<std::string> InsertSchedule(const v1::Schedule& schedule);
  absl::Status UpdateSchedule(const v1::Schedule& schedule);  // NotFound
  absl::StatusOr<std::vector<v1::Schedule>> ListSchedules();
  absl::Status DeleteSchedule(const std::string& schedule_id);  // NotFound

  // The last `limit` succeeded runs of a schedule's jobs with the same
  // config as `config` (every RunConfig field equal), newest first, without
  // samples; runs of job `exclude_job_id` are left out.
  absl::StatusOr<std::vector<v1::Run>> ScheduleHistory(
      const std::string& schedule_id, const v1::RunConfig& config, int limit,
      const std::string& exclude_job_id);
  // Stores a run's HistoryComparison (sets Run.history).
  absl::Status SetRunHistory(const std::string& run_id,
                             const v1::HistoryComparison& history);
  // Runs whose history verdict is REGRESSED (and IMPROVED when asked) that
  // ended at or after since_ns, newest first.
  absl::StatusOr<std::vector<v1::Run>> ListFlaggedRuns(int64_t since_ns,
                                                       bool include_improvements);

  // Uploaded models, keyed by sha256 (the file itself lives under the data
  // directory; the store keeps its record).
  absl::Status PutModel(const v1::ModelInfo& model);
  absl::StatusOr<v1::ModelInfo> GetModel(const std::string& sha256);  // NotFound
  absl::Status DeleteModel(const std::string& sha256);  // NotFound when absent
  // The sum of every stored model's size_bytes.
  absl::StatusOr<int64_t> TotalModelBytes();

  // A run's trace: the uncompressed bytes are compressed (zlib) and stored
  // with info (size and sha256 of the uncompressed data, filled in here).
  absl::Status PutTrace(const std::string& run_id, const std::string& format,
                        const std::string& data);
  // The info and uncompressed data; NotFound when the run has none.
  absl::StatusOr<std::pair<v1::TraceInfo, std::string>> GetTrace(
      const std::string& run_id);

  // Applies retention: drops samples and traces beyond the caps, oldest
  // first. Run results are always kept. Returns rows removed.
  absl::StatusOr<int64_t> Prune(const RetentionLimits& limits);

  // PRAGMA integrity_check; "ok" or the problems found.
  absl::StatusOr<std::string> IntegrityCheck();

  // Whether the file can take bytes more now: writes that many and rolls
  // them back. ResourceExhausted (full disk or max_bytes) or the store's
  // other error when it cannot; nothing is kept either way.
  absl::Status CanWrite(int64_t bytes);

  int schema_version();

 private:
  explicit Store(sqlite3* db, std::string path);
  absl::Status Exec(const std::string& sql);
  absl::Status Migrate();
  absl::Status BackfillRunColumns();
  // The error of the last call on db (the writer's by default), as the
  // canonical code that says what to do about it.
  absl::Status Error(const std::string& what) { return Error(db_, what); }
  absl::Status Error(sqlite3* db, const std::string& what);
  // A record that does not parse: DataLoss naming it.
  absl::Status Garbled(const std::string& what);
  // BEGIN IMMEDIATE; body; COMMIT, or ROLLBACK when body fails. Requires mu_.
  absl::Status InTransaction(const std::function<absl::Status()>& body);
  // The Locked helpers require mu_ and run inside the caller's transaction.
  absl::Status UpdateJobLocked(const v1::Job& job);
  absl::StatusOr<std::string> InsertRunLocked(const v1::Run& run);
  absl::Status AppendEventLocked(const v1::ProgressEvent& event);
  // A trace ready to store: compressed (zlib) outside the lock.
  struct CompressedTrace {
    std::string format;
    int64_t size_bytes = 0;  // uncompressed
    std::string sha256;      // of the uncompressed data
    std::string data;        // compressed
  };
  static absl::StatusOr<CompressedTrace> CompressTrace(const std::string& format,
                                                       const std::string& data);
  absl::Status PutTraceLocked(const std::string& run_id, const CompressedTrace& trace);
  absl::StatusOr<v1::Run> ReadRun(sqlite3_stmt* stmt, bool include_samples);
  // A keyed protobuf record: sql takes (key, blob) or (key) and selects it.
  absl::Status PutRecord(const char* sql, const std::string& key,
                         const google::protobuf::Message& record);
  absl::Status GetRecord(const char* sql, const std::string& key, const char* what,
                         google::protobuf::Message* record);

  // A read-only connection from the pool, held for one call; waits while
  // every one is in use.
  class Reader {
   public:
    explicit Reader(Store* store);
    ~Reader();
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;
    sqlite3* db() const { return db_; }

   private:
    Store* const store_;
    sqlite3* db_;
  };
  static constexpr int kReadConnections = 4;
  absl::Status OpenReaders(int count);

  std::mutex mu_;  // the writer connection: every write, one at a time
  sqlite3* const db_;
  const std::string path_;
  int busy_timeout_ms_ = 5000;

  std::mutex readers_mu_;
  std::condition_variable readers_cv_;
  std::vector<sqlite3*> readers_;      // free read connections
  std::vector<sqlite3*> all_readers_;  // closed with the store
};

}  // namespace gpubench::storage

#endif  // GPUBENCH_STORAGE_STORE_H_
