#include "storage/store.h"

#include <sqlite3.h>

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/clock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "common/sha256.h"

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
    // 1 -> 2: queryable run configs, events, hosts, schedules, models, traces.
    R"sql(
ALTER TABLE runs ADD COLUMN config_json TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN schedule_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN end_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN verdict INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET schedule_id =
  COALESCE((SELECT schedule_id FROM jobs WHERE jobs.job_id = runs.job_id), '');
CREATE INDEX runs_by_start ON runs(start_ns DESC, run_id DESC);
CREATE INDEX runs_by_host_start ON runs(host_id, start_ns DESC);
CREATE INDEX runs_by_schedule_config ON runs(schedule_id, config_json, start_ns DESC);
CREATE INDEX runs_by_verdict ON runs(verdict, end_ns DESC);
CREATE INDEX jobs_by_state ON jobs(state);
CREATE INDEX jobs_by_schedule ON jobs(schedule_id, submit_ns DESC);
CREATE TABLE job_events (
  job_id      TEXT NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
  sequence    INTEGER NOT NULL,
  record      BLOB NOT NULL,           -- gpubench.v1.ProgressEvent
  PRIMARY KEY (job_id, sequence)
) WITHOUT ROWID;
CREATE TABLE hosts (
  host_id     TEXT PRIMARY KEY,
  record      BLOB NOT NULL            -- gpubench.v1.HostInfo
);
CREATE TABLE schedules (
  schedule_id TEXT PRIMARY KEY,
  record      BLOB NOT NULL            -- gpubench.v1.Schedule
);
CREATE TABLE models (
  sha256      TEXT PRIMARY KEY,
  record      BLOB NOT NULL            -- gpubench.v1.ModelInfo
);
CREATE TABLE traces (
  run_id      TEXT PRIMARY KEY REFERENCES runs(run_id) ON DELETE CASCADE,
  format      TEXT NOT NULL,
  size_bytes  INTEGER NOT NULL,        -- uncompressed
  sha256      TEXT NOT NULL,           -- of the uncompressed data
  created_ns  INTEGER NOT NULL,
  data        BLOB NOT NULL            -- zlib
);
)sql",
    // 2 -> 3: telemetry series beside the samples.
    R"sql(
CREATE TABLE telemetry (
  run_id      TEXT PRIMARY KEY REFERENCES runs(run_id) ON DELETE CASCADE,
  data        BLOB NOT NULL            -- gpubench.v1.TelemetrySeries
);
)sql",
    // 3 -> 4: indexes for the config filters users sweep most, and a jobs
    // index that serves page tokens (measured in bench/store_bench.cc).
    R"sql(
CREATE INDEX runs_by_batch_size ON runs(
  json_extract(config_json, '$.batch_size'), start_ns DESC, run_id DESC);
CREATE INDEX runs_by_precision ON runs(
  json_extract(config_json, '$.precision'), start_ns DESC, run_id DESC);
DROP INDEX jobs_by_submit;
CREATE INDEX jobs_by_submit ON jobs(submit_ns DESC, job_id DESC);
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
  Statement(sqlite3* db, const std::string& sql) : Statement(db, sql.c_str()) {}
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

// A run's config as JSON with every field present, enum names and proto
// field names, so json_extract can filter on any field.
std::string ConfigJson(const v1::RunConfig& config) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(config, &json, options).ok()) {
    return "{}";
  }
  return json;
}

// Keyset page tokens: "<ns>:<id>" of the last item returned.
absl::Status ParseToken(const std::string& token, int64_t* ns, std::string* id) {
  const size_t colon = token.find(':');
  if (colon == std::string::npos || !absl::SimpleAtoi(token.substr(0, colon), ns) ||
      colon + 1 >= token.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token: \"", token, "\" is not a token this daemon issued"));
  }
  *id = token.substr(colon + 1);
  return absl::OkStatus();
}

absl::StatusOr<int> PageSize(int requested, int default_size) {
  if (requested < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: must be >= 0, got ", requested));
  }
  return requested == 0 ? default_size : std::min(requested, 1000);
}

// One bound parameter of a dynamically built query.
struct Param {
  enum Kind { kText, kInt, kReal } kind;
  std::string text;
  int64_t i = 0;
  double d = 0;
};
Param TextParam(std::string s) { return {Param::kText, std::move(s)}; }
Param IntParam(int64_t v) { return {Param::kInt, "", v}; }

// "col IN (?,?)" for a list of enum values.
template <typename E>
void InClause(const std::string& column, const std::vector<E>& values,
              std::vector<std::string>* where, std::vector<Param>* params) {
  if (values.empty()) return;
  std::string in;
  for (E v : values) {
    absl::StrAppend(&in, in.empty() ? "" : ",", "?");
    params->push_back(IntParam(static_cast<int64_t>(v)));
  }
  where->push_back(absl::StrCat(column, " IN (", in, ")"));
}

