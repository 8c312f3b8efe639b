// The SQLite store: jobs, runs with their results, and per-iteration samples.
// One file per daemon (or per local CLI data directory), in WAL mode.
#ifndef GPUBENCH_STORAGE_STORE_H_
#define GPUBENCH_STORAGE_STORE_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpubench/v1/job.pb.h"
#include "gpubench/v1/result.pb.h"

struct sqlite3;

namespace gpubench::storage {

struct StoreOptions {
  std::string path;               // the database file; created if missing
  int busy_timeout_ms = 5000;     // wait this long for a lock held elsewhere
};

// The schema version this build writes; Open migrates older files up to it.
inline constexpr int kSchemaVersion = 1;

// Thread-safe: every call holds the store's mutex.
class Store {
 public:
  // Opens (creating if needed) and migrates the database. A file that is not
  // a database, is corrupt, or is from a newer gpubench fails with
  // FailedPrecondition naming the file; it is never overwritten.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const StoreOptions& options);
  ~Store();

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Inserts a job; assigns job_id when empty. Returns the id.
  absl::StatusOr<std::string> InsertJob(const v1::Job& job);
  // Replaces a job's stored state and record.
  absl::Status UpdateJob(const v1::Job& job);
  absl::StatusOr<v1::Job> GetJob(const std::string& job_id);

  // Stores a run with its result and samples in one transaction; assigns
  // run_id when empty. Returns the id.
  absl::StatusOr<std::string> InsertRun(const v1::Run& run);
  // The runs of a job in sweep order; samples only when asked for.
  absl::StatusOr<std::vector<v1::Run>> ListRuns(const std::string& job_id,
                                                bool include_samples);

  int schema_version();

 private:
  explicit Store(sqlite3* db, std::string path);
  absl::Status Exec(const std::string& sql);
  absl::Status Migrate();
  absl::Status Error(const std::string& what);

  std::mutex mu_;
  sqlite3* const db_;
  const std::string path_;
};

}  // namespace gpubench::storage

#endif  // GPUBENCH_STORAGE_STORE_H_
