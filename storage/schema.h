// gpubench's tables, the migrations that bring an older file up to this
// build's schema, and how values are written into the columns that queries
// filter on. The per-table stores (job_store.h, run_store.h,
// record_stores.h) read and write the rows.
//
// Tables (schema version 8):
//   jobs        one row per job; record: gpubench.v1.Job; submitted_by
//               repeats its submitter, for each submitter's share
//   job_events  a job's durable progress events, by sequence
//   job_plans   a job's plan (gpubench.v1.JobPlan), made at submit
//   runs        one row per run; record: gpubench.v1.Run without samples;
//               config_json: the RunConfig as JSON, for config filters
//   samples     a run's per-iteration samples (dropped by retention)
//   telemetry   a run's telemetry series (dropped with the samples)
//   traces      a run's profiler trace per rank (0: a run of one process),
//               zlib-compressed
//   hosts, schedules, models: keyed protobuf records
// A job's events, plan and runs, and a run's samples, telemetry and trace,
// go with it (ON DELETE CASCADE; the store turns foreign_keys on).
#ifndef GPUBENCH_STORAGE_SCHEMA_H_
#define GPUBENCH_STORAGE_SCHEMA_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "gpubench/v1/job.pb.h"
#include "storage/sqlite.h"

namespace gpubench::storage {

// The schema version this build writes; Migrate brings older files up to it.
inline constexpr int kSchemaVersion = 8;

// The file's schema version (PRAGMA user_version).
absl::StatusOr<int> SchemaVersion(Connection& c);

// Upgrades the file to kSchemaVersion, one transaction per version step. A
// file from a newer gpubench is FailedPrecondition naming both versions.
absl::Status Migrate(Connection& c);

// A run's config as JSON with every field present, enum names and proto
// field names, so json_extract can filter on any field (runs.config_json).
std::string ConfigJson(const v1::RunConfig& config);

// A timestamp as the integer nanoseconds the *_ns columns hold.
int64_t StoredNs(const google::protobuf::Timestamp& t);

// A new random id: prefix and 16 hex digits.
std::string NewId(const char* prefix);

}  // namespace gpubench::storage

#endif  // GPUBENCH_STORAGE_SCHEMA_H_