// Turns "params.model_size=small" into a json_extract condition on the
// RunConfig JSON, checked against RunConfig's fields.
absl::Status ConfigCondition(const std::string& entry, int index,
                             std::vector<std::string>* where,
                             std::vector<Param>* params) {
  const std::string name = absl::StrCat("config_equals[", index, "]");
  const size_t eq = entry.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": expected field=value, got \"", entry, "\""));
  }
  const std::string path = entry.substr(0, eq), value = entry.substr(eq + 1);
  const google::protobuf::Descriptor* message = v1::RunConfig::descriptor();
  const google::protobuf::FieldDescriptor* field = nullptr;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    if (message == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": \"", path, "\" goes inside a field that is not a message"));
    }
    field = message->FindFieldByName(std::string(part));
    if (field == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": ", message->name(), " has no field \"", std::string(part), "\""));
    }
    message = field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE
                  ? field->message_type()
                  : nullptr;
  }
  if (field->is_repeated() || message != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": \"", path, "\" is not a single value"));
  }
  Param param;
  using FD = google::protobuf::FieldDescriptor;
  switch (field->cpp_type()) {
    case FD::CPPTYPE_INT32:
    case FD::CPPTYPE_UINT32: {
      int64_t v;
      if (!absl::SimpleAtoi(value, &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": ", path, " takes an integer, got \"", value, "\""));
      }
      param = IntParam(v);
      break;
    }
    case FD::CPPTYPE_INT64:
    case FD::CPPTYPE_UINT64:
      param = TextParam(value);  // the JSON mapping writes 64-bit ints as strings
      break;
    case FD::CPPTYPE_DOUBLE:
    case FD::CPPTYPE_FLOAT: {
      double v;
      if (!absl::SimpleAtod(value, &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": ", path, " takes a number, got \"", value, "\""));
      }
      param = {Param::kReal, "", 0, v};
      break;
    }
    case FD::CPPTYPE_BOOL: {
      bool v;
      if (!absl::SimpleAtob(value, &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": ", path, " takes true or false, got \"", value, "\""));
      }
      param = IntParam(v ? 1 : 0);
      break;
    }
    case FD::CPPTYPE_ENUM: {
      const auto* e = field->enum_type()->FindValueByName(value);
      if (e == nullptr) {
        // Also the short form the CLI prints: "bf16" for PRECISION_BF16.
        const std::string prefix = absl::StrCat(
            absl::AsciiStrToUpper(field->enum_type()->name()), "_");
        std::string upper = absl::AsciiStrToUpper(value);
        e = field->enum_type()->FindValueByName(prefix + upper);
        if (e == nullptr) {
          // Enum type names are CamelCase; values use UPPER_SNAKE prefixes.
          for (int i = 0; i < field->enum_type()->value_count() && !e; ++i) {
            const auto* candidate = field->enum_type()->value(i);
            if (absl::EndsWith(candidate->name(), "_" + upper)) e = candidate;
          }
        }
      }
      if (e == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            name, ": ", path, " has no value \"", value, "\""));
      }
      param = TextParam(e->name());
      break;
    }
    default:
      param = TextParam(value);
  }
  where->push_back(absl::StrCat("json_extract(r.config_json, '$.", path, "') = ?"));
  params->push_back(std::move(param));
  return absl::OkStatus();
}

void Bind(Statement& s, const std::vector<Param>& params) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    if (p.kind == Param::kText) s.Text(i + 1, p.text);
    if (p.kind == Param::kInt) s.Int(i + 1, p.i);
    if (p.kind == Param::kReal) s.Real(i + 1, p.d);
  }
}

std::string Where(const std::vector<std::string>& where) {
  return where.empty() ? "" : absl::StrCat(" WHERE ", absl::StrJoin(where, " AND "));
}

}  // namespace

absl::StatusOr<Store::CompressedTrace> Store::CompressTrace(const std::string& format,
                                                            const std::string& data) {
  uLongf size = compressBound(data.size());
  CompressedTrace trace;
  trace.data.resize(size);
  if (compress2(reinterpret_cast<Bytef*>(trace.data.data()), &size,
                reinterpret_cast<const Bytef*>(data.data()), data.size(), 6) != Z_OK) {
    return absl::InternalError("trace compression failed");
  }
  trace.data.resize(size);
  trace.format = format;
  trace.size_bytes = data.size();
  trace.sha256 = Sha256Hex(data);
  return trace;
}

absl::Status Store::Garbled(const std::string& what) {
  return absl::DataLossError(absl::StrCat("database ", path_, ": ", what));
}

// A SQLite result code as the canonical code that says what to do about it.
static absl::Status SqliteStatus(int rc, const std::string& message) {
  switch (rc & 0xff) {  // the primary code of an extended one
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(message);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return absl::UnavailableError(message);
    default:
      return absl::FailedPreconditionError(message);
  }
}

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
  // The first statement reads the header and the schema: a file that is not
  // a database, or whose schema pages are damaged, fails here, before
  // anything is written to it.
  if (auto s = store->Exec("PRAGMA journal_mode=WAL"); !s.ok()) {
    if (!absl::IsDataLoss(s)) return s;
    return absl::DataLossError(absl::StrCat(s.message(), "; the file is damaged or not a "
                                            "gpubench database, and was left untouched"));
  }
  if (auto s = store->Exec("PRAGMA foreign_keys=ON"); !s.ok()) return s;
  // In WAL mode NORMAL still survives a crash of any process (what a killed
  // daemon or worker is); only an OS crash or power cut may lose the last
  // commits. It saves an fsync per run stored.
  if (auto s = store->Exec("PRAGMA synchronous=NORMAL"); !s.ok()) return s;
  if (options.check_integrity) {
    auto verdict = store->IntegrityCheck();
    if (!verdict.ok()) return verdict.status();
    if (*verdict != "ok") {
      return absl::DataLossError(absl::StrCat("database ", options.path,
                                              " failed integrity_check: ", *verdict,
                                              "; it was left untouched"));
    }
  }
  if (options.max_bytes > 0) {
    // max_page_count never shrinks a file: one already larger stays readable
    // and refuses to grow.
    Statement page(db, "PRAGMA page_size");
    const int64_t page_bytes =
        page.ok() && sqlite3_step(page.get()) == SQLITE_ROW ? sqlite3_column_int64(page.get(), 0)
                                                            : 4096;
    const int64_t pages = std::max<int64_t>(1, options.max_bytes / page_bytes);
    if (auto s = store->Exec(absl::StrCat("PRAGMA max_page_count=", pages)); !s.ok()) return s;
  }
  if (auto s = store->Migrate(); !s.ok()) return s;
  // Readers beside the writer: WAL lets them read the last commit while a
  // write is in progress, so reads never queue behind a run being stored.
  store->busy_timeout_ms_ = options.busy_timeout_ms;
  if (auto s = store->OpenReaders(kReadConnections); !s.ok()) return s;
  return store;
}

