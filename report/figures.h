// A run's figures, declared once: each with its column name, its heading in
// a text table, unit, which way is better, which runs produce it, its help
// line and its Prometheus gauge. The CSV and the export (run_columns.cc),
// `show`'s tables, the HTML report's tables, the daemon's /metrics and
// docs/figures.md (`gpubench reference figures`) all read this table; none
// of them spells a figure's name, unit or presence rule again.
#ifndef GPUBENCH_REPORT_FIGURES_H_
#define GPUBENCH_REPORT_FIGURES_H_

#include <optional>
#include <string>
#include <vector>

#include "gpubench/v1/result.pb.h"

namespace gpubench::report {

// Which way a figure is better. kNeither: a setting or a reading, not a
// score (the BLAS a CPU run used, the GPU's power).
enum class Better { kHigher, kLower, kNeither };

// How a figure's value is kept and shown.
enum class FigureType {
  kNumber,   // a double, shown with `decimals` after `scale`
  kInteger,  // an int64 (counts)
  kBytes,    // an int64 of bytes, shown as "512.0 MiB"
  kText,     // words
};

struct Figure {
  const char* name;     // the column: CSV, JSON Lines, SQL ("p50_ms")
  const char* heading;  // a text table's heading ("p50 ms")
  const char*
      unit;  // "samples/s", "ms", "bytes", "share" (0 to 1), "" for words
  FigureType type;
  Better better;
  const char* produced_by;  // which runs have it, in words
  const char* help;         // what it is, in a line
  // The value, or nullopt where the run has no such figure (a failed run's
  // throughput, a CPU run's GPU power): absent, never a made-up zero.
  std::optional<double> (*number)(const v1::Run&);  // kNumber, kInteger, kBytes
  std::string (*text)(const v1::Run&);              // kText; "" is absent
  double scale = 1;  // shown value = value * scale (100: a share as percent)
  int decimals = 1;  // shown decimals
  // The daemon's /metrics gauge of the newest run of each config
  // ("gpubench_last_..."), value * prometheus_scale (base units); null for
  // none.
  const char* prometheus = nullptr;
  double prometheus_scale = 1;
};

// Every figure, in the CSV's order.
const std::vector<Figure>& Figures();

// The figure named name; dies (a programming error) for a name not in the
// table, so a caller's name cannot drift from it.
const Figure& FigureNamed(const std::string& name);

// Whether the run has figures: it succeeded, or was cancelled after some
// (its partial figures are kept and marked "partial").
bool HasFigures(const v1::Run& run);

// The figure's value in run as a text table shows it ("1234.5", "512.0 MiB",
// "12.3" for a share as percent); "-" where absent.
std::string FigureText(const Figure& figure, const v1::Run& run);

// docs/figures.md: the table as Markdown.
std::string FiguresMarkdown();

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_FIGURES_H_
