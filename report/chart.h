// Hand-written inline SVG charts for the HTML report: line charts and
// horizontal bar charts with round-numbered axes and a legend, plus the text
// helpers they need (HTML escaping, width estimates, number formats). Knows
// nothing of runs or jobs: callers hand it points and bars.
#ifndef GPUBENCH_REPORT_CHART_H_
#define GPUBENCH_REPORT_CHART_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpubench::report::internal {

// ---------------------------------------------------------------- text

// s with & < > " ' written as character references, safe in HTML text and in
// quoted attribute values, and its control and bidirectional characters as
// visible escapes (Printable): a name cannot show itself reordered.
std::string EscapeHtml(std::string_view s);

// The estimated width in px of s in a sans-serif font of font_px: SVG text
// cannot be measured without a browser. Counts code points, not bytes.
double TextWidth(std::string_view s, double font_px = 12);

// s cut at a code point boundary to fit max_px (by TextWidth at 12 px), ending
// in "…" when cut; s itself when it fits.
std::string FitText(const std::string& s, double max_px);

// s in lines of at most max_px, broken at spaces; at most max_lines, the
// last cut by FitText where the rest does not fit. A word wider than a line
// is cut too.
std::vector<std::string> WrapText(const std::string& s, double max_px, int max_lines);

// v with enough digits to tell neighbouring runs apart and no more than a
// run's noise: "1234", "123.4", "12.34", "1.234".
std::string FormatFigure(double v);

// ---------------------------------------------------------------- colours

inline constexpr char kInk[] = "#1f2328";
// Bars of a ratio above and below 1x.
inline constexpr char kFaster[] = "#4e9a5a";
inline constexpr char kSlower[] = "#d1495b";
// A ratio whose interval holds 1x: no difference claimed.
inline constexpr char kNoisy[] = "#b8bec6";

// The i-th colour of a 10-colour palette (Tableau 10), repeating after 10.
const char* SeriesColor(int i);

// ---------------------------------------------------------------- scales

// An axis from 0 to max in steps of step.
struct Scale {
  double max = 1;
  double step = 1;
};

// An axis from 0 covering max_value in about `ticks` steps of 1, 2, 2.5 or 5
// times a power of ten; max is the first such step at or above max_value.
// {1, 1} for a max_value that is not positive and finite.
Scale NiceScale(double max_value, int ticks = 5);

// ---------------------------------------------------------------- charts

// How a legend entry is drawn.
enum class Mark { kLine, kDashedLine, kBox, kReference };

struct LegendEntry {
  std::string label;
  std::string color;
  Mark mark = Mark::kLine;
};

// A vertical bar at x from low to high: a figure's 95% interval.
struct ErrorBar {
  double x = 0, low = 0, high = 0;
};

// One line of a line chart: (x, y) points in any order.
struct Series {
  std::string label;
  std::string color;
  // Dashed line and hollow points, e.g. for p95 beside a solid p50.
  bool dashed = false;
  std::vector<std::pair<double, double>> points;
  std::vector<ErrorBar> error_bars;
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<Series> series;
  // Switch to a log y axis when the values span more than 30x, so one slow
  // group (a CPU run beside GPU runs) does not flatten the others.
  bool log_y_when_wide = false;
};

// An <svg> element of the chart: y from 0 (or a log axis), x on a log2 axis
// when it spans 4x or more (batch sizes), a legend row per series. Empty when
// the data draws no line: no series has two points at different x.
std::string RenderLineChart(LineChart chart);

// A piece of a stacked bar.
struct Segment {
  double value = 0;
  std::string color;
  std::string tooltip;
};

struct Bar {
  std::string label;
  // With segments, their sum.
  double value = 0;
  // Printed at the end of the bar: "1.90×", "31.0%".
  std::string value_text;
  std::string color;
  // Shown on hover; the label when empty.
  std::string tooltip;
  // Where given, the bar is drawn as these pieces end to end, each with its
  // own colour and tooltip (a share of a whole: a stacked bar).
  std::vector<Segment> segments;
};

struct BarChart {
  std::string title;
  std::string x_label;
  // Drawn top to bottom in this order.
  std::vector<Bar> bars;
  // A dashed vertical line, e.g. at 1x for speedups.
  std::optional<double> reference;
  std::vector<LegendEntry> legend;
};

// svg in a <figure>; "" for a chart that draws nothing, so it leaves no
// empty frame.
std::string InFigure(const std::string& svg);

// An <svg> element of horizontal bars (labels such as "fp16 + channels_last,
// batch 256" read better along rows than under columns). Empty without bars.
std::string RenderBarChart(const BarChart& chart);

// One device's roof: memory bandwidth up to the ridge, then its compute peak.
struct Roof {
  std::string label;
  std::string color;
  double peak_flops_per_s = 0;
  double peak_bytes_per_s = 0;
};

// One run on a roofline: x FLOPs per byte, y FLOP/s.
struct RooflineMark {
  std::string label;
  std::string color;
  double intensity = 0;
  double flops_per_s = 0;
  std::string tooltip;
};

struct RooflineChart {
  std::string title;
  std::vector<Roof> roofs;
  std::vector<RooflineMark> marks;
};

// An <svg> element: log-log axes (FLOP/byte, TFLOP/s), each roof a slanted
// bandwidth line meeting its flat compute peak at the ridge, each run a
// point. Empty without marks.
std::string RenderRooflineChart(const RooflineChart& chart);

}  // namespace gpubench::report::internal

#endif  // GPUBENCH_REPORT_CHART_H_