Store::Store(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

Store::~Store() {
  // Refreshes the planner's statistics where they went stale (cheap; the
  // SQLite documentation's advice for long-lived connections at close).
  Exec("PRAGMA optimize").IgnoreError();
  for (sqlite3* reader : all_readers_) sqlite3_close(reader);
  sqlite3_close(db_);
}

absl::Status Store::Error(sqlite3* db, const std::string& what) {
  return SqliteStatus(sqlite3_errcode(db), absl::StrCat("database ", path_, ": ", what, ": ",
                                                        sqlite3_errmsg(db)));
}

Store::Reader::Reader(Store* store) : store_(store) {
  std::unique_lock<std::mutex> lock(store_->readers_mu_);
  store_->readers_cv_.wait(lock, [&] { return !store_->readers_.empty(); });
  db_ = store_->readers_.back();
  store_->readers_.pop_back();
}

Store::Reader::~Reader() {
  {
    std::lock_guard<std::mutex> lock(store_->readers_mu_);
    store_->readers_.push_back(db_);
  }
  store_->readers_cv_.notify_one();
}

absl::Status Store::OpenReaders(int count) {
  for (int i = 0; i < count; ++i) {
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(path_.c_str(), &db,
                                   SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
      sqlite3_close(db);
      return SqliteStatus(rc, absl::StrCat("cannot open database ", path_, " to read: ", msg));
    }
    sqlite3_busy_timeout(db, busy_timeout_ms_);
    std::lock_guard<std::mutex> lock(readers_mu_);
    readers_.push_back(db);
    all_readers_.push_back(db);
  }
  return absl::OkStatus();
}

absl::Status Store::Exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return SqliteStatus(rc, absl::StrCat("database ", path_, ": ", msg));
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
    absl::Status s = Exec(absl::StrCat("BEGIN IMMEDIATE;", kMigrations[version]));
    // 1 -> 2 also fills the new run columns from each stored record.
    if (s.ok() && version + 1 == 2) s = BackfillRunColumns();
    if (s.ok()) s = Exec(absl::StrCat("PRAGMA user_version=", version + 1, ";COMMIT;"));
    if (!s.ok()) {
      Exec("ROLLBACK").IgnoreError();
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Store::BackfillRunColumns() {
  std::vector<std::pair<std::string, v1::Run>> runs;
  {
    Statement s(db_, "SELECT run_id, record FROM runs");
    if (!s.ok()) return Error("backfill runs");
    int rc;
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
      v1::Run run;
      if (!run.ParseFromString(s.ColumnBlob(1))) return Garbled("garbled run record");
      runs.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0)),
                        std::move(run));
    }
    if (rc != SQLITE_DONE) return Error("backfill runs");
  }
  for (const auto& [id, run] : runs) {
    Statement s(db_, "UPDATE runs SET config_json=?, end_ns=?, verdict=? WHERE run_id=?");
    s.Text(1, ConfigJson(run.config()));
    s.Int(2, ToNs(run.end_time()));
    s.Int(3, run.history().verdict());
    s.Text(4, id);
    if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("backfill runs");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Store::InsertJob(const v1::Job& in) {
  std::lock_guard<std::mutex> lock(mu_);
  v1::Job job = in;
  if (job.job_id().empty()) job.set_job_id(NewId("j"));
  Statement s(db_,
              "INSERT INTO jobs(job_id, state, workload, submit_ns, schedule_id,"
              " priority, record) VALUES(?,?,?,?,?,?,?)");
  if (!s.ok()) return Error("insert job");
  s.Text(1, job.job_id());
  s.Int(2, job.state());
  s.Text(3, job.spec().base().workload());
  s.Int(4, ToNs(job.submit_time()));
  s.Text(5, job.schedule_id());
  s.Int(6, job.spec().priority());
  s.Blob(7, job.SerializeAsString());
  if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("insert job");
  return job.job_id();
}

absl::Status Store::UpdateJobLocked(const v1::Job& job) {
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

absl::Status Store::UpdateJob(const v1::Job& job) {
  std::lock_guard<std::mutex> lock(mu_);
  return UpdateJobLocked(job);
}

absl::Status Store::UpdateJob(const v1::Job& job, const v1::ProgressEvent& event) {
  std::lock_guard<std::mutex> lock(mu_);
  return InTransaction([&] {
    if (auto s = UpdateJobLocked(job); !s.ok()) return s;
    return AppendEventLocked(event);
  });
}

absl::StatusOr<v1::Job> Store::GetJob(const std::string& job_id) {
  Reader reader(this);
  sqlite3* const db = reader.db();
  Statement s(db, "SELECT record FROM jobs WHERE job_id=?");
  if (!s.ok()) return Error(db, "get job");
  s.Text(1, job_id);
  if (sqlite3_step(s.get()) != SQLITE_ROW) {
    return absl::NotFoundError(absl::StrCat("job ", job_id));
  }
  v1::Job job;
  if (!job.ParseFromString(s.ColumnBlob(0))) return Garbled("garbled job record");
  return job;
}

absl::Status Store::InTransaction(const std::function<absl::Status()>& body) {
  if (auto s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  absl::Status status = body();
  if (status.ok()) status = Exec("COMMIT");
  if (!status.ok()) Exec("ROLLBACK").IgnoreError();
  return status;
}

absl::StatusOr<std::string> Store::InsertRunLocked(const v1::Run& in) {
  // A timing that is not a number would poison every statistic read later.
  const v1::IterationSamples& samples_in = in.samples();
  for (const auto& [name, values] :
       {std::pair<const char*, const google::protobuf::RepeatedField<float>*>{
            "device_ms", &samples_in.device_ms()},
        {"host_ms", &samples_in.host_ms()},
        {"data_wait_ms", &samples_in.data_wait_ms()}}) {
    for (int i = 0; i < values->size(); ++i) {
      if (!std::isfinite(values->Get(i))) {
        return absl::InvalidArgumentError(absl::StrCat(
            "run.samples.", name, "[", i, "]: not a finite number (", values->Get(i), ")"));
      }
    }
  }
  v1::Run run = in;
  if (run.run_id().empty()) run.set_run_id(NewId("r"));
  const std::string samples = run.samples().SerializeAsString();
  const std::string telemetry = run.telemetry_series().SerializeAsString();
  const bool has_telemetry = run.has_telemetry_series();
  run.clear_samples();
  run.clear_telemetry_series();
  {
    Statement s(db_,
                "INSERT INTO runs(run_id, job_id, run_index, state, workload,"
                " host_id, start_ns, throughput, record, config_json, schedule_id,"
                " end_ns, verdict)"
                " VALUES(?,?,?,?,?,?,?,?,?,?,"
                "  COALESCE((SELECT schedule_id FROM jobs WHERE job_id=?), ''),?,?)");
    if (!s.ok()) return Error("insert run");
    s.Text(1, run.run_id());
    s.Text(2, run.job_id());
    s.Int(3, run.index());
    s.Int(4, run.state());
    s.Text(5, run.config().workload());
    s.Text(6, run.host_id());
    s.Int(7, ToNs(run.start_time()));
    s.Real(8, run.result().throughput_samples_per_s());
    s.Blob(9, run.SerializeAsString());
    s.Text(10, ConfigJson(run.config()));
    s.Text(11, run.job_id());
    s.Int(12, ToNs(run.end_time()));
    s.Int(13, run.history().verdict());
    if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("insert run");
  }
  for (const char* table : {"samples", "telemetry"}) {
    const bool is_samples = table == std::string("samples");
    if (!is_samples && !has_telemetry) continue;
    Statement s(db_, absl::StrCat("INSERT INTO ", table, "(run_id, data) VALUES(?,?)"));
    if (!s.ok()) return Error(absl::StrCat("insert ", table));
    s.Text(1, run.run_id());
    s.Blob(2, is_samples ? samples : telemetry);
    if (sqlite3_step(s.get()) != SQLITE_DONE) return Error(absl::StrCat("insert ", table));
  }
  return run.run_id();
}

absl::StatusOr<std::string> Store::InsertRun(const v1::Run& run) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string id;
  absl::Status status = InTransaction([&]() -> absl::Status {
    auto inserted = InsertRunLocked(run);
    if (!inserted.ok()) return inserted.status();
    id = *inserted;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return id;
}

absl::StatusOr<std::string> Store::InsertRun(const v1::Run& run,
                                             const v1::ProgressEvent& event,
                                             const std::string& trace_json) {
  CompressedTrace trace;
  if (!trace_json.empty()) {
    auto compressed = CompressTrace("chrome", trace_json);  // before the lock
    if (!compressed.ok()) return compressed.status();
    trace = std::move(*compressed);
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::string id;
  absl::Status status = InTransaction([&]() -> absl::Status {
    auto inserted = InsertRunLocked(run);
    if (!inserted.ok()) return inserted.status();
    id = *inserted;
    // The event carries the run as stored: with its id, without samples.
    v1::ProgressEvent stored = event;
    if (stored.has_run_finished()) {
      v1::Run* r = stored.mutable_run_finished()->mutable_run();
      r->set_run_id(id);
      r->clear_samples();
      r->clear_telemetry_series();
    }
    if (!trace_json.empty()) {
      if (auto st = PutTraceLocked(id, trace); !st.ok()) return st;
    }
    return AppendEventLocked(stored);
  });
  if (!status.ok()) return status;
  return id;
}

absl::StatusOr<int64_t> Store::DeleteCancelledRuns(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  // Samples, telemetry and traces go with their run (ON DELETE CASCADE).
  Statement s(db_, "DELETE FROM runs WHERE job_id=? AND state=?");
  if (!s.ok()) return Error("delete runs");
  s.Text(1, job_id);
  s.Int(2, v1::RUN_STATE_CANCELLED);
  if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("delete runs");
  return sqlite3_changes(db_);
}

absl::StatusOr<std::vector<v1::Run>> Store::ListRuns(const std::string& job_id,
                                                     bool include_samples) {
  Reader reader(this);
  sqlite3* const db = reader.db();
  Statement s(db,
              "SELECT r.record, s.data, r.run_id, t.data FROM runs r"
              " LEFT JOIN samples s ON s.run_id = r.run_id"
              " LEFT JOIN telemetry t ON t.run_id = r.run_id WHERE r.job_id=? ORDER BY r.run_index");
  if (!s.ok()) return Error(db, "list runs");
  s.Text(1, job_id);
  std::vector<v1::Run> runs;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    auto run = ReadRun(s.get(), include_samples);
    if (!run.ok()) return run.status();
    runs.push_back(std::move(*run));
  }
  if (rc != SQLITE_DONE) return Error(db, "list runs");
  return runs;
}

// Columns: record, samples data (may be NULL), run_id, and optionally
// telemetry data (may be NULL).
absl::StatusOr<v1::Run> Store::ReadRun(sqlite3_stmt* stmt, bool include_samples) {
  v1::Run run;
  const void* p = sqlite3_column_blob(stmt, 0);
  if (!run.ParseFromArray(p, sqlite3_column_bytes(stmt, 0))) {
    return Garbled("garbled run record");
  }
  run.set_run_id(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 2)));
  if (include_samples && sqlite3_column_type(stmt, 1) != SQLITE_NULL &&
      !run.mutable_samples()->ParseFromArray(sqlite3_column_blob(stmt, 1),
                                             sqlite3_column_bytes(stmt, 1))) {
    return Garbled("garbled samples");
  }
  if (include_samples && sqlite3_column_count(stmt) > 3 &&
      sqlite3_column_type(stmt, 3) != SQLITE_NULL &&
      !run.mutable_telemetry_series()->ParseFromArray(sqlite3_column_blob(stmt, 3),
                                                      sqlite3_column_bytes(stmt, 3))) {
    return Garbled("garbled telemetry");
  }
  return run;
}

absl::StatusOr<v1::Run> Store::GetRun(const std::string& run_id, bool include_samples) {
  Reader reader(this);
  sqlite3* const db = reader.db();
  Statement s(db,
              "SELECT r.record, s.data, r.run_id, t.data FROM runs r"
              " LEFT JOIN samples s ON s.run_id = r.run_id"
              " LEFT JOIN telemetry t ON t.run_id = r.run_id WHERE r.run_id=?");
  if (!s.ok()) return Error(db, "get run");
  s.Text(1, run_id);
  if (sqlite3_step(s.get()) != SQLITE_ROW) {
    return absl::NotFoundError(absl::StrCat("run ", run_id));
  }
  return ReadRun(s.get(), include_samples);
}

absl::StatusOr<Page<v1::Job>> Store::ListJobs(const JobFilter& filter, int page_size,
                                              const std::string& page_token) {
  auto limit = PageSize(page_size, 50);
  if (!limit.ok()) return limit.status();
  std::vector<std::string> where;
  std::vector<Param> params;
  InClause("state", filter.states, &where, &params);
  if (!filter.workload.empty()) {
    where.push_back("workload = ?");
    params.push_back(TextParam(filter.workload));
  }
  if (!filter.schedule_id.empty()) {
    where.push_back("schedule_id = ?");
    params.push_back(TextParam(filter.schedule_id));
  }
  if (filter.submitted_after_ns > 0) {
    where.push_back("submit_ns >= ?");
    params.push_back(IntParam(filter.submitted_after_ns));
  }
  if (filter.submitted_before_ns > 0) {
    where.push_back("submit_ns < ?");
    params.push_back(IntParam(filter.submitted_before_ns));
  }
  if (!page_token.empty()) {
    int64_t ns;
    std::string id;
    if (auto s = ParseToken(page_token, &ns, &id); !s.ok()) return s;
    where.push_back("(submit_ns, job_id) < (?, ?)");
    params.push_back(IntParam(ns));
    params.push_back(TextParam(id));
  }
  const std::string sql =
      absl::StrCat("SELECT record, submit_ns, job_id FROM jobs", Where(where),
                   " ORDER BY submit_ns DESC, job_id DESC LIMIT ", *limit + 1);
  Reader reader(this);
  sqlite3* const db = reader.db();
  Statement s(db, sql.c_str());
  if (!s.ok()) return Error(db, "list jobs");
  Bind(s, params);
  Page<v1::Job> page;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    if (static_cast<int>(page.items.size()) == *limit) {
      const v1::Job& last = page.items.back();
      page.next_page_token =
          absl::StrCat(ToNs(last.submit_time()), ":", last.job_id());
      break;
    }
    v1::Job job;
    if (!job.ParseFromString(s.ColumnBlob(0))) return Garbled("garbled job record");
    page.items.push_back(std::move(job));
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error(db, "list jobs");
  return page;
}

absl::StatusOr<Page<v1::Run>> Store::QueryRuns(const RunFilter& filter, int page_size,
                                               const std::string& page_token) {
  auto limit = PageSize(page_size, 100);
  if (!limit.ok()) return limit.status();
  std::vector<std::string> where;
  std::vector<Param> params;
  auto equals = [&](const char* column, const std::string& value) {
    if (value.empty()) return;
    where.push_back(absl::StrCat("r.", column, " = ?"));
    params.push_back(TextParam(value));
  };
  equals("workload", filter.workload);
  equals("host_id", filter.host_id);
  equals("job_id", filter.job_id);
  equals("schedule_id", filter.schedule_id);
  InClause("r.state", filter.states, &where, &params);
  if (filter.started_after_ns > 0) {
    where.push_back("r.start_ns >= ?");
    params.push_back(IntParam(filter.started_after_ns));
  }
  if (filter.started_before_ns > 0) {
    where.push_back("r.start_ns < ?");
    params.push_back(IntParam(filter.started_before_ns));
  }
  for (size_t i = 0; i < filter.config_equals.size(); ++i) {
    if (auto s = ConfigCondition(filter.config_equals[i], i, &where, &params); !s.ok()) {
      return s;
    }
  }
  if (!page_token.empty()) {
    int64_t ns;
    std::string id;
    if (auto s = ParseToken(page_token, &ns, &id); !s.ok()) return s;
    where.push_back("(r.start_ns, r.run_id) < (?, ?)");
    params.push_back(IntParam(ns));
    params.push_back(TextParam(id));
  }
  const std::string sql = absl::StrCat(
      "SELECT r.record, NULL, r.run_id, r.start_ns FROM runs r", Where(where),
      " ORDER BY r.start_ns DESC, r.run_id DESC LIMIT ", *limit + 1);
  Reader reader(this);
  sqlite3* const db = reader.db();
  Statement s(db, sql.c_str());
  if (!s.ok()) return Error(db, "query runs");
  Bind(s, params);
  Page<v1::Run> page;
  int64_t last_ns = 0;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    if (static_cast<int>(page.items.size()) == *limit) {
      page.next_page_token = absl::StrCat(last_ns, ":", page.items.back().run_id());
      break;
    }
    auto run = ReadRun(s.get(), false);
    if (!run.ok()) return run.status();
    last_ns = sqlite3_column_int64(s.get(), 3);
    page.items.push_back(std::move(*run));
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error(db, "query runs");
  return page;
}

absl::Status Store::AppendEventLocked(const v1::ProgressEvent& event) {
  Statement s(db_, "INSERT INTO job_events(job_id, sequence, record) VALUES(?,?,?)");
  if (!s.ok()) return Error("append event");
  s.Text(1, event.job_id());
  s.Int(2, event.sequence());
  s.Blob(3, event.SerializeAsString());
  if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("append event");
  return absl::OkStatus();
}

absl::Status Store::AppendEvent(const v1::ProgressEvent& event) {
  std::lock_guard<std::mutex> lock(mu_);
  return AppendEventLocked(event);
}

absl::StatusOr<std::vector<v1::ProgressEvent>> Store::ListEvents(
    const std::string& job_id, int64_t after_sequence) {
  Reader reader(this);
  sqlite3* const db = reader.db();
  Statement s(db,
              "SELECT record FROM job_events WHERE job_id=? AND sequence>?"
              " ORDER BY sequence");
  if (!s.ok()) return Error(db, "list events");
  s.Text(1, job_id);
  s.Int(2, after_sequence);
  std::vector<v1::ProgressEvent> events;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    v1::ProgressEvent e;
    if (!e.ParseFromString(s.ColumnBlob(0))) return Garbled("garbled event");
    events.push_back(std::move(e));
  }
  if (rc != SQLITE_DONE) return Error(db, "list events");
  return events;
}

absl::StatusOr<int64_t> Store::LastSequence(const std::string& job_id) {
  Reader reader(this);
  sqlite3* const db = reader.db();
  Statement s(db, "SELECT COALESCE(MAX(sequence), 0) FROM job_events WHERE job_id=?");
  if (!s.ok()) return Error(db, "last sequence");
  s.Text(1, job_id);
  if (sqlite3_step(s.get()) != SQLITE_ROW) return Error(db, "last sequence");
  return sqlite3_column_int64(s.get(), 0);
}

absl::Status Store::PutRecord(const char* sql, const std::string& key,
                              const google::protobuf::Message& record) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, sql);
  if (!s.ok()) return Error("write");
  s.Text(1, key);
  s.Blob(2, record.SerializeAsString());
  if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("write");
  return absl::OkStatus();
}

