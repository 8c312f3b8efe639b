#include "report/chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/printable.h"

namespace gpubench::report::internal {
namespace {

constexpr double kChartWidth = 580;
constexpr double kLegendRow = 18;
constexpr char kMutedInk[] = "#57606a";
constexpr char kAxis[] = "#8c959f";
constexpr char kGrid[] = "#e6e9ed";

// Code points, not bytes: layout estimates must not grow with UTF-8 length.
int CodePoints(std::string_view s) {
  int n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Ticks land on nice numbers, so %g is exact and short.
std::string TickLabel(double v) {
  const double a = std::fabs(v);
  if (a >= 1e6) return absl::StrFormat("%gM", v / 1e6);
  if (a >= 1e4) return absl::StrFormat("%gk", v / 1e3);
  return absl::StrFormat("%g", v);
}

std::string Px(double v) { return absl::StrFormat("%.1f", v); }

// Lays legend entries out in rows under a chart; returns the rows' SVG and
// sets *rows.
std::string Legend(const std::vector<LegendEntry>& entries, double top,
                   int* rows) {
  std::string svg;
  double x = 12;
  double y = top;
  *rows = entries.empty() ? 0 : 1;
  for (const LegendEntry& e : entries) {
    const std::string label = FitText(e.label, kChartWidth - 60);
    const double w = 30 + TextWidth(label) + 16;
    if (x > 12 && x + w > kChartWidth - 8) {
      x = 12;
      y += kLegendRow;
      ++*rows;
    }
    const double mid = y - 4;
    switch (e.mark) {
      case Mark::kLine:
      case Mark::kDashedLine:
        absl::StrAppend(
            &svg, "<line x1=\"", Px(x), "\" y1=\"", Px(mid), "\" x2=\"",
            Px(x + 22), "\" y2=\"", Px(mid), "\" stroke=\"", e.color,
            "\" stroke-width=\"2\"",
            e.mark == Mark::kDashedLine ? " stroke-dasharray=\"5 3\"" : "",
            "/>");
        absl::StrAppend(&svg, "<circle cx=\"", Px(x + 11), "\" cy=\"", Px(mid),
                        "\" r=\"3.5\" fill=\"",
                        e.mark == Mark::kDashedLine ? "#fff" : e.color,
                        "\" stroke=\"", e.color, "\" stroke-width=\"1.5\"/>");
        break;
      case Mark::kBox:
        absl::StrAppend(&svg, "<rect x=\"", Px(x + 4), "\" y=\"", Px(mid - 6),
                        "\" width=\"14\" height=\"12\" rx=\"2\" fill=\"",
                        e.color, "\"/>");
        break;
      case Mark::kReference:
        absl::StrAppend(&svg, "<line x1=\"", Px(x + 11), "\" y1=\"",
                        Px(mid - 7), "\" x2=\"", Px(x + 11), "\" y2=\"",
                        Px(mid + 7), "\" stroke=\"", e.color,
                        "\" stroke-width=\"1.5\" stroke-dasharray=\"3 2\"/>");
        break;
    }
    absl::StrAppend(&svg, "<text x=\"", Px(x + 30), "\" y=\"", Px(y), "\">",
                    EscapeHtml(label), "</text>");
    x += w;
  }
  return svg;
}

std::string SvgOpen(double height, const std::string& title) {
  return absl::StrCat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 "
      "0 ",
      Px(kChartWidth), " ", Px(height), "\" width=\"", Px(kChartWidth),
      "\" height=\"", Px(height), "\" role=\"img\" aria-label=\"",
      EscapeHtml(title),
      "\" font-family=\"Helvetica Neue, Arial, Liberation Sans, DejaVu Sans, "
      "sans-serif\" "
      "font-size=\"12\" fill=\"",
      kInk, "\"><title>", EscapeHtml(title),
      "</title><text x=\"12\" y=\"22\" font-size=\"14\" ",
      "font-weight=\"600\">", EscapeHtml(title), "</text>");
}

// The data supports a line: some series has two points at different x.
bool Drawable(const LineChart& chart) {
  for (const Series& s : chart.series) {
    for (const auto& p : s.points) {
      if (p.first != s.points.front().first) return true;
    }
  }
  return false;
}

}  // namespace

std::string EscapeHtml(std::string_view text) {
  const std::string s = Printable(text, /*keep_newlines=*/true);
  std::string out;
  out.reserve(s.size() + 16);
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// 0.56 em is the mean advance of Helvetica/Arial/Liberation/DejaVu Sans over
// labels like ours, so layout errs on the side of room.
double TextWidth(std::string_view s, double font_px) {
  return CodePoints(s) * font_px * 0.56;
}

std::string FitText(const std::string& s, double max_px) {
  if (TextWidth(s) <= max_px) return s;
  std::string out = s;
  while (!out.empty() && TextWidth(out) + 8 > max_px) {
    out.pop_back();
    while (!out.empty() &&
           (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) {
      out.pop_back();
    }
    if (!out.empty() &&
        (static_cast<unsigned char>(out.back()) & 0xC0) == 0xC0) {
      out.pop_back();
    }
  }
  return out + "\u2026";
}

std::vector<std::string> WrapText(const std::string& s, double max_px, int max_lines) {
  std::vector<std::string> lines;
  std::string rest = s;
  while (!rest.empty() && static_cast<int>(lines.size()) + 1 < max_lines &&
         TextWidth(rest) > max_px) {
    // The longest head of whole words that fits; a first word too wide is cut.
    size_t cut = std::string::npos;
    for (size_t space = rest.find(' '); space != std::string::npos;
         space = rest.find(' ', space + 1)) {
      if (TextWidth(std::string_view(rest).substr(0, space)) > max_px) break;
      cut = space;
    }
    if (cut == std::string::npos) {
      lines.push_back(FitText(rest.substr(0, rest.find(' ')), max_px));
      cut = rest.find(' ');
      rest = cut == std::string::npos ? "" : rest.substr(cut + 1);
      continue;
    }
    lines.push_back(rest.substr(0, cut));
    rest = rest.substr(cut + 1);
  }
  if (!rest.empty()) lines.push_back(FitText(rest, max_px));
  return lines;
}

std::string FormatFigure(double v) {
  const double a = std::fabs(v);
  if (a >= 1000) return absl::StrFormat("%.0f", v);
  if (a >= 100) return absl::StrFormat("%.1f", v);
  if (a >= 10) return absl::StrFormat("%.2f", v);
  return absl::StrFormat("%.3f", v);
}

// Tableau 10: distinguishable, and still tellable apart in greyscale print.
const char* SeriesColor(int i) {
  static constexpr const char* kPalette[] = {
      "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kPalette[i % 10];
}

Scale NiceScale(double max_value, int ticks) {
  if (!(max_value > 0) || !std::isfinite(max_value)) return {};
  const double raw = max_value / ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  const double nice = f <= 1     ? 1
                      : f <= 2   ? 2
                      : f <= 2.5 ? 2.5
                      : f <= 5   ? 5
                                 : 10;
  Scale s;
  s.step = nice * magnitude;
  s.max = std::ceil(max_value / s.step - 1e-9) * s.step;
  return s;
}

namespace {

constexpr double kLineLeft = 66, kLineRight = 18, kLineTop = 40, kPlotHeight = 210,
                 kLinePad = 12;
constexpr double kPlotWidth = kChartWidth - kLineLeft - kLineRight;

// A line chart's axes, fitted to its points: where a value lands (px, py)
// and where the ticks go.
struct LineAxes {
  double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min;
  bool log_x = false, log_y = false;
  double y_lo = 0, y_hi = 1;
  std::vector<double> xs;  // the x ticks
  std::vector<double> y_ticks;

  double px(double x) const {
    auto fx = [this](double v) { return log_x ? std::log2(v) : v; };
    return kLineLeft + kLinePad +
           (fx(x) - fx(x_min)) / (fx(x_max) - fx(x_min)) * (kPlotWidth - 2 * kLinePad);
  }
  double py(double y) const {
    const double f = log_y ? (std::log10(std::max(y, y_lo)) - std::log10(y_lo)) /
                                 (std::log10(y_hi) - std::log10(y_lo))
                           : (y - y_lo) / (y_hi - y_lo);
    return kLineTop + kPlotHeight - f * kPlotHeight;
  }
};

// Sorts each series by x and fits the axes: a log x axis where x spans 4×
// or more (batch sizes double from point to point), a log y axis where
// asked and the values span 30× or more.
LineAxes FitAxes(LineChart* chart) {
  LineAxes a;
  double y_max = 0, y_min_positive = std::numeric_limits<double>::infinity();
  for (Series& s : chart->series) {
    std::stable_sort(s.points.begin(), s.points.end(),
                     [](const auto& p, const auto& q) { return p.first < q.first; });
    for (const auto& [x, y] : s.points) {
      a.x_min = std::min(a.x_min, x);
      a.x_max = std::max(a.x_max, x);
      y_max = std::max(y_max, y);
      if (y > 0) y_min_positive = std::min(y_min_positive, y);
      a.xs.push_back(x);
    }
    for (const ErrorBar& e : s.error_bars) {
      y_max = std::max(y_max, e.high);
      if (e.low > 0) y_min_positive = std::min(y_min_positive, e.low);
    }
  }
  std::sort(a.xs.begin(), a.xs.end());
  a.xs.erase(std::unique(a.xs.begin(), a.xs.end()), a.xs.end());
  a.log_x = a.x_min > 0 && a.x_max / a.x_min >= 4;
  if (!a.log_x && a.xs.size() > 12) {  // too many to label: a nice scale instead
    a.xs.clear();
    const Scale scale = NiceScale(a.x_max);
    for (double v = 0; v <= scale.max + scale.step * 1e-6; v += scale.step) {
      if (v >= a.x_min && v <= a.x_max) a.xs.push_back(v);
    }
  }
  a.log_y = chart->log_y_when_wide && y_min_positive < y_max && y_max / y_min_positive >= 30;
  if (a.log_y) {
    a.y_lo = std::pow(10.0, std::floor(std::log10(y_min_positive)));
    a.y_hi = std::pow(10.0, std::ceil(std::log10(y_max)));
    const bool many_decades = a.y_hi / a.y_lo > 1e4;
    for (double decade = a.y_lo; decade <= a.y_hi * 1.001; decade *= 10) {
      for (double m : {1.0, 2.0, 5.0}) {
        if ((m == 1.0 || !many_decades) && decade * m <= a.y_hi * 1.001) {
          a.y_ticks.push_back(decade * m);
        }
      }
    }
  } else {
    const Scale scale = NiceScale(y_max * 1.04);
    a.y_hi = scale.max;
    for (double v = 0; v <= scale.max + scale.step * 1e-6; v += scale.step) {
      a.y_ticks.push_back(v);
    }
  }
  return a;
}

// The grid, the ticks (x ticks that would collide dropped), the axes and
// their labels.
void AppendFrame(const LineChart& chart, const LineAxes& a, std::string* svg) {
  for (double v : a.y_ticks) {
    const double y = a.py(v);
    absl::StrAppend(svg, "<line x1=\"", Px(kLineLeft), "\" y1=\"", Px(y), "\" x2=\"",
                    Px(kLineLeft + kPlotWidth), "\" y2=\"", Px(y), "\" stroke=\"", kGrid,
                    "\"/>");
    absl::StrAppend(svg, "<text x=\"", Px(kLineLeft - 6), "\" y=\"", Px(y + 4),
                    "\" text-anchor=\"end\" fill=\"", kMutedInk, "\">", TickLabel(v),
                    "</text>");
  }
  const double bottom = kLineTop + kPlotHeight;
  double last_right = -1e9;
  for (double v : a.xs) {
    const std::string label = TickLabel(v);
    const double x = a.px(v);
    const double half = TextWidth(label) / 2;
    if (x - half < last_right + 8) continue;
    last_right = x + half;
    absl::StrAppend(svg, "<line x1=\"", Px(x), "\" y1=\"", Px(kLineTop), "\" x2=\"", Px(x),
                    "\" y2=\"", Px(bottom), "\" stroke=\"", kGrid, "\"/>");
    absl::StrAppend(svg, "<line x1=\"", Px(x), "\" y1=\"", Px(bottom), "\" x2=\"", Px(x),
                    "\" y2=\"", Px(bottom + 4), "\" stroke=\"", kAxis, "\"/>");
    absl::StrAppend(svg, "<text x=\"", Px(x), "\" y=\"", Px(bottom + 18),
                    "\" text-anchor=\"middle\" fill=\"", kMutedInk, "\">", label, "</text>");
  }
  absl::StrAppend(svg, "<path d=\"M", Px(kLineLeft), " ", Px(kLineTop), " V", Px(bottom), " H",
                  Px(kLineLeft + kPlotWidth), "\" fill=\"none\" stroke=\"", kAxis, "\"/>");
  absl::StrAppend(svg, "<text x=\"", Px(kLineLeft + kPlotWidth / 2), "\" y=\"",
                  Px(bottom + 38), "\" text-anchor=\"middle\">",
                  EscapeHtml(chart.x_label + (a.log_x ? " (log scale)" : "")), "</text>");
  absl::StrAppend(svg, "<text transform=\"translate(16 ", Px(kLineTop + kPlotHeight / 2),
                  ") rotate(-90)\" text-anchor=\"middle\">",
                  EscapeHtml(chart.y_label + (a.log_y ? " (log scale)" : "")), "</text>");
}

// Each series' error bars, its line, then its points over it (a hover
// title on each).
void AppendSeries(const LineChart& chart, const LineAxes& a, std::string* svg) {
  for (const Series& s : chart.series) {
    for (const ErrorBar& e : s.error_bars) {
      const double x = a.px(e.x), lo = a.py(e.low), hi = a.py(e.high);
      absl::StrAppend(svg, "<path d=\"M", Px(x), " ", Px(lo), " V", Px(hi), " M", Px(x - 4), " ",
                      Px(lo), " H", Px(x + 4), " M", Px(x - 4), " ", Px(hi), " H", Px(x + 4),
                      "\" fill=\"none\" stroke=\"", s.color, "\" stroke-width=\"1.2\"><title>",
                      EscapeHtml(s.label), ": 95% interval ", FormatFigure(e.low), "\u2013",
                      FormatFigure(e.high), "</title></path>");
    }
    std::vector<std::string> pts;
    for (const auto& [x, y] : s.points) pts.push_back(absl::StrCat(Px(a.px(x)), ",", Px(a.py(y))));
    if (pts.size() > 1) {
      absl::StrAppend(svg, "<polyline points=\"", absl::StrJoin(pts, " "),
                      "\" fill=\"none\" stroke=\"", s.color, "\" stroke-width=\"2\"",
                      s.dashed ? " stroke-dasharray=\"6 4\"" : "", "/>");
    }
    for (const auto& [x, y] : s.points) {
      absl::StrAppend(svg, "<circle cx=\"", Px(a.px(x)), "\" cy=\"", Px(a.py(y)),
                      "\" r=\"3.5\" fill=\"", s.dashed ? "#fff" : s.color, "\" stroke=\"",
                      s.color, "\" stroke-width=\"1.5\"><title>", EscapeHtml(s.label), ": ",
                      EscapeHtml(chart.x_label), " ", TickLabel(x), ", ", FormatFigure(y),
                      "</title></circle>");
    }
  }
}

}  // namespace

std::string RenderLineChart(LineChart chart) {
  if (!Drawable(chart)) return "";
  const LineAxes axes = FitAxes(&chart);
  std::vector<LegendEntry> legend;
  for (const Series& s : chart.series) {
    legend.push_back({s.label, s.color, s.dashed ? Mark::kDashedLine : Mark::kLine});
  }
  int rows = 0;
  const double legend_top = kLineTop + kPlotHeight + 62;
  const std::string legend_svg = Legend(legend, legend_top, &rows);
  std::string svg = SvgOpen(legend_top + (rows - 1) * kLegendRow + 10, chart.title);
  AppendFrame(chart, axes, &svg);
  AppendSeries(chart, axes, &svg);
  absl::StrAppend(&svg, legend_svg, "</svg>");
  return svg;
}

std::string InFigure(const std::string& svg) {
  return svg.empty() ? "" : absl::StrCat("<figure>", svg, "</figure>\n");
}

namespace {

// A bar's rects from x = left: one of width w, or its segments end to end
// at px_per_unit.
void AppendBarRects(const Bar& b, double left, double y, double height, double w,
                    double px_per_unit, std::string* svg) {
  double x = left;
  for (const Segment& piece :
       b.segments.empty() ? std::vector<Segment>{{b.value, b.color, b.tooltip}} : b.segments) {
    const double pw = b.segments.empty() ? w : piece.value * px_per_unit;
    if (!(pw > 0)) continue;
    absl::StrAppend(svg, "<rect x=\"", Px(x), "\" y=\"", Px(y), "\" width=\"", Px(pw),
                    "\" height=\"", Px(height), "\" rx=\"2\" fill=\"", piece.color, "\"><title>",
                    EscapeHtml(piece.tooltip.empty() ? b.label : piece.tooltip), "</title></rect>");
    x += pw;
  }
}

}  // namespace

std::string RenderBarChart(const BarChart& chart) {
  if (chart.bars.empty()) return "";
  constexpr double kTop = 40, kLine = 14, kRight = 64, kMaxLabel = 230;
  // A label wider than kMaxLabel takes two lines (every row grows for it),
  // cut only beyond that; the whole label is the bar's title either way.
  double label_width = 0;
  std::vector<std::vector<std::string>> labels;
  for (const Bar& b : chart.bars) {
    labels.push_back(WrapText(b.label, kMaxLabel, 2));
    for (const std::string& line : labels.back()) {
      label_width = std::max(label_width, TextWidth(line));
    }
  }
  size_t lines = 1;
  for (const auto& l : labels) lines = std::max(lines, l.size());
  const double kRow = lines > 1 ? 22 + kLine : 22;
  const double left = 12 + label_width + 8;
  const double plot_width = kChartWidth - left - kRight;
  const double plot_height = chart.bars.size() * kRow + 6;

  double max_value = chart.reference.value_or(0);
  for (const Bar& b : chart.bars) max_value = std::max(max_value, b.value);
  const Scale scale = NiceScale(max_value * 1.02);
  auto px = [&](double v) { return left + v / scale.max * plot_width; };

  int rows = 0;
  const double legend_top = kTop + plot_height + 58;
  const std::string legend_svg = Legend(chart.legend, legend_top, &rows);
  const double height =
      rows > 0 ? legend_top + (rows - 1) * kLegendRow + 10 : legend_top - 8;

  std::string svg = SvgOpen(height, chart.title);
  const double bottom = kTop + plot_height;
  for (double v = 0; v <= scale.max + scale.step * 1e-6; v += scale.step) {
    const double x = px(v);
    absl::StrAppend(&svg, "<line x1=\"", Px(x), "\" y1=\"", Px(kTop),
                    "\" x2=\"", Px(x), "\" y2=\"", Px(bottom), "\" stroke=\"",
                    kGrid, "\"/>");
    absl::StrAppend(&svg, "<text x=\"", Px(x), "\" y=\"", Px(bottom + 18),
                    "\" text-anchor=\"middle\" fill=\"", kMutedInk, "\">",
                    TickLabel(v), "</text>");
  }
  for (size_t i = 0; i < chart.bars.size(); ++i) {
    const Bar& b = chart.bars[i];
    const double y = kTop + 3 + i * kRow;
    const double w = std::max(1.0, px(b.value) - left);
    const std::vector<std::string>& label = labels[i];
    const double first_line = y + kRow / 2 + 4 - (label.size() - 1) * kLine / 2;
    absl::StrAppend(&svg, "<text x=\"", Px(left - 8), "\" y=\"", Px(first_line),
                    "\" text-anchor=\"end\">");
    for (size_t line = 0; line < label.size(); ++line) {
      absl::StrAppend(&svg, "<tspan x=\"", Px(left - 8), "\" y=\"",
                      Px(first_line + line * kLine), "\">", EscapeHtml(label[line]),
                      "</tspan>");
    }
    absl::StrAppend(&svg, "<title>", EscapeHtml(b.label), "</title></text>");
    AppendBarRects(b, left, y + 4, kRow - 8, w, plot_width / scale.max, &svg);
    absl::StrAppend(&svg, "<text x=\"", Px(left + w + 5), "\" y=\"",
                    Px(y + kRow / 2 + 4), "\" fill=\"", kMutedInk, "\">",
                    EscapeHtml(b.value_text), "</text>");
  }
  if (chart.reference) {
    const double x = px(*chart.reference);
    absl::StrAppend(&svg, "<line x1=\"", Px(x), "\" y1=\"", Px(kTop - 4),
                    "\" x2=\"", Px(x), "\" y2=\"", Px(bottom), "\" stroke=\"",
                    kInk, "\" stroke-width=\"1.5\" stroke-dasharray=\"3 2\"/>");
  }
  absl::StrAppend(&svg, "<path d=\"M", Px(left), " ", Px(kTop), " V",
                  Px(bottom), " H", Px(left + plot_width),
                  "\" fill=\"none\" stroke=\"", kAxis, "\"/>");
  absl::StrAppend(&svg, "<text x=\"", Px(left + plot_width / 2), "\" y=\"",
                  Px(bottom + 38), "\" text-anchor=\"middle\">",
                  EscapeHtml(chart.x_label), "</text>");
  absl::StrAppend(&svg, legend_svg, "</svg>");
  return svg;
}

std::string RenderRooflineChart(const RooflineChart& chart) {
  if (chart.marks.empty()) return "";
  constexpr double kLeft = 66, kRight = 18, kTop = 40, kPlotHeight = 240;
  const double plot_width = kChartWidth - kLeft - kRight;
  // Decades that hold every mark, every ridge and every peak.
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = 0;
  double y_lo = std::numeric_limits<double>::infinity(), y_hi = 0;
  auto take = [&](double x, double y) {
    if (x > 0) x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
    if (y > 0) y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
  };
  for (const RooflineMark& m : chart.marks) take(m.intensity, m.flops_per_s);
  for (const Roof& r : chart.roofs) take(r.peak_flops_per_s / r.peak_bytes_per_s, r.peak_flops_per_s);
  if (!(x_hi > 0) || !(y_hi > 0)) return "";
  x_lo = std::pow(10.0, std::floor(std::log10(x_lo)));
  x_hi = std::pow(10.0, std::ceil(std::log10(x_hi) + 1e-9));
  y_lo = std::pow(10.0, std::floor(std::log10(y_lo)));
  y_hi = std::pow(10.0, std::ceil(std::log10(y_hi) + 1e-9));
  auto px = [&](double x) {
    return kLeft + (std::log10(x) - std::log10(x_lo)) / (std::log10(x_hi) - std::log10(x_lo)) *
                       plot_width;
  };
  auto py = [&](double y) {
    return kTop + kPlotHeight -
           (std::log10(y) - std::log10(y_lo)) / (std::log10(y_hi) - std::log10(y_lo)) *
               kPlotHeight;
  };
  std::vector<LegendEntry> legend;
  for (const Roof& r : chart.roofs) legend.push_back({r.label, r.color, Mark::kLine});
  for (const RooflineMark& m : chart.marks) legend.push_back({m.label, m.color, Mark::kBox});
  int rows = 0;
  const double legend_top = kTop + kPlotHeight + 62;
  const std::string legend_svg = Legend(legend, legend_top, &rows);
  std::string svg = SvgOpen(legend_top + (rows - 1) * kLegendRow + 10, chart.title);
  for (double x = x_lo; x <= x_hi * 1.001; x *= 10) {
    absl::StrAppend(&svg, "<line x1=\"", Px(px(x)), "\" y1=\"", Px(kTop), "\" x2=\"", Px(px(x)),
                    "\" y2=\"", Px(kTop + kPlotHeight), "\" stroke=\"", kGrid, "\"/>",
                    "<text x=\"", Px(px(x)), "\" y=\"", Px(kTop + kPlotHeight + 18),
                    "\" text-anchor=\"middle\" fill=\"", kMutedInk, "\">", TickLabel(x), "</text>");
  }
  for (double y = y_lo; y <= y_hi * 1.001; y *= 10) {
    absl::StrAppend(&svg, "<line x1=\"", Px(kLeft), "\" y1=\"", Px(py(y)), "\" x2=\"",
                    Px(kLeft + plot_width), "\" y2=\"", Px(py(y)), "\" stroke=\"", kGrid, "\"/>",
                    "<text x=\"", Px(kLeft - 6), "\" y=\"", Px(py(y) + 4),
                    "\" text-anchor=\"end\" fill=\"", kMutedInk, "\">", TickLabel(y / 1e12),
                    "</text>");
  }
  absl::StrAppend(&svg, "<path d=\"M", Px(kLeft), " ", Px(kTop), " V", Px(kTop + kPlotHeight),
                  " H", Px(kLeft + plot_width), "\" fill=\"none\" stroke=\"", kAxis, "\"/>");
  absl::StrAppend(&svg, "<text x=\"", Px(kLeft + plot_width / 2), "\" y=\"",
                  Px(kTop + kPlotHeight + 38),
                  "\" text-anchor=\"middle\">arithmetic intensity, FLOP per byte (log scale)"
                  "</text>");
  absl::StrAppend(&svg, "<text transform=\"translate(16 ", Px(kTop + kPlotHeight / 2),
                  ") rotate(-90)\" text-anchor=\"middle\">TFLOP/s (log scale)</text>");
  for (const Roof& r : chart.roofs) {
    // The slanted part starts where it enters the plot (at x_lo, or at y_lo).
    const double ridge = r.peak_flops_per_s / r.peak_bytes_per_s;
    const double x0 = std::max(x_lo, y_lo / r.peak_bytes_per_s);
    absl::StrAppend(&svg, "<polyline points=\"", Px(px(x0)), ",", Px(py(x0 * r.peak_bytes_per_s)),
                    " ", Px(px(ridge)), ",", Px(py(r.peak_flops_per_s)), " ", Px(px(x_hi)), ",",
                    Px(py(r.peak_flops_per_s)), "\" fill=\"none\" stroke=\"", r.color,
                    "\" stroke-width=\"2\"><title>", EscapeHtml(r.label), ": ridge at ",
                    FormatFigure(ridge), " FLOP/B</title></polyline>");
  }
  for (const RooflineMark& m : chart.marks) {
    if (m.intensity <= 0 || m.flops_per_s <= 0) continue;
    absl::StrAppend(&svg, "<circle cx=\"", Px(px(m.intensity)), "\" cy=\"", Px(py(m.flops_per_s)),
                    "\" r=\"5\" fill=\"", m.color, "\" stroke=\"#fff\" stroke-width=\"1\"><title>",
                    EscapeHtml(m.tooltip.empty() ? m.label : m.tooltip), "</title></circle>");
  }
  absl::StrAppend(&svg, legend_svg, "</svg>");
  return svg;
}

}  // namespace gpubench::report::internal
