#include "client/run_columns.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/cli_internal.h"
#include "client/json_writer.h"
#include "report/figures.h"
#include "report/profile_diff.h"
#include "google/protobuf/descriptor.h"

namespace gpubench::client {
namespace {

// Builds a row: each Add appends one named cell.
class Row {
 public:
  explicit Row(std::vector<Cell>* cells) : cells_(cells) {}

  void Number(const std::string& name, double v, bool present) {
    Add(name, ColumnType::kNumber, present && std::isfinite(v), "", v);
  }
  void Integer(const std::string& name, int64_t v, bool present) {
    cells_->push_back({name, ColumnType::kInteger, present, "", 0, v});
  }
  // Empty text is absent: null rather than "".
  void Text(const std::string& name, const std::string& v) { Text(name, v, !v.empty()); }
  void Text(const std::string& name, const std::string& v, bool present) {
    Add(name, ColumnType::kText, present, v, 0);
  }
  void Time(const char* name, const google::protobuf::Timestamp& t) {
    // Years 1 to 9999 only: what RFC 3339 and SQL's timestamptz can hold.
    const bool set = (t.seconds() != 0 || t.nanos() != 0) && t.seconds() >= -62135596800 &&
                     t.seconds() <= 253402300799;
    const absl::Time when = absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
    Add(name, ColumnType::kTime, set,
        set ? absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", when, absl::UTCTimeZone()) : "", 0);
  }
  void Add(const std::string& name, ColumnType type, bool present, std::string text,
           double number) {
    cells_->push_back({name, type, present, std::move(text), number, 0});
  }

 private:
  std::vector<Cell>* cells_;
};

// The fingerprint's fields as fp_NAME cells, by reflection: a field added
// to the message is exported without a change here. Absent fields (NVML
// could not tell) are absent cells.
void FingerprintCells(const v1::Fingerprint& f, Row* row) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor* d = f.GetDescriptor();
  const google::protobuf::Reflection* r = f.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* field = d->field(i);
    const std::string name = "fp_" + field->name();
    const bool has = r->HasField(f, field);
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        row->Text(name, has ? r->GetString(f, field) : "", has);
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        row->Add(name, ColumnType::kBool, has, "", has && r->GetBool(f, field) ? 1 : 0);
        break;
      case FieldDescriptor::CPPTYPE_INT32:
        row->Integer(name, has ? r->GetInt32(f, field) : 0, has);
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        row->Add(name, ColumnType::kNumber, has && std::isfinite(r->GetDouble(f, field)), "",
                 has ? r->GetDouble(f, field) : 0);
        break;
      default:  // the message has no other kinds; a new one is added here
        break;
    }
  }
}

}  // namespace

std::string RunNotes(const v1::Run& r) {
  const v1::RunResult& res = r.result();
  std::vector<std::string> notes;
  if (report::HasFigures(r)) {
    if (res.bandwidth_gb_per_s() > 0) {
      notes.push_back(absl::StrFormat("%.1f GB/s", res.bandwidth_gb_per_s()));
    }
    if (std::string rate = FlopRate(res.achieved_tflops() * 1e12); !rate.empty()) {
      // On a GPU in the datasheet table, the share of its dense peak.
      if (res.datasheet_peak_tflops() > 0) {
        absl::StrAppend(&rate, absl::StrFormat(" (%.1f%% of the datasheet's %s)",
                                               100 * res.achieved_tflops() /
                                                   res.datasheet_peak_tflops(),
                                               FlopRate(res.datasheet_peak_tflops() * 1e12)));
      }
      notes.push_back(rate);
    }
    if (res.compile_cached()) {
      notes.push_back("compiled package cached");
    } else if (res.compile_ms() > 0) {
      notes.push_back(absl::StrFormat("compiled in %.1f s", res.compile_ms() / 1000));
    }
    if (std::string n = NumericsNote(res.numerics()); !n.empty()) notes.push_back(n);
    if (!res.profile().error().empty()) notes.push_back(res.profile().error());
  }
  for (std::string& w : RunWarnings(r)) notes.push_back(std::move(w));
  if (r.history().verdict() == v1::VERDICT_REGRESSED ||
      r.history().verdict() == v1::VERDICT_IMPROVED) {
    notes.push_back(absl::StrFormat("%s x%.3f vs history",
                                    Short(v1::Verdict_descriptor(), r.history().verdict()),
                                    r.history().ratio()));
  }
  if (!r.history().environment_changes().empty()) {
    notes.push_back(absl::StrCat("environment differs from the history: ",
                                 absl::StrJoin(r.history().environment_changes(), ", ")));
  }
  if (const std::string change = report::BiggestChange(r.history()); !change.empty()) {
    notes.push_back("biggest change from the history: " + change);
  }
  if (!r.error().empty()) notes.push_back(r.error().substr(0, 100));
  return absl::StrJoin(notes, "; ");
}

std::vector<Cell> RunColumns(const v1::Run& r) {
  std::vector<Cell> cells;
  Row row(&cells);
  row.Integer("index", r.index(), true);
  row.Text("run_id", r.run_id());
  row.Text("config", DescribeConfig(r.config()));
  row.Text("device", r.result().resolved_device());
  row.Text("state", Short(v1::RunState_descriptor(), r.state()));
  for (const report::Figure& f : report::Figures()) {
    if (f.type == report::FigureType::kText) {
      row.Text(f.name, f.text(r));
      continue;
    }
    const std::optional<double> v = f.number(r);
    if (f.type == report::FigureType::kNumber) {
      row.Number(f.name, v.value_or(0), v.has_value());
    } else {
      row.Integer(f.name, static_cast<int64_t>(v.value_or(0)), v.has_value());
    }
  }
  row.Text("notes", RunNotes(r));
  return cells;
}

std::vector<Cell> ExportColumns(const v1::Run& r, const std::string& host) {
  std::vector<Cell> cells;
  Row row(&cells);
  const v1::RunConfig& c = r.config();
  row.Text("host", host);
  row.Text("host_id", r.host_id().empty() ? host : r.host_id());
  row.Text("job_id", r.job_id());
  row.Text("workload", c.workload());
  row.Text("mode", Short(v1::Mode_descriptor(), c.mode()));
  row.Text("precision", Short(v1::Precision_descriptor(), c.precision()));
  row.Integer("batch_size", c.batch_size(), c.batch_size() > 0);
  row.Time("start_time", r.start_time());
  row.Time("end_time", r.end_time());
  for (Cell& cell : RunColumns(r)) cells.push_back(std::move(cell));
  FingerprintCells(r.fingerprint(), &row);
  return cells;
}

std::string CsvText(const Cell& c) {
  if (!c.present) return "";
  switch (c.type) {
    case ColumnType::kNumber:
      return ShortestNumber(c.number);
    case ColumnType::kInteger:
      return absl::StrCat(c.integer);
    case ColumnType::kBool:
      return c.number != 0 ? "true" : "false";
    default:
      return c.text;
  }
}

}  // namespace gpubench::client