absl::Status Store::GetRecord(const char* sql, const std::string& key, const char* what,
                              google::protobuf::Message* record) {
  Reader reader(this);
  sqlite3* const db = reader.db();
  Statement s(db, sql);
  if (!s.ok()) return Error(db, "read");
  s.Text(1, key);
  if (sqlite3_step(s.get()) != SQLITE_ROW) {
    return absl::NotFoundError(absl::StrCat(what, " ", key));
  }
  if (!record->ParseFromString(s.ColumnBlob(0))) return Garbled("garbled record");
  return absl::OkStatus();
}

absl::Status Store::PutHost(const v1::HostInfo& host) {
  return PutRecord("INSERT OR REPLACE INTO hosts(host_id, record) VALUES(?,?)",
                   host.host_id(), host);
}

absl::StatusOr<v1::HostInfo> Store::GetHost(const std::string& host_id) {
  v1::HostInfo host;
  if (auto s = GetRecord("SELECT record FROM hosts WHERE host_id=?", host_id, "host", &host);
      !s.ok()) {
    return s;
  }
  return host;
}

absl::StatusOr<std::string> Store::InsertSchedule(const v1::Schedule& in) {
  v1::Schedule schedule = in;
  if (schedule.schedule_id().empty()) schedule.set_schedule_id(NewId("s"));
  if (auto s = PutRecord("INSERT INTO schedules(schedule_id, record) VALUES(?,?)",
                         schedule.schedule_id(), schedule);
      !s.ok()) {
    return s;
  }
  return schedule.schedule_id();
}

