// The SQLite store: one database file per daemon data directory, in WAL
// mode, and the stores of its table groups. Layers, bottom up:
//   sqlite.h        connections, statements, transactions, status mapping
//   schema.h        tables and migrations
//   query.h         filters as WHERE clauses, pages
//   job_store.h     jobs and their events
//   run_store.h     runs, samples, telemetry, traces, retention
//   record_stores.h hosts, schedules, models
//   store.h         opens the file and owns the stores
#ifndef GPUBENCH_STORAGE_STORE_H_
#define GPUBENCH_STORAGE_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/job_store.h"
#include "storage/record_stores.h"
#include "storage/run_store.h"
#include "storage/schema.h"
#include "storage/sqlite.h"

namespace gpubench::storage {

struct StoreOptions {
  std::string path;               // the database file; created if missing
  int busy_timeout_ms = 5000;     // wait this long for a lock held elsewhere
  int64_t max_bytes = 0;          // the file grows no larger (0: no limit); beyond,
                                  // writes fail with ResourceExhausted
  bool check_integrity = false;   // run integrity_check before anything else; a
                                  // damaged file is DataLoss saying why, left untouched
};

// Thread-safe. Writes go one at a time through one connection; reads use a
// pool of read-only connections beside it (WAL), so a read never waits for a
// write to commit.
class Store {
 public:
  // Opens (creating if needed) and migrates the database. A file that is not
  // a database, or is from a newer gpubench, fails naming the file (DataLoss
  // and FailedPrecondition); it is never overwritten. So does an existing
  // file of 0 bytes (DataLoss): a truncated store must not quietly become an
  // empty one; only a missing file is a fresh start. Open reads only the
  // header and schema (fast on a large file); IntegrityCheck() reads
  // everything.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const StoreOptions& options);
  ~Store();

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  JobStore& jobs() { return jobs_; }
  RunStore& runs() { return runs_; }
  HostStore& hosts() { return hosts_; }
  ScheduleStore& schedules() { return schedules_; }
  ModelStore& models() { return models_; }

  // PRAGMA integrity_check; "ok" or the problems found, one line.
  absl::StatusOr<std::string> IntegrityCheck();

  // Whether the file can take bytes more now: writes that many and rolls
  // them back. ResourceExhausted (full disk or max_bytes) or the store's
  // other error when it cannot; nothing is kept either way.
  absl::Status CanWrite(int64_t bytes);

  int schema_version();

 private:
  explicit Store(std::unique_ptr<Database> db);

  static constexpr int kReadConnections = 4;

  const std::unique_ptr<Database> db_;
  JobStore jobs_;
  RunStore runs_;
  HostStore hosts_;
  ScheduleStore schedules_;
  ModelStore models_;
};

}  // namespace gpubench::storage

#endif  // GPUBENCH_STORAGE_STORE_H_
