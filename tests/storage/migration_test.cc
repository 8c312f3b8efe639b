// Migrations: a file written by each released schema, with data, opens at
// the current version with its data intact and answers new queries.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/spec.h"
#include "storage/store.h"
#include "tests/storage/store_test_util.h"

namespace gpubench::storage {
namespace {

// Schema version 1 exactly as gpubench 0.1 wrote it. Never edit: it stands
// for files already on disk.
constexpr char kSchemaV1[] = R"sql(
CREATE TABLE jobs (job_id TEXT PRIMARY KEY, state INTEGER NOT NULL,
  workload TEXT NOT NULL, submit_ns INTEGER NOT NULL,
  schedule_id TEXT NOT NULL DEFAULT '', record BLOB NOT NULL);
CREATE INDEX jobs_by_submit ON jobs(submit_ns DESC);
CREATE TABLE runs (run_id TEXT PRIMARY KEY,
  job_id TEXT NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
  run_index INTEGER NOT NULL, state INTEGER NOT NULL, workload TEXT NOT NULL,
  host_id TEXT NOT NULL DEFAULT '', start_ns INTEGER NOT NULL,
  throughput REAL NOT NULL, record BLOB NOT NULL, UNIQUE (job_id, run_index));
CREATE INDEX runs_by_workload_start ON runs(workload, start_ns DESC);
CREATE TABLE samples (run_id TEXT PRIMARY KEY REFERENCES runs(run_id) ON DELETE CASCADE,
  data BLOB NOT NULL);
PRAGMA user_version=1;
)sql";

// What version 2 added on top of version 1. Never edit.
constexpr char kSchemaV1ToV2[] = R"sql(
ALTER TABLE runs ADD COLUMN config_json TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN schedule_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN end_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN verdict INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_by_start ON runs(start_ns DESC, run_id DESC);
CREATE INDEX runs_by_host_start ON runs(host_id, start_ns DESC);
CREATE INDEX runs_by_schedule_config ON runs(schedule_id, config_json, start_ns DESC);
CREATE INDEX runs_by_verdict ON runs(verdict, end_ns DESC);
CREATE INDEX jobs_by_state ON jobs(state);
CREATE INDEX jobs_by_schedule ON jobs(schedule_id, submit_ns DESC);
CREATE TABLE job_events (job_id TEXT NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
  sequence INTEGER NOT NULL, record BLOB NOT NULL,
  PRIMARY KEY (job_id, sequence)) WITHOUT ROWID;
CREATE TABLE hosts (host_id TEXT PRIMARY KEY, record BLOB NOT NULL);
CREATE TABLE schedules (schedule_id TEXT PRIMARY KEY, record BLOB NOT NULL);
CREATE TABLE models (sha256 TEXT PRIMARY KEY, record BLOB NOT NULL);
CREATE TABLE traces (run_id TEXT PRIMARY KEY REFERENCES runs(run_id) ON DELETE CASCADE,
  format TEXT NOT NULL, size_bytes INTEGER NOT NULL, sha256 TEXT NOT NULL,
  created_ns INTEGER NOT NULL, data BLOB NOT NULL);
PRAGMA user_version=2;
)sql";

// What version 3 added on top of version 2. Never edit.
constexpr char kSchemaV2ToV3[] = R"sql(
CREATE TABLE telemetry (run_id TEXT PRIMARY KEY REFERENCES runs(run_id) ON DELETE CASCADE,
  data BLOB NOT NULL);
PRAGMA user_version=3;
)sql";

constexpr char kSchemaV3ToV4[] = R"sql(
CREATE INDEX runs_by_batch_size ON runs(
  json_extract(config_json, '$.batch_size'), start_ns DESC, run_id DESC);
CREATE INDEX runs_by_precision ON runs(
  json_extract(config_json, '$.precision'), start_ns DESC, run_id DESC);
