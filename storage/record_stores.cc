#include "storage/record_stores.h"

#include "absl/strings/str_cat.h"
#include "storage/schema.h"

namespace gpubench::storage {
namespace {

// sql takes (key, record blob).
absl::Status PutRecord(Database* db, const char* sql, const std::string& key,
                       const google::protobuf::Message& record) {
  return db->Write([&](Connection& c) {
    Statement s(c, "write", sql);
    s.Text(1, key).Blob(2, record.SerializeAsString());
    return s.Run();
  });
}

// sql takes (key) and selects the record; NotFound "<what> <key>".
absl::Status GetRecord(Database* db, const char* sql, const std::string& key, const char* what,
                       google::protobuf::Message* record) {
  return db->Read([&](Connection& c) -> absl::Status {
    Statement s(c, "read", sql);
    s.Text(1, key);
    if (auto st = s.One(absl::StrCat("no such ", what, ": ", key)); !st.ok()) return st;
    return s.ColumnProto(0, "garbled record", record);
  });
}

// sql changes the row of key (bound last, after `record` when given);
// NotFound "<what> <key>" when there is none.
absl::Status ChangeRecord(Database* db, const char* sql, const std::string& key,
                          const char* what, const google::protobuf::Message* record) {
  return db->Write([&](Connection& c) -> absl::Status {
    Statement s(c, absl::StrCat("change ", what), sql);
    if (record != nullptr) s.Blob(1, record->SerializeAsString());
    s.Text(record != nullptr ? 2 : 1, key);
    if (auto st = s.Run(); !st.ok()) return st;
    if (c.Changes() == 0) return absl::NotFoundError(absl::StrCat(what, " ", key));
    return absl::OkStatus();
  });
}

}  // namespace

absl::Status HostStore::Put(const v1::HostInfo& host) {
  return PutRecord(db_, "INSERT OR REPLACE INTO hosts(host_id, record) VALUES(?,?)",
                   host.host_id(), host);
}

absl::StatusOr<v1::HostInfo> HostStore::Get(const std::string& host_id) {
  v1::HostInfo host;
  if (auto s = GetRecord(db_, "SELECT record FROM hosts WHERE host_id=?", host_id, "host",
                         &host);
      !s.ok()) {
    return s;
  }
  return host;
}

absl::StatusOr<std::string> ScheduleStore::Insert(const v1::Schedule& in) {
  v1::Schedule schedule = in;
  if (schedule.schedule_id().empty()) schedule.set_schedule_id(NewId("s"));
  if (auto s = PutRecord(db_, "INSERT INTO schedules(schedule_id, record) VALUES(?,?)",
                         schedule.schedule_id(), schedule);
      !s.ok()) {
    return s;
  }
  return schedule.schedule_id();
}

absl::Status ScheduleStore::Update(const v1::Schedule& schedule) {
  return ChangeRecord(db_, "UPDATE schedules SET record=? WHERE schedule_id=?",
                      schedule.schedule_id(), "schedule", &schedule);
}

absl::Status ScheduleStore::Delete(const std::string& schedule_id) {
  return ChangeRecord(db_, "DELETE FROM schedules WHERE schedule_id=?", schedule_id,
                      "schedule", nullptr);
}

absl::StatusOr<std::vector<v1::Schedule>> ScheduleStore::List() {
  std::vector<v1::Schedule> schedules;
  auto status = db_->Read([&](Connection& c) {
    Statement s(c, "list schedules", "SELECT record FROM schedules ORDER BY schedule_id");
    return s.ForEach(
        [&] { return s.ColumnProto(0, "garbled schedule", &schedules.emplace_back()); });
  });
  if (!status.ok()) return status;
  return schedules;
}

absl::Status ModelStore::Put(const v1::ModelInfo& model) {
  return PutRecord(db_, "INSERT OR REPLACE INTO models(sha256, record) VALUES(?,?)",
                   model.sha256(), model);
}

absl::StatusOr<v1::ModelInfo> ModelStore::Get(const std::string& sha256) {
  v1::ModelInfo model;
  if (auto s = GetRecord(db_, "SELECT record FROM models WHERE sha256=?", sha256, "model",
                         &model);
      !s.ok()) {
    return s;
  }
  return model;
}

absl::Status ModelStore::Delete(const std::string& sha256) {
  return ChangeRecord(db_, "DELETE FROM models WHERE sha256=?", sha256, "model", nullptr);
}

absl::StatusOr<int64_t> ModelStore::TotalBytes() {
  int64_t total = 0;
  auto status = db_->Read([&](Connection& c) {
    Statement s(c, "model sizes", "SELECT record FROM models");
    return s.ForEach([&]() -> absl::Status {
      v1::ModelInfo model;
      if (auto st = s.ColumnProto(0, "garbled model record", &model); !st.ok()) return st;
      total += model.size_bytes();
      return absl::OkStatus();
    });
  });
  if (!status.ok()) return status;
  return total;
}

}  // namespace gpubench::storage
