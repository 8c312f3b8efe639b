#include "storage/sqlite.h"

#include <sqlite3.h>

#include "absl/strings/str_cat.h"

namespace gpubench::storage {

absl::Status SqliteStatus(int rc, absl::string_view message) {
  switch (rc & 0xff) {  // the primary code of an extended one
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(message);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return absl::UnavailableError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    default:
      return absl::FailedPreconditionError(message);
  }
}

// ------------------------------------------------------------- Connection

absl::Status Connection::Exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return absl::OkStatus();
  const std::string msg = err ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return SqliteStatus(rc, absl::StrCat("database ", *path_, ": ", msg));
}

absl::Status Connection::Error(absl::string_view what) const {
  return SqliteStatus(sqlite3_errcode(db_), absl::StrCat("database ", *path_, ": ", what,
                                                         ": ", sqlite3_errmsg(db_)));
}

absl::Status Connection::Garbled(absl::string_view what) const {
  return absl::DataLossError(absl::StrCat("database ", *path_, ": ", what));
}

int64_t Connection::Changes() const { return sqlite3_changes(db_); }

// -------------------------------------------------------------- Statement

Statement::Statement(const Connection& c, absl::string_view what, const std::string& sql)
    : connection_(c), what_(what) {
  prepare_rc_ = sqlite3_prepare_v2(c.raw(), sql.c_str(), -1, &stmt_, nullptr);
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::Text(int i, const std::string& s) {
  sqlite3_bind_text(stmt_, i, s.data(), s.size(), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::Blob(int i, const std::string& s) {
  sqlite3_bind_blob(stmt_, i, s.data(), s.size(), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::Int(int i, int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}

Statement& Statement::Real(int i, double v) {
  sqlite3_bind_double(stmt_, i, v);
  return *this;
}

absl::StatusOr<bool> Statement::Step() {
  if (prepare_rc_ != SQLITE_OK) return connection_.Error(what_);
  switch (sqlite3_step(stmt_)) {
    case SQLITE_ROW:
      return true;
    case SQLITE_DONE:
      return false;
    default:
      return connection_.Error(what_);
  }
}

absl::Status Statement::One(absl::string_view missing) {
  auto row = Step();
  if (!row.ok()) return row.status();
  return *row ? absl::OkStatus() : absl::NotFoundError(missing);
}

absl::Status Statement::Run() {
  for (;;) {
    auto row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
  }
}

absl::Status Statement::ForEach(absl::FunctionRef<absl::Status()> row) {
  for (;;) {
    auto more = Step();
    if (!more.ok()) return more.status();
    if (!*more) return absl::OkStatus();
    if (auto s = row(); !s.ok()) return s;
  }
}

bool Statement::IsNull(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }

int Statement::ColumnCount() const { return sqlite3_column_count(stmt_); }

int64_t Statement::ColumnInt(int i) const { return sqlite3_column_int64(stmt_, i); }

double Statement::ColumnReal(int i) const { return sqlite3_column_double(stmt_, i); }

std::string Statement::ColumnText(int i) const {
  const unsigned char* text = sqlite3_column_text(stmt_, i);
  return text ? std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt_, i))
              : std::string();
}

std::string Statement::ColumnBlob(int i) const {
  const void* p = sqlite3_column_blob(stmt_, i);
  return p ? std::string(static_cast<const char*>(p), sqlite3_column_bytes(stmt_, i))
           : std::string();
}

// --------------------------------------------------------------- Database

namespace {

absl::StatusOr<sqlite3*> OpenConnection(const std::string& path, int flags,
                                        const char* purpose) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return SqliteStatus(rc, absl::StrCat("cannot open database ", path, purpose, ": ", msg));
  }
  return db;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const Options& options) {
  auto writer = OpenConnection(
      options.path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, "");
  if (!writer.ok()) {
    // A file that cannot be opened at all is the operator's to fix.
    return absl::FailedPreconditionError(writer.status().message());
  }
  sqlite3_busy_timeout(*writer, options.busy_timeout_ms);
  std::unique_ptr<Database> db(new Database(options.path, options.busy_timeout_ms));
  {
    absl::MutexLock lock(&db->write_mu_);
    db->writer_ = *writer;
  }
  return db;
}

absl::Status Database::OpenReaders(int count) {
  for (int i = 0; i < count; ++i) {
    auto reader = OpenConnection(path_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, " to read");
    if (!reader.ok()) return reader.status();
    sqlite3_busy_timeout(*reader, busy_timeout_ms_);
    absl::MutexLock lock(&readers_mu_);
    free_readers_.push_back(*reader);
    all_readers_.push_back(*reader);
  }
  return absl::OkStatus();
}

Database::~Database() {
  for (sqlite3* reader : all_readers_) sqlite3_close(reader);
  absl::MutexLock lock(&write_mu_);
  sqlite3_close(writer_);
}

absl::Status Database::Write(absl::FunctionRef<absl::Status(Connection&)> body) {
  absl::MutexLock lock(&write_mu_);
  Connection c(writer_, &path_);
  return body(c);
}

absl::Status Database::Transaction(absl::string_view what,
                                   absl::FunctionRef<absl::Status(Connection&)> body) {
  absl::MutexLock lock(&write_mu_);
  Connection c(writer_, &path_);
  if (auto s = c.Exec("BEGIN IMMEDIATE"); !s.ok()) return c.Error(what);
  absl::Status status = body(c);
  if (status.ok()) status = c.Exec("COMMIT");
  if (!status.ok()) c.Exec("ROLLBACK").IgnoreError();
  return status;
}

absl::Status Database::Read(absl::FunctionRef<absl::Status(Connection&)> body) {
  sqlite3* db;
  {
    absl::MutexLock lock(&readers_mu_);
    readers_mu_.Await(absl::Condition(
        +[](std::vector<sqlite3*>* free) { return !free->empty(); }, &free_readers_));
    db = free_readers_.back();
    free_readers_.pop_back();
  }
  Connection c(db, &path_);
  absl::Status status = body(c);
  absl::MutexLock lock(&readers_mu_);
  free_readers_.push_back(db);
  return status;
}

}  // namespace gpubench::storage
