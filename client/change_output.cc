#include "client/change_output.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/printable.h"

namespace gpubench::client {
namespace {

std::string When(int64_t ns) {
  return absl::FormatTime("%Y-%m-%d %H:%M", absl::FromUnixNanos(ns), absl::LocalTimeZone());
}

std::string Level(double v) {
  return v >= 100 ? absl::StrFormat("%.1f", v) : absl::StrFormat("%.4g", v);
}

// The point is its series' last.
bool Latest(const report::SeriesChange& c, const report::ChangeFamily& family) {
  for (const report::SeriesChange& other : family.kept) {
    if (other.series == c.series && other.point.index > c.point.index) return false;
  }
  return true;
}

}  // namespace

Table ChangeTable(const report::ChangeFamily& family) {
  Table t;
  t.header = {"host", "series", "when", "before", "after", "unit", "change", "p",
              "points", "first run after", "environment"};
  for (const report::SeriesChange& c : family.kept) {
    const stats::ChangePoint& p = c.point;
    t.rows.push_back({c.series->host, c.series->what, When(c.first_after->start_ns),
                      Level(p.median_before), Level(p.median_after), c.series->unit,
                      absl::StrFormat("%+.1f%% (%s)", 100 * p.change(), c.worse() ? "worse" : "better"),
                      absl::StrFormat("%.2g", p.p_value),
                      absl::StrCat(p.points_before, "/", p.points_after), c.first_after->run_id,
                      c.environment.empty() ? "-" : Printable(c.environment)});
  }
  return t;
}

void ChangesJson(const report::ChangeFamily& family, JsonWriter& json) {
  json.Object()
      .Key("rule").String(report::DescribeFamily(family))
      .Key("series").Int(family.series)
      .Key("found").Int(family.found)
      .Key("q").Number(family.q);
  json.Key("change_points").Array();
  for (const report::SeriesChange& c : family.kept) {
    const stats::ChangePoint& p = c.point;
    json.Object()
        .Key("host").String(c.series->host)
        .Key("series").String(c.series->what)
        .Key("unit").String(c.series->unit)
        .Key("index").Int(p.index)
        .Key("time").String(absl::FormatTime(absl::RFC3339_sec, absl::FromUnixNanos(c.first_after->start_ns),
                                              absl::UTCTimeZone()))
        .Key("first_run_after").String(c.first_after->run_id)
        .Key("median_before").Number(p.median_before)
        .Key("median_after").Number(p.median_after)
        .Key("change").Number(p.change())
        .Key("p_value").Number(p.p_value)
        .Key("points_before").Int(p.points_before)
        .Key("points_after").Int(p.points_after)
        .Key("worse").Bool(c.worse())
        .Key("environment").String(c.environment)
        .End();
  }
  json.End().End();
}

void PrintChanges(const report::ChangeFamily& family, Format format, std::ostream& out,
                  std::ostream& err) {
  if (!family.kept.empty() && (format == Format::kTable || format == Format::kMarkdown)) {
    out << "\n";
    PrintTable(ChangeTable(family), format, out);
  }
  err << report::DescribeFamily(family) << "\n";
}

bool StillWorse(const report::ChangeFamily& family) {
  for (const report::SeriesChange& c : family.kept) {
    if (c.worse() && Latest(c, family)) return true;
  }
  return false;
}

void PrintMissing(const Table& missing, Format format, std::ostream& out) {
  if (missing.rows.empty() || (format != Format::kTable && format != Format::kMarkdown)) return;
  out << "\nmissing:\n";
  PrintTable(missing, format, out);
}

void MissingJson(const Table& missing, JsonWriter& json) {
  json.Array();
  for (const std::vector<std::string>& row : missing.rows) {
    json.Object();
    for (size_t i = 0; i < row.size() && i < missing.header.size(); ++i) {
      json.Key(missing.header[i]).String(row[i]);
    }
    json.End();
  }
  json.End();
}

}  // namespace gpubench::client