absl::Status Store::UpdateSchedule(const v1::Schedule& schedule) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "UPDATE schedules SET record=? WHERE schedule_id=?");
  if (!s.ok()) return Error("update schedule");
  s.Blob(1, schedule.SerializeAsString());
  s.Text(2, schedule.schedule_id());
  if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("update schedule");
  if (sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(absl::StrCat("schedule ", schedule.schedule_id()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::Schedule>> Store::ListSchedules() {
  Reader reader(this);
  sqlite3* const db = reader.db();
  Statement s(db, "SELECT record FROM schedules ORDER BY schedule_id");
  if (!s.ok()) return Error(db, "list schedules");
  std::vector<v1::Schedule> schedules;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    v1::Schedule schedule;
    if (!schedule.ParseFromString(s.ColumnBlob(0))) return Garbled("garbled schedule");
    schedules.push_back(std::move(schedule));
  }
  if (rc != SQLITE_DONE) return Error(db, "list schedules");
  return schedules;
}

absl::Status Store::DeleteSchedule(const std::string& schedule_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "DELETE FROM schedules WHERE schedule_id=?");
  if (!s.ok()) return Error("delete schedule");
  s.Text(1, schedule_id);
  if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("delete schedule");
  if (sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(absl::StrCat("schedule ", schedule_id));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::Run>> Store::ScheduleHistory(
    const std::string& schedule_id, const v1::RunConfig& config, int limit,
    const std::string& exclude_job_id) {
  Reader reader(this);
  sqlite3* const db = reader.db();
  Statement s(db,
              "SELECT r.record, NULL, r.run_id FROM runs r"
              " WHERE r.schedule_id=? AND r.config_json=? AND r.state=? AND r.job_id<>?"
              " ORDER BY r.start_ns DESC LIMIT ?");
  if (!s.ok()) return Error(db, "schedule history");
  s.Text(1, schedule_id);
  s.Text(2, ConfigJson(config));
  s.Int(3, v1::RUN_STATE_SUCCEEDED);
  s.Text(4, exclude_job_id);
  s.Int(5, limit);
  std::vector<v1::Run> runs;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    auto run = ReadRun(s.get(), false);
    if (!run.ok()) return run.status();
    runs.push_back(std::move(*run));
  }
  if (rc != SQLITE_DONE) return Error(db, "list runs");
  return runs;
}

absl::Status Store::SetRunHistory(const std::string& run_id,
                                  const v1::HistoryComparison& history) {
  std::lock_guard<std::mutex> lock(mu_);
  return InTransaction([&]() -> absl::Status {
    v1::Run run;
    {
      Statement s(db_, "SELECT record FROM runs WHERE run_id=?");
      s.Text(1, run_id);
      if (sqlite3_step(s.get()) != SQLITE_ROW) {
        return absl::NotFoundError(absl::StrCat("run ", run_id));
      }
      if (!run.ParseFromString(s.ColumnBlob(0))) return Garbled("garbled run record");
    }
    *run.mutable_history() = history;
    Statement s(db_, "UPDATE runs SET record=?, verdict=? WHERE run_id=?");
    s.Blob(1, run.SerializeAsString());
    s.Int(2, history.verdict());
    s.Text(3, run_id);
    if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("set run history");
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<v1::Run>> Store::ListFlaggedRuns(int64_t since_ns,
                                                            bool include_improvements) {
  Reader reader(this);
  sqlite3* const db = reader.db();
  Statement s(db,
              "SELECT r.record, NULL, r.run_id FROM runs r"
              " WHERE r.verdict IN (?, ?) AND r.end_ns >= ? ORDER BY r.end_ns DESC");
  if (!s.ok()) return Error(db, "list flagged runs");
  s.Int(1, v1::VERDICT_REGRESSED);
  s.Int(2, include_improvements ? v1::VERDICT_IMPROVED : v1::VERDICT_REGRESSED);
  s.Int(3, since_ns);
  std::vector<v1::Run> runs;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    auto run = ReadRun(s.get(), false);
    if (!run.ok()) return run.status();
    runs.push_back(std::move(*run));
  }
  if (rc != SQLITE_DONE) return Error(db, "list runs");
  return runs;
}

absl::Status Store::PutModel(const v1::ModelInfo& model) {
  return PutRecord("INSERT OR REPLACE INTO models(sha256, record) VALUES(?,?)",
                   model.sha256(), model);
}

absl::StatusOr<v1::ModelInfo> Store::GetModel(const std::string& sha256) {
  v1::ModelInfo model;
  if (auto s = GetRecord("SELECT record FROM models WHERE sha256=?", sha256, "model", &model);
      !s.ok()) {
    return s;
  }
  return model;
}

absl::Status Store::DeleteModel(const std::string& sha256) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "DELETE FROM models WHERE sha256=?");
  if (!s.ok()) return Error("delete model");
  s.Text(1, sha256);
  if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("delete model");
  if (sqlite3_changes(db_) == 0) return absl::NotFoundError(absl::StrCat("model ", sha256));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Store::TotalModelBytes() {
  Reader reader(this);
  sqlite3* const db = reader.db();
  int64_t total = 0;
  Statement s(db, "SELECT record FROM models");
  if (!s.ok()) return Error(db, "model sizes");
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    v1::ModelInfo model;
    if (!model.ParseFromString(s.ColumnBlob(0))) return Garbled("garbled model record");
    total += model.size_bytes();
  }
  if (rc != SQLITE_DONE) return Error(db, "model sizes");
  return total;
}

absl::Status Store::PutTrace(const std::string& run_id, const std::string& format,
                             const std::string& data) {
  auto trace = CompressTrace(format, data);  // before the lock: zlib is the slow part
  if (!trace.ok()) return trace.status();
  std::lock_guard<std::mutex> lock(mu_);
  return PutTraceLocked(run_id, *trace);
}

absl::Status Store::PutTraceLocked(const std::string& run_id, const CompressedTrace& trace) {
  Statement s(db_,
              "INSERT OR REPLACE INTO traces(run_id, format, size_bytes, sha256,"
              " created_ns, data) VALUES(?,?,?,?,?,?)");
  if (!s.ok()) return Error("put trace");
  s.Text(1, run_id);
  s.Text(2, trace.format);
  s.Int(3, trace.size_bytes);
  s.Text(4, trace.sha256);
  s.Int(5, ToNs(NowTimestamp()));
  s.Blob(6, trace.data);
  if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("put trace");
  return absl::OkStatus();
}

absl::StatusOr<std::pair<v1::TraceInfo, std::string>> Store::GetTrace(
    const std::string& run_id) {
  Reader reader(this);
  sqlite3* const db = reader.db();
  Statement s(db, "SELECT format, size_bytes, sha256, data FROM traces WHERE run_id=?");
  if (!s.ok()) return Error(db, "get trace");
  s.Text(1, run_id);
  if (sqlite3_step(s.get()) != SQLITE_ROW) {
    return absl::NotFoundError(absl::StrCat("run ", run_id, " has no trace"));
  }
  v1::TraceInfo info;
  info.set_run_id(run_id);
  info.set_format(reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0)));
  info.set_size_bytes(sqlite3_column_int64(s.get(), 1));
  info.set_sha256(reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 2)));
  const std::string compressed = s.ColumnBlob(3);
  info.set_compressed_size_bytes(compressed.size());
  std::string data(info.size_bytes(), '\0');
  uLongf size = data.size();
  if (uncompress(reinterpret_cast<Bytef*>(data.data()), &size,
                 reinterpret_cast<const Bytef*>(compressed.data()),
                 compressed.size()) != Z_OK ||
      size != data.size()) {
    return Garbled(absl::StrCat("trace of run ", run_id, " does not decompress"));
  }
  return std::make_pair(info, std::move(data));
}

