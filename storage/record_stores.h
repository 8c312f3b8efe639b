// Keyed protobuf records: hosts, schedules and uploaded models (tables
// hosts, schedules, models).
#ifndef GPUBENCH_STORAGE_RECORD_STORES_H_
#define GPUBENCH_STORAGE_RECORD_STORES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpubench/v1/job.pb.h"
#include "gpubench/v1/result.pb.h"
#include "storage/sqlite.h"

namespace gpubench::storage {

// Host facts, keyed by host_id; the daemon writes them at start-up.
class HostStore {
 public:
  explicit HostStore(Database* db) : db_(db) {}
  absl::Status Put(const v1::HostInfo& host);
  absl::StatusOr<v1::HostInfo> Get(const std::string& host_id);  // NotFound

 private:
  Database* const db_;
};

class ScheduleStore {
 public:
  explicit ScheduleStore(Database* db) : db_(db) {}
  // Assigns schedule_id when empty; returns it.
  absl::StatusOr<std::string> Insert(const v1::Schedule& schedule);
  absl::Status Update(const v1::Schedule& schedule);  // NotFound
  absl::StatusOr<std::vector<v1::Schedule>> List();   // by id
  absl::Status Delete(const std::string& schedule_id);  // NotFound

 private:
  Database* const db_;
};

// Uploaded models, keyed by sha256 (the file itself lives under the data
// directory; the store keeps its record).
class ModelStore {
 public:
  explicit ModelStore(Database* db) : db_(db) {}
  absl::Status Put(const v1::ModelInfo& model);
  absl::StatusOr<v1::ModelInfo> Get(const std::string& sha256);  // NotFound
  absl::Status Delete(const std::string& sha256);                // NotFound
  // The sum of every stored model's size_bytes.
  absl::StatusOr<int64_t> TotalBytes();

 private:
  Database* const db_;
};

}  // namespace gpubench::storage

#endif  // GPUBENCH_STORAGE_RECORD_STORES_H_