DROP INDEX jobs_by_submit;
CREATE INDEX jobs_by_submit ON jobs(submit_ns DESC, job_id DESC);
PRAGMA user_version=4;
)sql";

// What version 6 added on top of version 5. Never edit.
constexpr char kSchemaV5ToV6[] = R"sql(
CREATE TABLE job_plans (job_id TEXT PRIMARY KEY REFERENCES jobs(job_id) ON DELETE CASCADE,
  data BLOB NOT NULL);
PRAGMA user_version=6;
)sql";

constexpr char kSchemaV6ToV7[] = R"sql(
ALTER TABLE jobs ADD COLUMN submitted_by TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_by_submitter ON jobs(submitted_by);
UPDATE jobs SET submitted_by = 'alice' WHERE job_id = 'jold';
PRAGMA user_version=7;
)sql";

void Exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "");
}

// Writes a version-1 job with one run (batch 32 on host h1) and its samples,
// the way gpubench 0.1 wrote them.
// From version 5 on, configs are stored with their defaults filled.
void InsertV1Rows(sqlite3* db, bool defaults_filled) {
  v1::Job job;
  job.set_job_id("jold");
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  job.set_submitted_by("alice");
  job.mutable_spec()->mutable_base()->set_workload("mlp");
  v1::Run run;
  run.set_job_id("jold");
  run.mutable_config()->set_workload("mlp");
  run.mutable_config()->set_batch_size(32);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  run.set_host_id("h1");
  run.mutable_result()->set_throughput_samples_per_s(1234);
  if (defaults_filled) FillConfigDefaults(run.mutable_config());
  v1::IterationSamples samples;
  samples.add_device_ms(0.5f);
  samples.add_device_ms(0.75f);
  sqlite3_stmt* st;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "INSERT INTO jobs VALUES('jold', ?, 'mlp', 1000, '', ?)",
                               -1, &st, nullptr),
            SQLITE_OK);
  const std::string job_blob = job.SerializeAsString();
  sqlite3_bind_int(st, 1, job.state());
  sqlite3_bind_blob(st, 2, job_blob.data(), job_blob.size(), SQLITE_TRANSIENT);
  ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);
  // A job still queued when that gpubench stopped: a sweep of two batches.
  v1::Job queued;
  queued.set_job_id("jqueued");
  queued.set_state(v1::JOB_STATE_QUEUED);
  queued.mutable_spec()->mutable_base()->set_workload("mlp");
  queued.mutable_spec()->mutable_base()->set_device("cpu");
  queued.mutable_spec()->mutable_sweep()->add_batch_size(16);
  queued.mutable_spec()->mutable_sweep()->add_batch_size(32);
  ASSERT_EQ(sqlite3_prepare_v2(db, "INSERT INTO jobs VALUES('jqueued', ?, 'mlp', 1500, '', ?)",
                               -1, &st, nullptr),
            SQLITE_OK);
  const std::string queued_blob = queued.SerializeAsString();
  sqlite3_bind_int(st, 1, queued.state());
  sqlite3_bind_blob(st, 2, queued_blob.data(), queued_blob.size(), SQLITE_TRANSIENT);
  ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "INSERT INTO runs VALUES('rold', 'jold', 0, ?, 'mlp',"
                               " 'h1', 2000, 1234, ?)",
                               -1, &st, nullptr),
            SQLITE_OK);
  const std::string run_blob = run.SerializeAsString();
  sqlite3_bind_int(st, 1, run.state());
  sqlite3_bind_blob(st, 2, run_blob.data(), run_blob.size(), SQLITE_TRANSIENT);
  ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);
  ASSERT_EQ(sqlite3_prepare_v2(db, "INSERT INTO samples VALUES('rold', ?)", -1, &st,
                               nullptr),
            SQLITE_OK);
  const std::string samples_blob = samples.SerializeAsString();
  sqlite3_bind_blob(st, 1, samples_blob.data(), samples_blob.size(), SQLITE_TRANSIENT);
  ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);
}

