#include "storage/store.h"

#include <sqlite3.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/time_util.h"

namespace gpubench::storage {
namespace {

using google::protobuf::util::TimeUtil;

// Each entry upgrades the schema from version i to i + 1.
const char* const kMigrations[] = {
    // 0 -> 1
    R"sql(
CREATE TABLE jobs (
  job_id      TEXT PRIMARY KEY,
  state       INTEGER NOT NULL,
  workload    TEXT NOT NULL,
  submit_ns   INTEGER NOT NULL,
  schedule_id TEXT NOT NULL DEFAULT '',
  record      BLOB NOT NULL            -- gpubench.v1.Job
);
CREATE INDEX jobs_by_submit ON jobs(submit_ns DESC);
CREATE TABLE runs (
  run_id      TEXT PRIMARY KEY,
  job_id      TEXT NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
  run_index   INTEGER NOT NULL,
  state       INTEGER NOT NULL,
  workload    TEXT NOT NULL,
  host_id     TEXT NOT NULL DEFAULT '',
  start_ns    INTEGER NOT NULL,
  throughput  REAL NOT NULL,
  record      BLOB NOT NULL,           -- gpubench.v1.Run without samples
  UNIQUE (job_id, run_index)
);
CREATE INDEX runs_by_workload_start ON runs(workload, start_ns DESC);
CREATE TABLE samples (
  run_id      TEXT PRIMARY KEY REFERENCES runs(run_id) ON DELETE CASCADE,
  data        BLOB NOT NULL            -- gpubench.v1.IterationSamples
);
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

std::string NewId(const char* prefix) {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  return absl::StrFormat("%s%016x", prefix, rng());
}

// Finalizes a statement on every path.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }
  void Text(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.data(), s.size(), SQLITE_TRANSIENT);
  }
  void Blob(int i, const std::string& s) {
    sqlite3_bind_blob(stmt_, i, s.data(), s.size(), SQLITE_TRANSIENT);
  }
  void Int(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Real(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  std::string ColumnBlob(int i) {
    const void* p = sqlite3_column_blob(stmt_, i);
    return std::string(static_cast<const char*>(p), sqlite3_column_bytes(stmt_, i));
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

int64_t ToNs(const google::protobuf::Timestamp& t) {
  return TimeUtil::TimestampToNanoseconds(t);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const StoreOptions& options) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(options.path.c_str(), &db,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                     SQLITE_OPEN_FULLMUTEX,
                                 nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open database ", options.path, ": ", msg));
  }
  sqlite3_busy_timeout(db, options.busy_timeout_ms);
  std::unique_ptr<Store> store(new Store(db, options.path));
  // The first statement reads the header: a file that is not a database
  // fails here, before anything is written to it.
  if (auto s = store->Exec("PRAGMA journal_mode=WAL"); !s.ok()) return s;
  if (auto s = store->Exec("PRAGMA foreign_keys=ON"); !s.ok()) return s;
  {
    Statement check(db, "PRAGMA quick_check");
    if (!check.ok() || sqlite3_step(check.get()) != SQLITE_ROW) {
      return store->Error("integrity check");
    }
    const std::string result =
        reinterpret_cast<const char*>(sqlite3_column_text(check.get(), 0));
    if (result != "ok") {
      return absl::FailedPreconditionError(absl::StrCat(
          "database ", options.path, " is corrupt: ", result,
          "; it was left untouched"));
    }
  }
  if (auto s = store->Migrate(); !s.ok()) return s;
  return store;
}

Store::Store(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

Store::~Store() { sqlite3_close(db_); }

absl::Status Store::Error(const std::string& what) {
  return absl::FailedPreconditionError(absl::StrCat(
      "database ", path_, ": ", what, ": ", sqlite3_errmsg(db_)));
}

absl::Status Store::Exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return absl::FailedPreconditionError(
        absl::StrCat("database ", path_, ": ", msg));
  }
  return absl::OkStatus();
}

int Store::schema_version() {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "PRAGMA user_version");
  return s.ok() && sqlite3_step(s.get()) == SQLITE_ROW
             ? sqlite3_column_int(s.get(), 0)
             : -1;
}

absl::Status Store::Migrate() {
  int version;
  {
    Statement s(db_, "PRAGMA user_version");
    if (!s.ok() || sqlite3_step(s.get()) != SQLITE_ROW) {
      return Error("reading user_version");
    }
    version = sqlite3_column_int(s.get(), 0);
  }
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database ", path_, " has schema version ", version,
        ", newer than this gpubench (", kSchemaVersion, ")"));
  }
  for (; version < kSchemaVersion; ++version) {
    const std::string sql = absl::StrCat(
        "BEGIN IMMEDIATE;", kMigrations[version],
        "PRAGMA user_version=", version + 1, ";COMMIT;");
    if (auto s = Exec(sql); !s.ok()) {
      Exec("ROLLBACK").IgnoreError();
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Store::InsertJob(const v1::Job& in) {
  std::lock_guard<std::mutex> lock(mu_);
  v1::Job job = in;
  if (job.job_id().empty()) job.set_job_id(NewId("j"));
  Statement s(db_,
              "INSERT INTO jobs(job_id, state, workload, submit_ns, schedule_id,"
              " record) VALUES(?,?,?,?,?,?)");
  if (!s.ok()) return Error("insert job");
  s.Text(1, job.job_id());
  s.Int(2, job.state());
  s.Text(3, job.spec().base().workload());
  s.Int(4, ToNs(job.submit_time()));
  s.Text(5, job.schedule_id());
  s.Blob(6, job.SerializeAsString());
  if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("insert job");
  return job.job_id();
}

absl::Status Store::UpdateJob(const v1::Job& job) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "UPDATE jobs SET state=?, record=? WHERE job_id=?");
  if (!s.ok()) return Error("update job");
  s.Int(1, job.state());
  s.Blob(2, job.SerializeAsString());
  s.Text(3, job.job_id());
  if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("update job");
  if (sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(absl::StrCat("job ", job.job_id()));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Job> Store::GetJob(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "SELECT record FROM jobs WHERE job_id=?");
  if (!s.ok()) return Error("get job");
  s.Text(1, job_id);
  if (sqlite3_step(s.get()) != SQLITE_ROW) {
    return absl::NotFoundError(absl::StrCat("job ", job_id));
  }
  v1::Job job;
  if (!job.ParseFromString(s.ColumnBlob(0))) return Error("garbled job record");
  return job;
}

absl::StatusOr<std::string> Store::InsertRun(const v1::Run& in) {
  std::lock_guard<std::mutex> lock(mu_);
  v1::Run run = in;
  if (run.run_id().empty()) run.set_run_id(NewId("r"));
  const std::string samples = run.samples().SerializeAsString();
  run.clear_samples();
  if (auto s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  auto fail = [&](const char* what) {
    absl::Status status = Error(what);
    Exec("ROLLBACK").IgnoreError();
    return status;
  };
  {
    Statement s(db_,
                "INSERT INTO runs(run_id, job_id, run_index, state, workload,"
                " host_id, start_ns, throughput, record)"
                " VALUES(?,?,?,?,?,?,?,?,?)");
    if (!s.ok()) return fail("insert run");
    s.Text(1, run.run_id());
    s.Text(2, run.job_id());
    s.Int(3, run.index());
    s.Int(4, run.state());
    s.Text(5, run.config().workload());
    s.Text(6, run.host_id());
    s.Int(7, ToNs(run.start_time()));
    s.Real(8, run.result().throughput_samples_per_s());
    s.Blob(9, run.SerializeAsString());
    if (sqlite3_step(s.get()) != SQLITE_DONE) return fail("insert run");
  }
  {
    Statement s(db_, "INSERT INTO samples(run_id, data) VALUES(?,?)");
    if (!s.ok()) return fail("insert samples");
    s.Text(1, run.run_id());
    s.Blob(2, samples);
    if (sqlite3_step(s.get()) != SQLITE_DONE) return fail("insert samples");
  }
  if (auto s = Exec("COMMIT"); !s.ok()) return fail("commit run");
  return run.run_id();
}

absl::StatusOr<std::vector<v1::Run>> Store::ListRuns(const std::string& job_id,
                                                     bool include_samples) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_,
              "SELECT r.record, s.data FROM runs r LEFT JOIN samples s"
              " ON s.run_id = r.run_id WHERE r.job_id=? ORDER BY r.run_index");
  if (!s.ok()) return Error("list runs");
  s.Text(1, job_id);
  std::vector<v1::Run> runs;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    v1::Run run;
    if (!run.ParseFromString(s.ColumnBlob(0))) return Error("garbled run record");
    if (include_samples && !run.mutable_samples()->ParseFromString(s.ColumnBlob(1))) {
      return Error("garbled samples");
    }
    runs.push_back(std::move(run));
  }
  if (rc != SQLITE_DONE) return Error("list runs");
  return runs;
}

}  // namespace gpubench::storage
