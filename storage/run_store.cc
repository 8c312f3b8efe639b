#include "storage/run_store.h"

#include <zlib.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/sha256.h"
#include "storage/job_store.h"
#include "storage/schema.h"

namespace gpubench::storage {
namespace {

// A trace ready to store: compressed before the write lock is taken.
struct CompressedTrace {
  int rank = 0;
  std::string format;
  int64_t size_bytes = 0;  // uncompressed
  std::string sha256;      // of the uncompressed data
  std::string data;        // zlib
};

absl::StatusOr<CompressedTrace> CompressTrace(const std::string& format, const std::string& data,
                                              int rank) {
  uLongf size = compressBound(data.size());
  CompressedTrace trace;
  trace.rank = rank;
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

// created_ns: one time for all of a run's ranks, so that retention, newest
// first, keeps rank 0's before the others'.
absl::Status PutTraceIn(Connection& c, const std::string& run_id, const CompressedTrace& trace,
                        int64_t created_ns) {
  Statement s(c, "put trace",
              "INSERT OR REPLACE INTO traces(run_id, rank, format, size_bytes, sha256,"
              " created_ns, data) VALUES(?,?,?,?,?,?,?)");
  s.Text(1, run_id)
      .Int(2, trace.rank)
      .Text(3, trace.format)
      .Int(4, trace.size_bytes)
      .Text(5, trace.sha256)
      .Int(6, created_ns)
      .Blob(7, trace.data);
  return s.Run();
}

// A timing that is not a number would poison every statistic read later.
absl::Status CheckSamples(const v1::IterationSamples& samples) {
  for (const auto& [name, values] :
       {std::pair<const char*, const google::protobuf::RepeatedField<float>*>{
            "device_ms", &samples.device_ms()},
        {"host_ms", &samples.host_ms()},
        {"data_wait_ms", &samples.data_wait_ms()}}) {
    for (int i = 0; i < values->size(); ++i) {
      if (!std::isfinite(values->Get(i))) {
        return absl::InvalidArgumentError(absl::StrCat(
            "run.samples.", name, "[", i, "]: not a finite number (", values->Get(i), ")"));
      }
    }
  }
  return absl::OkStatus();
}

// Inserts the run row, its samples and its telemetry inside the caller's
// transaction; *id is the run's id.
absl::Status InsertIn(Connection& c, const v1::Run& in, std::string* id) {
  v1::Run run = in;
  if (run.run_id().empty()) run.set_run_id(NewId("r"));
  *id = run.run_id();
  const std::string samples = run.samples().SerializeAsString();
  const std::string telemetry = run.telemetry_series().SerializeAsString();
  const bool has_telemetry = run.has_telemetry_series();
  run.clear_samples();
  run.clear_telemetry_series();
  {
    Statement s(c, "insert run",
                "INSERT INTO runs(run_id, job_id, run_index, state, workload,"
                " host_id, start_ns, throughput, record, config_json, schedule_id,"
                " end_ns, verdict)"
                " VALUES(?,?,?,?,?,?,?,?,?,?,"
                "  COALESCE((SELECT schedule_id FROM jobs WHERE job_id=?), ''),?,?)");
    s.Text(1, run.run_id())
        .Text(2, run.job_id())
        .Int(3, run.index())
        .Int(4, run.state())
        .Text(5, run.config().workload())
        .Text(6, run.host_id())
        .Int(7, StoredNs(run.start_time()))
        .Real(8, run.result().throughput_samples_per_s())
        .Blob(9, run.SerializeAsString())
        .Text(10, ConfigJson(run.config()))
        .Text(11, run.job_id())
        .Int(12, StoredNs(run.end_time()))
        .Int(13, run.history().verdict());
    if (auto st = s.Run(); !st.ok()) return st;
  }
  for (const char* table : {"samples", "telemetry"}) {
    const bool is_samples = table == std::string("samples");
    if (!is_samples && !has_telemetry) continue;
    Statement s(c, absl::StrCat("insert ", table),
                absl::StrCat("INSERT INTO ", table, "(run_id, data) VALUES(?,?)"));
    s.Text(1, run.run_id()).Blob(2, is_samples ? samples : telemetry);
    if (auto st = s.Run(); !st.ok()) return st;
  }
  return absl::OkStatus();
}

// The columns ReadRun reads, and the joins that give them.
constexpr char kRunColumns[] =
    "SELECT r.record, s.data, r.run_id, t.data FROM runs r"
    " LEFT JOIN samples s ON s.run_id = r.run_id"
    " LEFT JOIN telemetry t ON t.run_id = r.run_id";

// Columns: record, samples (may be NULL), run_id, and optionally telemetry
// (may be NULL).
absl::Status ReadRun(const Statement& s, bool include_samples, v1::Run* run) {
  if (auto st = s.ColumnProto(0, "garbled run record", run); !st.ok()) return st;
  run->set_run_id(s.ColumnText(2));
  if (!include_samples) return absl::OkStatus();
  if (!s.IsNull(1)) {
    if (auto st = s.ColumnProto(1, "garbled samples", run->mutable_samples()); !st.ok()) {
      return st;
    }
  }
  if (s.ColumnCount() > 3 && !s.IsNull(3)) {
    return s.ColumnProto(3, "garbled telemetry", run->mutable_telemetry_series());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> RunStore::Insert(const v1::Run& run) {
  if (auto s = CheckSamples(run.samples()); !s.ok()) return s;
  std::string id;
  auto status = db_->Transaction("insert run", [&](Connection& c) { return InsertIn(c, run, &id); });
  if (!status.ok()) return status;
  return id;
}

absl::StatusOr<std::string> RunStore::Insert(const v1::Run& run, const v1::ProgressEvent& event,
                                             const std::vector<RankTrace>& traces) {
  if (auto s = CheckSamples(run.samples()); !s.ok()) return s;
  std::vector<CompressedTrace> compressed;
  for (const RankTrace& t : traces) {
    if (t.json.empty()) continue;
    auto trace = CompressTrace("chrome", t.json, t.rank);
    if (!trace.ok()) return trace.status();
    compressed.push_back(std::move(*trace));
  }
  std::string id;
  auto status = db_->Transaction("insert run", [&](Connection& c) -> absl::Status {
    if (auto s = InsertIn(c, run, &id); !s.ok()) return s;
    v1::ProgressEvent stored = event;
    if (stored.has_run_finished()) {
      v1::Run* r = stored.mutable_run_finished()->mutable_run();
      r->set_run_id(id);
      r->clear_samples();
      r->clear_telemetry_series();
    }
    const int64_t now = StoredNs(NowTimestamp());
    for (const CompressedTrace& trace : compressed) {
      if (auto s = PutTraceIn(c, id, trace, now); !s.ok()) return s;
    }
    return AppendEventIn(c, stored);
  });
  if (!status.ok()) return status;
  return id;
}

absl::StatusOr<std::vector<v1::Run>> RunStore::ReadRuns(
    const char* what, const std::string& sql, absl::FunctionRef<void(Statement&)> bind,
    bool include_samples) {
  std::vector<v1::Run> runs;
  auto status = db_->Read([&](Connection& c) {
    Statement s(c, what, sql);
    bind(s);
    return s.ForEach([&] { return ReadRun(s, include_samples, &runs.emplace_back()); });
  });
  if (!status.ok()) return status;
  return runs;
}

absl::StatusOr<std::vector<v1::Run>> RunStore::List(const std::string& job_id,
                                                    bool include_samples) {
  return ReadRuns("list runs",
                  absl::StrCat(kRunColumns, " WHERE r.job_id=? ORDER BY r.run_index"),
                  [&](Statement& s) { s.Text(1, job_id); }, include_samples);
}

absl::StatusOr<std::vector<RunStore::Count>> RunStore::CountByWorkload() {
  std::vector<Count> counts;
  auto status = db_->Read([&](Connection& c) {
    Statement s(c, "count runs",
                "SELECT workload, state, COUNT(*) FROM runs GROUP BY workload, state"
                " ORDER BY workload, state");
    return s.ForEach([&] {
      counts.push_back(Count{s.ColumnText(0), static_cast<v1::RunState>(s.ColumnInt(1)),
                             s.ColumnInt(2)});
      return absl::OkStatus();
    });
  });
  if (!status.ok()) return status;
  return counts;
}

absl::StatusOr<std::vector<v1::Run>> RunStore::Newest(v1::RunState state, int limit) {
  return ReadRuns("newest runs",
                  absl::StrCat(kRunColumns,
                               " WHERE r.state=? ORDER BY r.start_ns DESC, r.run_id DESC LIMIT ?"),
                  [&](Statement& s) { s.Int(1, state).Int(2, limit); }, false);
}

absl::StatusOr<v1::Run> RunStore::Get(const std::string& run_id, bool include_samples) {
  v1::Run run;
  auto status = db_->Read([&](Connection& c) -> absl::Status {
    Statement s(c, "get run", absl::StrCat(kRunColumns, " WHERE r.run_id=?"));
    s.Text(1, run_id);
    if (auto st = s.One(absl::StrCat("no such run: ", run_id)); !st.ok()) return st;
    return ReadRun(s, include_samples, &run);
  });
  if (!status.ok()) return status;
  return run;
}

absl::StatusOr<Page<v1::Run>> RunStore::Query(const RunFilter& filter, int page_size,
                                              const std::string& page_token) {
  auto limit = PageSize(page_size, 100);
  if (!limit.ok()) return limit.status();
  Conditions where;
  for (const auto& [column, value] : {std::pair<const char*, const std::string*>{
                                          "r.workload = ?", &filter.workload},
                                      {"r.host_id = ?", &filter.host_id},
                                      {"r.job_id = ?", &filter.job_id},
                                      {"r.schedule_id = ?", &filter.schedule_id}}) {
    if (!value->empty()) where.Text(column, *value);
  }
  where.In("r.state", filter.states);
  if (filter.started_after_ns > 0) where.Int("r.start_ns >= ?", filter.started_after_ns);
  if (filter.started_before_ns > 0) where.Int("r.start_ns < ?", filter.started_before_ns);
  for (const ConfigPredicate& p : filter.config_equals) where.Config("r.config_json", p);
  if (auto s = where.After(page_token, "r.start_ns", "r.run_id"); !s.ok()) return s;
  const std::string sql =
      absl::StrCat("SELECT r.record, NULL, r.run_id, r.start_ns FROM runs r", where.Where(),
                   " ORDER BY r.start_ns DESC, r.run_id DESC LIMIT ", *limit + 1);
  Page<v1::Run> page;
  auto status = db_->Read([&](Connection& c) {
    Statement s(c, "query runs", sql);
    where.Bind(s);
    return ReadPage(s, *limit, [&](v1::Run* run, int64_t* ns, std::string* id) {
      *ns = s.ColumnInt(3);
      *id = s.ColumnText(2);
      return ReadRun(s, false, run);
    }, &page);
  });
  if (!status.ok()) return status;
  return page;
}

absl::StatusOr<int64_t> RunStore::DeleteCancelled(const std::string& job_id) {
  int64_t deleted = 0;
  auto status = db_->Write([&](Connection& c) -> absl::Status {
    // Samples, telemetry and traces go with their run (ON DELETE CASCADE).
    Statement s(c, "delete runs", "DELETE FROM runs WHERE job_id=? AND state=?");
    s.Text(1, job_id).Int(2, v1::RUN_STATE_CANCELLED);
    if (auto st = s.Run(); !st.ok()) return st;
    deleted = c.Changes();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return deleted;
}

absl::StatusOr<std::vector<v1::Run>> RunStore::ScheduleHistory(
    const std::string& schedule_id, const v1::RunConfig& config, int limit,
    const std::string& exclude_job_id) {
  return ReadRuns("schedule history",
                  "SELECT r.record, NULL, r.run_id FROM runs r"
                  " WHERE r.schedule_id=? AND r.config_json=? AND r.state=? AND r.job_id<>?"
                  " ORDER BY r.start_ns DESC LIMIT ?",
                  [&](Statement& s) {
                    s.Text(1, schedule_id)
                        .Text(2, ConfigJson(config))
                        .Int(3, v1::RUN_STATE_SUCCEEDED)
                        .Text(4, exclude_job_id)
                        .Int(5, limit);
                  },
                  false);
}

absl::Status RunStore::SetHistory(const std::string& run_id,
                                  const v1::HistoryComparison& history) {
  return db_->Transaction("set run history", [&](Connection& c) -> absl::Status {
    v1::Run run;
    {
      Statement s(c, "set run history", "SELECT record FROM runs WHERE run_id=?");
      s.Text(1, run_id);
      if (auto st = s.One(absl::StrCat("no such run: ", run_id)); !st.ok()) return st;
      if (auto st = s.ColumnProto(0, "garbled run record", &run); !st.ok()) return st;
    }
    *run.mutable_history() = history;
    Statement s(c, "set run history", "UPDATE runs SET record=?, verdict=? WHERE run_id=?");
    s.Blob(1, run.SerializeAsString()).Int(2, history.verdict()).Text(3, run_id);
    return s.Run();
  });
}

absl::StatusOr<std::vector<v1::Run>> RunStore::ListFlagged(int64_t since_ns,
                                                           bool include_improvements) {
  return ReadRuns("list flagged runs",
                  "SELECT r.record, NULL, r.run_id FROM runs r"
                  " WHERE r.verdict IN (?, ?) AND r.end_ns >= ? ORDER BY r.end_ns DESC",
                  [&](Statement& s) {
                    s.Int(1, v1::VERDICT_REGRESSED)
                        .Int(2, include_improvements ? v1::VERDICT_IMPROVED
                                                     : v1::VERDICT_REGRESSED)
                        .Int(3, since_ns);
                  },
                  false);
}

absl::Status RunStore::PutTrace(const std::string& run_id, const std::string& format,
                                const std::string& data, int rank) {
  auto trace = CompressTrace(format, data, rank);  // before the lock: zlib is the slow part
  if (!trace.ok()) return trace.status();
  return db_->Write(
      [&](Connection& c) { return PutTraceIn(c, run_id, *trace, StoredNs(NowTimestamp())); });
}

absl::StatusOr<std::pair<v1::TraceInfo, std::string>> RunStore::GetTrace(
    const std::string& run_id, int rank) {
  v1::TraceInfo info;
  std::string compressed;
  auto status = db_->Read([&](Connection& c) -> absl::Status {
    Statement s(c, "get trace",
                "SELECT format, size_bytes, sha256, data FROM traces WHERE run_id=? AND rank=?");
    s.Text(1, run_id).Int(2, rank);
    if (auto st = s.One(absl::StrCat("run ", run_id, " has no trace",
                                     rank != 0 ? absl::StrCat(" of rank ", rank) : ""));
        !st.ok()) {
      return st;
    }
    info.set_run_id(run_id);
    info.set_rank(rank);
    info.set_format(s.ColumnText(0));
    info.set_size_bytes(s.ColumnInt(1));
    info.set_sha256(s.ColumnText(2));
    compressed = s.ColumnBlob(3);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  // Decompressed outside the read connection.
  info.set_compressed_size_bytes(compressed.size());
  std::string data(info.size_bytes(), '\0');
  uLongf size = data.size();
  if (uncompress(reinterpret_cast<Bytef*>(data.data()), &size,
                 reinterpret_cast<const Bytef*>(compressed.data()),
                 compressed.size()) != Z_OK ||
      size != data.size()) {
    return absl::DataLossError(absl::StrCat("database ", db_->path(), ": trace of run ", run_id,
                                            " does not decompress"));
  }
  return std::make_pair(info, std::move(data));
}

absl::StatusOr<int64_t> RunStore::Prune(const RetentionLimits& limits) {
  int64_t removed = 0;
  auto status = db_->Transaction("prune runs", [&](Connection& c) -> absl::Status {
    // A run's telemetry series goes with its samples. Starting from the
    // kept runs (few) rather than the dropped ones (many) keeps a prune
    // with nothing to do cheap; it runs after every job.
    for (const char* table : {"samples", "telemetry"}) {
      if (limits.max_runs_with_samples <= 0) break;
      Statement s(c, "prune samples",
                  absl::StrCat("DELETE FROM ", table,
                               " WHERE run_id NOT IN (SELECT run_id FROM runs"
                               " WHERE run_id IS NOT NULL"
                               " ORDER BY start_ns DESC, run_id DESC LIMIT ?)"));
      s.Int(1, limits.max_runs_with_samples);
      if (auto st = s.Run(); !st.ok()) return st;
      removed += c.Changes();
    }
    if (limits.max_trace_bytes <= 0) return absl::OkStatus();
    std::vector<std::pair<std::string, int64_t>> drop;  // run, rank
    {
      Statement s(c, "prune traces",
                  "SELECT run_id, rank, length(data) FROM traces"
                  " ORDER BY created_ns DESC, run_id, rank");
      int64_t total = 0;
      auto scanned = s.ForEach([&] {
        total += s.ColumnInt(2);
        if (total > limits.max_trace_bytes) drop.emplace_back(s.ColumnText(0), s.ColumnInt(1));
        return absl::OkStatus();
      });
      if (!scanned.ok()) return scanned;
    }
    for (const auto& [id, rank] : drop) {
      Statement s(c, "prune traces", "DELETE FROM traces WHERE run_id=? AND rank=?");
      s.Text(1, id).Int(2, rank);
      if (auto st = s.Run(); !st.ok()) return st;
      removed += c.Changes();
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return removed;
}

}  // namespace gpubench::storage