absl::StatusOr<int64_t> Store::Prune(const RetentionLimits& limits) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t removed = 0;
  absl::Status status = InTransaction([&]() -> absl::Status {
    // A run's telemetry series goes with its samples. Starting from the
    // kept runs (few) rather than the dropped ones (many) keeps a prune
    // with nothing to do cheap; it runs after every job.
    for (const char* table : {"samples", "telemetry"}) {
      if (limits.max_runs_with_samples <= 0) break;
      Statement s(db_, absl::StrCat("DELETE FROM ", table,
                                    " WHERE run_id NOT IN (SELECT run_id FROM runs"
                                    " WHERE run_id IS NOT NULL"
                                    " ORDER BY start_ns DESC, run_id DESC LIMIT ?)"));
      s.Int(1, limits.max_runs_with_samples);
      if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("prune samples");
      removed += sqlite3_changes(db_);
    }
    if (limits.max_trace_bytes > 0) {
      std::vector<std::string> drop;
      {
        Statement s(db_,
                    "SELECT run_id, length(data) FROM traces ORDER BY created_ns DESC");
        int64_t total = 0;
        int rc;
        while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
          total += sqlite3_column_int64(s.get(), 1);
          if (total > limits.max_trace_bytes) {
            drop.push_back(reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0)));
          }
        }
        if (rc != SQLITE_DONE) return Error("prune traces");
      }
      for (const std::string& id : drop) {
        Statement s(db_, "DELETE FROM traces WHERE run_id=?");
        s.Text(1, id);
        if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("prune traces");
        removed += sqlite3_changes(db_);
      }
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return removed;
}

absl::Status Store::CanWrite(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  absl::Status status;
  {
    Statement s(db_, "INSERT INTO hosts(host_id, record) VALUES('\x01probe', zeroblob(?))");
    if (!s.ok()) {
      status = Error("write probe");
    } else {
      s.Int(1, bytes);
      if (sqlite3_step(s.get()) != SQLITE_DONE) status = Error("write probe");
    }
  }
  Exec("ROLLBACK").IgnoreError();
  return status;
}

absl::StatusOr<std::string> Store::IntegrityCheck() {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "PRAGMA integrity_check");
  if (!s.ok()) return Error("integrity_check");
  std::vector<std::string> lines;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(s.get(), 0);
    // One line per problem, for a log line: SQLite may put newlines in one.
    lines.push_back(absl::StrReplaceAll(text ? reinterpret_cast<const char*>(text) : "",
                                        {{"\n", " "}}));
  }
  // A page too damaged to walk ends the check with an error, not a row.
  if (rc != SQLITE_DONE) lines.push_back(sqlite3_errmsg(db_));
  if (lines.empty()) lines.push_back("integrity_check returned nothing");
  return absl::StrJoin(lines, "; ");
}

}  // namespace gpubench::storage