// A database file at schema version `version` (0: an empty file), holding
// the version-1 rows from version 1 on.
std::string OldDatabase(int version) {
  const std::string path = TempPath(absl::StrCat("schema_v", version, ".db"));
  sqlite3* db;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  // Version 0: a database with no schema yet (written once: an empty file is
  // refused, as a truncated store).
  if (version == 0) Exec(db, "CREATE TABLE scratch(x); DROP TABLE scratch;");
  if (version >= 1) {
    Exec(db, kSchemaV1);
    InsertV1Rows(db, version >= 5);
  }
  if (version >= 2) {
    Exec(db, kSchemaV1ToV2);
    // Version 2 filled config_json while migrating; do as it did.
    Exec(db, "UPDATE runs SET config_json='{\"workload\":\"mlp\",\"batch_size\":32}'");
    // A run's trace, one per run then.
    Exec(db, "INSERT INTO traces VALUES('rold', 'chrome', 3, 'sha', 2500, x'789c4b4c4a0600024d0127')");
  }
  if (version >= 3) Exec(db, kSchemaV2ToV3);
  if (version >= 4) Exec(db, kSchemaV3ToV4);
  if (version >= 5) Exec(db, "PRAGMA user_version=5;");  // 4 -> 5 rewrote records only
  if (version >= 6) {
    Exec(db, kSchemaV5ToV6);
    // Version 6 planned the job still to run while migrating; do as it did.
    v1::JobSpec spec;
    spec.mutable_base()->set_workload("mlp");
    spec.mutable_base()->set_device("cpu");
    spec.mutable_sweep()->add_batch_size(16);
    spec.mutable_sweep()->add_batch_size(32);
    auto runs = ExpandSweep(spec);
    EXPECT_TRUE(runs.ok()) << runs.status();
    v1::JobPlan plan;
    for (const v1::RunConfig& run : runs.ok() ? *runs : std::vector<v1::RunConfig>()) {
      *plan.add_runs() = run;
    }
    sqlite3_stmt* st;
    EXPECT_EQ(sqlite3_prepare_v2(db, "INSERT INTO job_plans VALUES('jqueued', ?)", -1, &st,
                                 nullptr),
              SQLITE_OK);
    const std::string blob = plan.SerializeAsString();
    sqlite3_bind_blob(st, 1, blob.data(), blob.size(), SQLITE_TRANSIENT);
    EXPECT_EQ(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
  }
  if (version >= 7) Exec(db, kSchemaV6ToV7);
  sqlite3_close(db);
  return path;
}

// Version 7 keeps each job's submitter beside its record, from the record:
// alice's job, its run and the run's samples count as hers, and deleting
// the job takes them all; jqueued (no submitter) counts as "".
void ExpectSubmitterBackfilled(Store* store) {
  auto alice = store->jobs().SubmitterBytes("alice");
  ASSERT_TRUE(alice.ok()) << alice.status();
  EXPECT_GT(*alice, 0);
  const int64_t unnamed = *store->jobs().SubmitterBytes("");
  EXPECT_GT(unnamed, 0);
  auto deleted = store->jobs().Delete("jold");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(deleted->runs, 1);
  EXPECT_EQ(deleted->bytes, *alice);
  EXPECT_EQ(*store->jobs().SubmitterBytes("alice"), 0);
  EXPECT_TRUE(absl::IsNotFound(store->runs().Get("rold", true).status()));
  EXPECT_TRUE(store->jobs().Get("jqueued").ok());
  EXPECT_EQ(*store->jobs().SubmitterBytes(""), unnamed);
}

class MigrationTest : public ::testing::TestWithParam<int> {};

TEST_P(MigrationTest, OldFileOpensAtTheCurrentVersionWithItsDataIntact) {
  const int from = GetParam();
  const std::string path = OldDatabase(from);
  {
    sqlite3* db;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st;
    ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0), from) << "the fixture is not at its version";
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  auto store = Store::Open({path});
  ASSERT_TRUE(store.ok()) << "from version " << from << ": " << store.status();
  EXPECT_EQ((*store)->schema_version(), kSchemaVersion);
  EXPECT_EQ(*(*store)->IntegrityCheck(), "ok");
  if (from >= 1) {
    auto job = (*store)->jobs().Get("jold");
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED);
    auto run = (*store)->runs().Get("rold", /*include_samples=*/true);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->result().throughput_samples_per_s(), 1234);
    // Version 5 fills each config's defaults, so old runs match new ones.
    EXPECT_EQ(run->config().params().image_size(), 32) << run->config().ShortDebugString();
    EXPECT_EQ(run->config().precision(), v1::PRECISION_FP32);
    EXPECT_EQ(run->config().device(), "auto");
    ASSERT_EQ(run->samples().device_ms_size(), 2);
    EXPECT_FLOAT_EQ(run->samples().device_ms(1), 0.75f);
    // Old runs answer the new config and host queries.
    RunFilter filter;
    filter.config_equals = {Predicate("batch_size=32")};
    filter.host_id = "h1";
    auto page = (*store)->runs().Query(filter, 0, "");
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_EQ(page->items.size(), 1u);
    EXPECT_EQ(page->items[0].run_id(), "rold");
    // Version 6 plans the jobs still to run, as a submit would have; an
    // ended job needs none.
    auto plan = (*store)->jobs().GetPlan("jqueued");
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->runs_size(), 2);
    EXPECT_EQ(plan->runs(0).batch_size(), 16);
    EXPECT_EQ(plan->runs(1).batch_size(), 32);
    EXPECT_EQ(plan->runs(1).params().image_size(), 32) << plan->runs(1).ShortDebugString();
    EXPECT_TRUE(absl::IsNotFound((*store)->jobs().GetPlan("jold").status()));
    if (from >= 2) {
      // Version 8 keeps a trace per rank: the one a run had is rank 0's.
      auto trace = (*store)->runs().GetTrace("rold");
      ASSERT_TRUE(trace.ok()) << trace.status();
      EXPECT_EQ(trace->second, "abc");
      EXPECT_EQ(trace->first.rank(), 0);
      EXPECT_TRUE(absl::IsNotFound((*store)->runs().GetTrace("rold", 1).status()));
    }
    ExpectSubmitterBackfilled(store->get());
  }
  // What the newest version added works on the migrated file.
  v1::Job job;
  job.set_submitted_by("bob");
  v1::JobPlan planned;
  planned.add_runs()->set_batch_size(7);
  const std::string job_id = *(*store)->jobs().Insert(job, planned);
  EXPECT_EQ((*store)->jobs().GetPlan(job_id)->runs(0).batch_size(), 7);
  v1::Run run;
  run.set_job_id(job_id);
  run.mutable_telemetry_series()->set_source("host");
  run.mutable_telemetry_series()->add_samples()->set_host_rss_bytes(4096);
  auto run_id = (*store)->runs().Insert(run);
  ASSERT_TRUE(run_id.ok()) << run_id.status();
  EXPECT_EQ((*store)->runs().Get(*run_id, true)->telemetry_series().samples(0).host_rss_bytes(),
            4096);
  const int64_t bobs = *(*store)->jobs().SubmitterBytes("bob");
  EXPECT_GT(bobs, static_cast<int64_t>(run.telemetry_series().ByteSizeLong()));
  auto deleted = (*store)->jobs().Delete(job_id);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(deleted->bytes, bobs);
  EXPECT_TRUE(absl::IsNotFound((*store)->runs().Get(*run_id, true).status()));
}

INSTANTIATE_TEST_SUITE_P(EveryOlderVersion, MigrationTest,
                         ::testing::Range(0, kSchemaVersion));

}  // namespace
}  // namespace gpubench::storage
