#include "storage/schema.h"

#include <random>
#include <utility>
#include <vector>

#include "absl/base/const_init.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/json_util.h"
#include "absl/synchronization/mutex.h"
#include "common/spec.h"
#include "google/protobuf/util/time_util.h"

namespace gpubench::storage {
namespace {

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
    // 4 -> 5: every run's config with its defaults filled in (no DDL; the
    // records are rewritten by BackfillRuns), so that old runs match new
    // ones field by field.
    "",
    // 5 -> 6: each job's plan, made once at submit (BackfillPlans plans the
    // jobs still to run).
    R"sql(
CREATE TABLE job_plans (
  job_id      TEXT PRIMARY KEY REFERENCES jobs(job_id) ON DELETE CASCADE,
  data        BLOB NOT NULL            -- gpubench.v1.JobPlan
);
)sql",
    // 6 -> 7: each job's submitter as a column (BackfillSubmitters copies it
    // from the record), so that what one submitter's jobs hold in the store
    // (gpubenchd --max-db-share) is summed through an index.
    R"sql(
ALTER TABLE jobs ADD COLUMN submitted_by TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_by_submitter ON jobs(submitted_by);
)sql",
    // 7 -> 8: a trace per rank of a distributed run (rank 0's, or a run of
    // one process's, as rank 0).
    R"sql(
CREATE TABLE traces_by_rank (
  run_id      TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
  rank        INTEGER NOT NULL,
  format      TEXT NOT NULL,
  size_bytes  INTEGER NOT NULL,        -- uncompressed
  sha256      TEXT NOT NULL,           -- of the uncompressed data
  created_ns  INTEGER NOT NULL,
  data        BLOB NOT NULL,           -- zlib
  PRIMARY KEY (run_id, rank)
);
INSERT INTO traces_by_rank
  SELECT run_id, 0, format, size_bytes, sha256, created_ns, data FROM traces;
DROP TABLE traces;
ALTER TABLE traces_by_rank RENAME TO traces;
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

// 1 -> 2 added columns that repeat fields of each run's record; 4 -> 5
// filled each config's defaults into the record (fill_defaults) and those
// columns.
absl::Status BackfillRuns(Connection& c, bool fill_defaults) {
  std::vector<std::pair<std::string, v1::Run>> runs;
  {
    Statement s(c, "backfill runs", "SELECT run_id, record FROM runs");
    auto scanned = s.ForEach([&]() -> absl::Status {
      v1::Run run;
      if (auto st = s.ColumnProto(1, "garbled run record", &run); !st.ok()) return st;
      runs.emplace_back(s.ColumnText(0), std::move(run));
      return absl::OkStatus();
    });
    if (!scanned.ok()) return scanned;
  }
  for (auto& [id, run] : runs) {
    if (fill_defaults) FillConfigDefaults(run.mutable_config());
    Statement s(c, "backfill runs",
                "UPDATE runs SET config_json=?, end_ns=?, verdict=?, record=? WHERE run_id=?");
    s.Text(1, ConfigJson(run.config()))
        .Int(2, StoredNs(run.end_time()))
        .Int(3, run.history().verdict())
        .Blob(4, run.SerializeAsString())
        .Text(5, id);
    if (auto st = s.Run(); !st.ok()) return st;
  }
  return absl::OkStatus();
}

// 5 -> 6: the jobs that may still run (queued, or running when the daemon
// stopped) get the plan their spec expands to; one that no longer expands
// gets none and fails when it starts, saying so.
absl::Status BackfillPlans(Connection& c) {
  std::vector<std::pair<std::string, v1::JobPlan>> plans;
  {
    Statement s(c, "backfill plans", "SELECT job_id, record FROM jobs WHERE state IN (?,?)");
    s.Int(1, v1::JOB_STATE_QUEUED).Int(2, v1::JOB_STATE_RUNNING);
    auto scanned = s.ForEach([&]() -> absl::Status {
      v1::Job job;
      if (auto st = s.ColumnProto(1, "garbled job record", &job); !st.ok()) return st;
      auto runs = ExpandSweep(job.spec());
      if (!runs.ok()) return absl::OkStatus();
      v1::JobPlan plan;
      for (v1::RunConfig& run : *runs) *plan.add_runs() = std::move(run);
      plans.emplace_back(s.ColumnText(0), std::move(plan));
      return absl::OkStatus();
    });
    if (!scanned.ok()) return scanned;
  }
  for (const auto& [id, plan] : plans) {
    Statement s(c, "backfill plans", "INSERT INTO job_plans(job_id, data) VALUES(?,?)");
    s.Text(1, id).Blob(2, plan.SerializeAsString());
    if (auto st = s.Run(); !st.ok()) return st;
  }
  return absl::OkStatus();
}

// 6 -> 7: jobs.submitted_by from each job's record (Job.submitted_by).
absl::Status BackfillSubmitters(Connection& c) {
  std::vector<std::pair<std::string, std::string>> submitters;  // job id, submitter
  {
    Statement s(c, "backfill submitters", "SELECT job_id, record FROM jobs");
    auto scanned = s.ForEach([&]() -> absl::Status {
      v1::Job job;
      if (auto st = s.ColumnProto(1, "garbled job record", &job); !st.ok()) return st;
      if (!job.submitted_by().empty()) submitters.emplace_back(s.ColumnText(0), job.submitted_by());
      return absl::OkStatus();
    });
    if (!scanned.ok()) return scanned;
  }
  for (const auto& [id, submitted_by] : submitters) {
    Statement s(c, "backfill submitters", "UPDATE jobs SET submitted_by=? WHERE job_id=?");
    s.Text(1, submitted_by).Text(2, id);
    if (auto st = s.Run(); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int> SchemaVersion(Connection& c) {
  Statement s(c, "reading user_version", "PRAGMA user_version");
  auto row = s.Step();
  if (!row.ok()) return row.status();
  if (!*row) return c.Error("reading user_version");
  return static_cast<int>(s.ColumnInt(0));
}

absl::Status Migrate(Connection& c) {
  auto version = SchemaVersion(c);
  if (!version.ok()) return version.status();
  if (*version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database ", c.path(), " has schema version ", *version,
        ", newer than this gpubench (", kSchemaVersion, ")"));
  }
  for (int v = *version; v < kSchemaVersion; ++v) {
    absl::Status s = c.Exec(absl::StrCat("BEGIN IMMEDIATE;", kMigrations[v]));
    if (s.ok() && (v + 1 == 2 || v + 1 == 5)) s = BackfillRuns(c, /*fill_defaults=*/v + 1 == 5);
    if (s.ok() && v + 1 == 6) s = BackfillPlans(c);
    if (s.ok() && v + 1 == 7) s = BackfillSubmitters(c);
    if (s.ok()) s = c.Exec(absl::StrCat("PRAGMA user_version=", v + 1, ";COMMIT;"));
    if (!s.ok()) {
      c.Exec("ROLLBACK").IgnoreError();
      return s;
    }
  }
  return absl::OkStatus();
}

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

int64_t StoredNs(const google::protobuf::Timestamp& t) {
  return google::protobuf::util::TimeUtil::TimestampToNanoseconds(t);
}

std::string NewId(const char* prefix) {
  ABSL_CONST_INIT static absl::Mutex mu(absl::kConstInit);
  absl::MutexLock lock(&mu);
  static std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("%s%016x", prefix, rng());
}

}  // namespace gpubench::storage
