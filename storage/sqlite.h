// The SQLite layer under the stores: a database file with one writer
// connection and a pool of read-only connections (WAL lets them read the last
// commit while a write is in progress), statements that finalize themselves,
// transactions, and SQLite's result codes as the canonical status that says
// what to do about them. Nothing here knows gpubench's tables.
#ifndef GPUBENCH_STORAGE_SQLITE_H_
#define GPUBENCH_STORAGE_SQLITE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

struct sqlite3;
struct sqlite3_stmt;

namespace gpubench::storage {

// A SQLite result code as a status: FULL is ResourceExhausted; BUSY, LOCKED
// and I/O or permission failures are Unavailable (try again, or elsewhere);
// CORRUPT and NOTADB are DataLoss; anything else is FailedPrecondition.
absl::Status SqliteStatus(int rc, absl::string_view message);

// One open connection (not owned). Errors name the file.
class Connection {
 public:
  Connection(sqlite3* db, const std::string* path) : db_(db), path_(path) {}

  // Runs one or more statements that return no rows.
  absl::Status Exec(const std::string& sql);
  // The error of the last call on this connection, as "database PATH: what: why".
  absl::Status Error(absl::string_view what) const;
  // A stored record that does not parse: DataLoss naming the file.
  absl::Status Garbled(absl::string_view what) const;
  // Rows changed by the last INSERT, UPDATE or DELETE.
  int64_t Changes() const;
  const std::string& path() const { return *path_; }
  sqlite3* raw() const { return db_; }

 private:
  sqlite3* db_;
  const std::string* path_;
};

// A prepared statement, finalized on every path. `what` names it in errors
// ("insert run"). Binding is 1-based, columns 0-based, as in SQLite.
class Statement {
 public:
  Statement(const Connection& c, absl::string_view what, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& Text(int i, const std::string& s);
  Statement& Blob(int i, const std::string& s);
  Statement& Int(int i, int64_t v);
  Statement& Real(int i, double v);

  // One step: true with a row to read, false at the end. A failed prepare
  // or step is the connection's error naming the statement.
  absl::StatusOr<bool> Step();
  // Steps once to the one row expected: NotFound(missing) when there is none.
  absl::Status One(absl::string_view missing);
  // Steps to the end: a statement that returns no rows.
  absl::Status Run();
  // Calls row() for each row until the end or row() fails. An error part
  // way is returned, never taken for the end of the data.
  absl::Status ForEach(absl::FunctionRef<absl::Status()> row);

  bool IsNull(int i) const;
  int ColumnCount() const;
  int64_t ColumnInt(int i) const;
  double ColumnReal(int i) const;
  std::string ColumnText(int i) const;
  std::string ColumnBlob(int i) const;
  // Parses a blob column into a protobuf message; Garbled naming `what`.
  template <typename Message>
  absl::Status ColumnProto(int i, absl::string_view what, Message* out) const {
    const std::string blob = ColumnBlob(i);
    if (out->ParseFromString(blob)) return absl::OkStatus();
    return connection_.Garbled(what);
  }

 private:
  const Connection& connection_;
  const std::string what_;
  sqlite3_stmt* stmt_ = nullptr;
  int prepare_rc_;
};

// A database file: one writer connection, used by one caller at a time, and
// read-only connections beside it. Thread-safe.
class Database {
 public:
  struct Options {
    std::string path;           // created if missing
    int busy_timeout_ms = 5000;  // wait this long for a lock held elsewhere
  };
  // Opens the writer connection, and no readers yet: the caller sets its
  // pragmas and migrates through Write, then calls OpenReaders.
  // FailedPrecondition naming the file when it cannot be opened.
  static absl::StatusOr<std::unique_ptr<Database>> Open(const Options& options);
  // Opens `count` read-only connections for Read.
  absl::Status OpenReaders(int count);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs body on the writer connection, one writer at a time.
  absl::Status Write(absl::FunctionRef<absl::Status(Connection&)> body)
      ABSL_LOCKS_EXCLUDED(write_mu_);
  // As Write, inside BEGIN IMMEDIATE ... COMMIT; ROLLBACK when body fails.
  // A transaction that cannot begin (the file locked elsewhere) says `what`
  // it was for.
  absl::Status Transaction(absl::string_view what,
                           absl::FunctionRef<absl::Status(Connection&)> body)
      ABSL_LOCKS_EXCLUDED(write_mu_);
  // Runs body on a read-only connection of its own for the call; waits
  // while every one is in use. Reads see the last commit and never wait
  // for a write in progress.
  absl::Status Read(absl::FunctionRef<absl::Status(Connection&)> body)
      ABSL_LOCKS_EXCLUDED(readers_mu_);

  const std::string& path() const { return path_; }

 private:
  Database(std::string path, int busy_timeout_ms)
      : path_(std::move(path)), busy_timeout_ms_(busy_timeout_ms) {}
  const std::string path_;
  const int busy_timeout_ms_;
  absl::Mutex write_mu_;
  sqlite3* writer_ ABSL_GUARDED_BY(write_mu_) = nullptr;

  absl::Mutex readers_mu_;
  std::vector<sqlite3*> free_readers_ ABSL_GUARDED_BY(readers_mu_);
  std::vector<sqlite3*> all_readers_;  // set while opening; closed with the database
};

}  // namespace gpubench::storage

#endif  // GPUBENCH_STORAGE_SQLITE_H_
