#include "storage/job_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/schema.h"

namespace gpubench::storage {
namespace {

// The bytes that the jobs matching jobs_where (a condition on jobs j whose
// one parameter is ?1) hold in every table that keeps something of theirs.
std::string StoredBytesSql(const std::string& jobs_where) {
  struct Part {
    const char* table;
    const char* bytes;  // of one row x
    bool of_run;        // a run's row (else a job's)
  };
  constexpr Part kParts[] = {
      {"job_events", "length(x.record)", false},
      {"job_plans", "length(x.data)", false},
      {"runs", "length(x.record) + length(CAST(x.config_json AS BLOB))", false},
      {"samples", "length(x.data)", true},
      {"telemetry", "length(x.data)", true},
      {"traces", "length(x.data)", true},
  };
  std::string sql = absl::StrCat("SELECT (SELECT COALESCE(SUM(length(j.record)), 0) FROM jobs j",
                                 " WHERE ", jobs_where, ")");
  for (const Part& p : kParts) {
    absl::StrAppend(&sql, " + (SELECT COALESCE(SUM(", p.bytes, "), 0) FROM ", p.table, " x",
                    p.of_run ? " JOIN runs r ON r.run_id = x.run_id"
                               " JOIN jobs j ON j.job_id = r.job_id"
                             : " JOIN jobs j ON j.job_id = x.job_id",
                    " WHERE ", jobs_where, ")");
  }
  return sql;
}

// StoredBytesSql's figure for one value of its parameter.
absl::StatusOr<int64_t> StoredBytes(Connection& c, const std::string& jobs_where,
                                    const std::string& value) {
  Statement s(c, "stored bytes", StoredBytesSql(jobs_where));
  s.Text(1, value);
  auto row = s.Step();
  if (!row.ok()) return row.status();
  return *row ? s.ColumnInt(0) : 0;
}

absl::Status UpdateIn(Connection& c, const v1::Job& job) {
  Statement s(c, "update job", "UPDATE jobs SET state=?, record=? WHERE job_id=?");
  s.Int(1, job.state()).Blob(2, job.SerializeAsString()).Text(3, job.job_id());
  if (auto st = s.Run(); !st.ok()) return st;
  if (c.Changes() == 0) return absl::NotFoundError(absl::StrCat("job ", job.job_id()));
  return absl::OkStatus();
}

}  // namespace

absl::Status AppendEventIn(Connection& c, const v1::ProgressEvent& event) {
  Statement s(c, "append event",
              "INSERT INTO job_events(job_id, sequence, record) VALUES(?,?,?)");
  s.Text(1, event.job_id()).Int(2, event.sequence()).Blob(3, event.SerializeAsString());
  return s.Run();
}

absl::StatusOr<std::string> JobStore::Insert(const v1::Job& in, const v1::JobPlan& plan) {
  v1::Job job = in;
  if (job.job_id().empty()) job.set_job_id(NewId("j"));
  auto status = db_->Transaction("insert job", [&](Connection& c) {
    Statement s(c, "insert job",
                "INSERT INTO jobs(job_id, state, workload, submit_ns, schedule_id,"
                " priority, record, submitted_by) VALUES(?,?,?,?,?,?,?,?)");
    s.Text(1, job.job_id())
        .Int(2, job.state())
        .Text(3, job.spec().base().workload())
        .Int(4, StoredNs(job.submit_time()))
        .Text(5, job.schedule_id())
        .Int(6, job.spec().priority())
        .Blob(7, job.SerializeAsString())
        .Text(8, job.submitted_by());
    if (auto st = s.Run(); !st.ok() || plan.runs_size() == 0) return st;
    Statement p(c, "insert job plan", "INSERT INTO job_plans(job_id, data) VALUES(?,?)");
    p.Text(1, job.job_id()).Blob(2, plan.SerializeAsString());
    return p.Run();
  });
  if (!status.ok()) return status;
  return job.job_id();
}

absl::Status JobStore::Update(const v1::Job& job) {
  return db_->Write([&](Connection& c) { return UpdateIn(c, job); });
}

absl::Status JobStore::Update(const v1::Job& job, const v1::ProgressEvent& event) {
  return db_->Transaction("update job", [&](Connection& c) {
    if (auto s = UpdateIn(c, job); !s.ok()) return s;
    return AppendEventIn(c, event);
  });
}

absl::StatusOr<v1::JobPlan> JobStore::GetPlan(const std::string& job_id) {
  v1::JobPlan plan;
  auto status = db_->Read([&](Connection& c) -> absl::Status {
    Statement s(c, "get job plan", "SELECT data FROM job_plans WHERE job_id=?");
    s.Text(1, job_id);
    if (auto st = s.One(absl::StrCat("job ", job_id, " has no stored plan, so it cannot run"));
        !st.ok()) {
      return st;
    }
    return s.ColumnProto(0, "garbled job plan", &plan);
  });
  if (!status.ok()) return status;
  return plan;
}

absl::StatusOr<v1::Job> JobStore::Get(const std::string& job_id) {
  v1::Job job;
  auto status = db_->Read([&](Connection& c) -> absl::Status {
    Statement s(c, "get job", "SELECT record FROM jobs WHERE job_id=?");
    s.Text(1, job_id);
    if (auto st = s.One(absl::StrCat("no such job: ", job_id)); !st.ok()) return st;
    return s.ColumnProto(0, "garbled job record", &job);
  });
  if (!status.ok()) return status;
  return job;
}

absl::StatusOr<DeletedJob> JobStore::Delete(const std::string& job_id) {
  DeletedJob deleted;
  auto status = db_->Transaction("delete job", [&](Connection& c) -> absl::Status {
    {
      Statement s(c, "delete job",
                  "SELECT record, (SELECT COUNT(*) FROM runs WHERE job_id=?1) FROM jobs"
                  " WHERE job_id=?1");
      s.Text(1, job_id);
      if (auto st = s.One(absl::StrCat("no such job: ", job_id)); !st.ok()) return st;
      if (auto st = s.ColumnProto(0, "garbled job record", &deleted.job); !st.ok()) return st;
      deleted.runs = s.ColumnInt(1);
    }
    auto bytes = StoredBytes(c, "j.job_id = ?1", job_id);
    if (!bytes.ok()) return bytes.status();
    deleted.bytes = *bytes;
    // The rest goes with the row (ON DELETE CASCADE).
    Statement s(c, "delete job", "DELETE FROM jobs WHERE job_id=?");
    s.Text(1, job_id);
    return s.Run();
  });
  if (!status.ok()) return status;
  return deleted;
}

absl::StatusOr<int64_t> JobStore::SubmitterBytes(const std::string& submitted_by) {
  int64_t bytes = 0;
  auto status = db_->Read([&](Connection& c) -> absl::Status {
    auto stored = StoredBytes(c, "j.submitted_by = ?1", submitted_by);
    if (!stored.ok()) return stored.status();
    bytes = *stored;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return bytes;
}

absl::StatusOr<std::map<v1::JobState, int64_t>> JobStore::CountByState() {
  std::map<v1::JobState, int64_t> counts;
  auto status = db_->Read([&](Connection& c) {
    Statement s(c, "count jobs", "SELECT state, COUNT(*) FROM jobs GROUP BY state");
    return s.ForEach([&] {
      counts[static_cast<v1::JobState>(s.ColumnInt(0))] = s.ColumnInt(1);
      return absl::OkStatus();
    });
  });
  if (!status.ok()) return status;
  return counts;
}

absl::StatusOr<Page<v1::Job>> JobStore::List(const JobFilter& filter, int page_size,
                                             const std::string& page_token) {
  auto limit = PageSize(page_size, 50);
  if (!limit.ok()) return limit.status();
  Conditions where;
  where.In("state", filter.states);
  if (!filter.workload.empty()) where.Text("workload = ?", filter.workload);
  if (!filter.schedule_id.empty()) where.Text("schedule_id = ?", filter.schedule_id);
  if (filter.submitted_after_ns > 0) where.Int("submit_ns >= ?", filter.submitted_after_ns);
  if (filter.submitted_before_ns > 0) where.Int("submit_ns < ?", filter.submitted_before_ns);
  if (auto s = where.After(page_token, "submit_ns", "job_id"); !s.ok()) return s;
  const std::string sql =
      absl::StrCat("SELECT record, submit_ns, job_id FROM jobs", where.Where(),
                   " ORDER BY submit_ns DESC, job_id DESC LIMIT ", *limit + 1);
  Page<v1::Job> page;
  auto status = db_->Read([&](Connection& c) {
    Statement s(c, "list jobs", sql);
    where.Bind(s);
    return ReadPage(s, *limit, [&](v1::Job* job, int64_t* ns, std::string* id) {
      *ns = s.ColumnInt(1);
      *id = s.ColumnText(2);
      return s.ColumnProto(0, "garbled job record", job);
    }, &page);
  });
  if (!status.ok()) return status;
  return page;
}

absl::Status JobStore::AppendEvent(const v1::ProgressEvent& event) {
  return db_->Write([&](Connection& c) { return AppendEventIn(c, event); });
}

absl::StatusOr<std::vector<v1::ProgressEvent>> JobStore::ListEvents(const std::string& job_id,
                                                                    int64_t after_sequence) {
  std::vector<v1::ProgressEvent> events;
  auto status = db_->Read([&](Connection& c) {
    Statement s(c, "list events",
                "SELECT record FROM job_events WHERE job_id=? AND sequence>?"
                " ORDER BY sequence");
    s.Text(1, job_id).Int(2, after_sequence);
    return s.ForEach([&] { return s.ColumnProto(0, "garbled event", &events.emplace_back()); });
  });
  if (!status.ok()) return status;
  return events;
}

absl::StatusOr<int64_t> JobStore::LastSequence(const std::string& job_id) {
  int64_t last = 0;
  auto status = db_->Read([&](Connection& c) -> absl::Status {
    Statement s(c, "last sequence",
                "SELECT COALESCE(MAX(sequence), 0) FROM job_events WHERE job_id=?");
    s.Text(1, job_id);
    auto row = s.Step();
    if (!row.ok()) return row.status();
    if (*row) last = s.ColumnInt(0);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return last;
}

}  // namespace gpubench::storage
