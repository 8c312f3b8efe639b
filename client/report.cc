#include "client/report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/format.h"
#include "common/spec.h"
#include "common/version.h"

namespace gpubench::client {
namespace {

// ---------------------------------------------------------------- text

std::string Esc(std::string_view s) {
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

// Code points, not bytes: layout estimates must not grow with UTF-8 length.
int CodePoints(std::string_view s) {
  int n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// SVG text cannot be measured without a browser; 0.56 em is the mean advance
// of Helvetica/Arial/Liberation/DejaVu Sans over labels like ours, so layout
// errs on the side of room.
double TextWidth(std::string_view s, double font_px = 12) {
  return CodePoints(s) * font_px * 0.56;
}

// Cuts s to fit max_px, at a code point boundary, marking the cut.
std::string Fit(const std::string& s, double max_px) {
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

// Enough digits to tell neighbouring runs apart, no more than a run's noise.
std::string Fig(double v) {
  const double a = std::fabs(v);
  if (a >= 1000) return absl::StrFormat("%.0f", v);
  if (a >= 100) return absl::StrFormat("%.1f", v);
  if (a >= 10) return absl::StrFormat("%.2f", v);
  return absl::StrFormat("%.3f", v);
}

// Ticks land on nice numbers, so %g is exact and short.
std::string TickLabel(double v) {
  const double a = std::fabs(v);
  if (a >= 1e6) return absl::StrFormat("%gM", v / 1e6);
  if (a >= 1e4) return absl::StrFormat("%gk", v / 1e3);
  return absl::StrFormat("%g", v);
}

std::string When(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return "";
  const absl::Time at =
      absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", at, absl::UTCTimeZone());
}

absl::Duration Between(const google::protobuf::Timestamp& a,
                       const google::protobuf::Timestamp& b) {
  return absl::Seconds(b.seconds() - a.seconds()) +
         absl::Nanoseconds(b.nanos() - a.nanos());
}

// ---------------------------------------------------------------- config
// facets

// One column of a run's config. The table shows the facets that vary within a
// job; plots group runs by all facets but the one on their axis.
enum FacetId {
  kWorkload,
  kModelSize,
  kParams,
  kMode,
  kDevice,
  kBatch,
  kPrecision,
  kChannelsLast,
  kCudnnBenchmark,
  kExecution,
  kInput,
  kLoaders,
  kPinned,
  kPipeline,
  kOptimizer,
  kLearningRate,
  kFacetCount
};

using FacetMask = uint32_t;
constexpr FacetMask Bit(FacetId f) { return FacetMask{1} << f; }

struct Facet {
  const char* header;
  // A legend label is prefix + value + suffix: "fp16", "batch 64", "4 loaders".
  const char* prefix;
  const char* suffix;
  std::string (*value)(const v1::RunConfig&, const v1::RunResult&);
};

std::string OnOff(bool b) { return b ? "on" : "off"; }
bool HostInput(const v1::RunConfig& c) {
  return c.input_source() == v1::INPUT_SOURCE_HOST;
}
bool Trains(const v1::RunConfig& c) { return c.mode() != v1::MODE_INFER; }

const std::array<Facet, kFacetCount>& Facets() {
  using C = v1::RunConfig;
  using R = v1::RunResult;
  static const std::array<Facet, kFacetCount> facets = {{
      {"workload", "", "",
       [](const C& c, const R&) {
         return c.workload().empty() ? "-" : c.workload();
       }},
      {"size", "", "",
       [](const C& c, const R&) {
         return c.params().model_size().empty() ? "-" : c.params().model_size();
       }},
      {"params", "", "",
       [](const C& c, const R&) {
         v1::WorkloadParams rest = c.params();
         rest.clear_model_size();
         const std::string text = rest.ShortDebugString();
         return text.empty() ? std::string("-") : text;
       }},
      {"mode", "", "",
       [](const C& c, const R&) {
         return Short(v1::Mode_descriptor(), c.mode());
       }},
      {"device", "", "",
       [](const C& c, const R& r) {
         // The resolved device, so "auto" runs group by where they ran.
         if (!r.resolved_device().empty()) return r.resolved_device();
         return c.device().empty() ? std::string("auto") : c.device();
       }},
      {"batch", "batch ", "",
       [](const C& c, const R&) {
         return c.batch_size() > 0 ? absl::StrCat(c.batch_size())
                                   : std::string("default");
       }},
      {"precision", "", "",
       [](const C& c, const R&) {
         return Short(v1::Precision_descriptor(), c.precision());
       }},
      {"channels_last", "channels_last ", "",
       [](const C& c, const R&) { return OnOff(c.channels_last()); }},
      {"cudnn_benchmark", "cudnn_benchmark ", "",
       [](const C& c, const R&) { return OnOff(c.cudnn_benchmark()); }},
      {"execution", "", "",
       [](const C& c, const R&) {
         return Short(v1::Execution_descriptor(), c.execution());
       }},
      {"input", "input ", "",
       [](const C& c, const R&) {
         return Short(v1::InputSource_descriptor(), c.input_source());
       }},
      {"loaders", "", " loaders",
       [](const C& c, const R&) {
         return HostInput(c) ? absl::StrCat(c.pipeline().loader_threads())
                             : std::string("-");
       }},
      {"pinned", "pinned ", "",
       [](const C& c, const R&) {
         return HostInput(c) ? OnOff(c.pipeline().pinned_memory())
                             : std::string("-");
       }},
      {"pipeline", "", "",
       [](const C& c, const R&) {
         if (!HostInput(c)) return std::string("-");
         v1::InputPipeline rest = c.pipeline();
         rest.clear_loader_threads();
         rest.clear_pinned_memory();
         const std::string text = rest.ShortDebugString();
         return text.empty() ? std::string("-") : text;
       }},
      {"optimizer", "", "",
       [](const C& c, const R&) {
         return Trains(c) ? Short(v1::Optimizer_descriptor(), c.optimizer())
                          : std::string("-");
       }},
      {"lr", "lr ", "",
       [](const C& c, const R&) {
         if (!Trains(c)) return std::string("-");
         return c.learning_rate() > 0 ? absl::StrFormat("%g", c.learning_rate())
                                      : std::string("default");
       }},
  }};
  return facets;
}

using FacetValues = std::array<std::string, kFacetCount>;

FacetValues ValuesOf(const v1::RunConfig& c, const v1::RunResult& r) {
  FacetValues v;
  for (int f = 0; f < kFacetCount; ++f) v[f] = Facets()[f].value(c, r);
  return v;
}

// Identifies the group of runs that agree on every facet outside `excluded`.
std::string GroupKey(const FacetValues& v, FacetMask excluded) {
  std::string key;
  for (int f = 0; f < kFacetCount; ++f) {
    if (excluded & Bit(FacetId(f))) continue;
    absl::StrAppend(&key, v[f], "\x1f");
  }
  return key;
}

// Names a group by the facets that vary in its job, outside `excluded`.
std::string GroupLabel(const FacetValues& v,
                       const std::array<bool, kFacetCount>& varying,
                       FacetMask excluded) {
  std::vector<std::string> parts;
  for (int f = 0; f < kFacetCount; ++f) {
    if (!varying[f] || (excluded & Bit(FacetId(f))) || v[f] == "-") continue;
    parts.push_back(absl::StrCat(Facets()[f].prefix, v[f], Facets()[f].suffix));
  }
  return absl::StrJoin(parts, ", ");
}

// ---------------------------------------------------------------- SVG charts

constexpr double kChartWidth = 580;
constexpr double kLegendRow = 18;
constexpr char kInk[] = "#1f2328";
constexpr char kMutedInk[] = "#57606a";
constexpr char kAxis[] = "#8c959f";
constexpr char kGrid[] = "#e6e9ed";
constexpr char kFaster[] = "#4e9a5a";
constexpr char kSlower[] = "#d1495b";

// Tableau 10: distinguishable, and still tellable apart in greyscale print.
const char* SeriesColor(int i) {
  static constexpr const char* kPalette[] = {
      "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kPalette[i % 10];
}

std::string Px(double v) { return absl::StrFormat("%.1f", v); }

// 0 to a round maximum in about `ticks` round steps.
struct Scale {
  double max = 1;
  double step = 1;
};

Scale NiceScale(double max_value, int ticks = 5) {
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

enum class Mark { kLine, kDashedLine, kBox, kReference };

struct LegendEntry {
  std::string label;
  std::string color;
  Mark mark = Mark::kLine;
};

// Lays legend entries out in rows under a chart; returns the rows' SVG and
// sets *rows.
std::string Legend(const std::vector<LegendEntry>& entries, double top,
                   int* rows) {
  std::string svg;
  double x = 12;
  double y = top;
  *rows = entries.empty() ? 0 : 1;
  for (const LegendEntry& e : entries) {
    const std::string label = Fit(e.label, kChartWidth - 60);
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
                    Esc(label), "</text>");
    x += w;
  }
  return svg;
}

std::string SvgOpen(double height, const std::string& title) {
  return absl::StrCat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 "
      "0 ",
      Px(kChartWidth), " ", Px(height), "\" width=\"", Px(kChartWidth),
      "\" height=\"", Px(height), "\" role=\"img\" aria-label=\"", Esc(title),
      "\" font-family=\"Helvetica Neue, Arial, Liberation Sans, DejaVu Sans, "
      "sans-serif\" "
      "font-size=\"12\" fill=\"",
      kInk, "\"><title>", Esc(title),
      "</title><text x=\"12\" y=\"22\" font-size=\"14\" ",
      "font-weight=\"600\">", Esc(title), "</text>");
}

struct Series {
  std::string label;
  std::string color;
  bool dashed = false;
  std::vector<std::pair<double, double>> points;
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

// The data supports a line: some series has two points at different x.
bool Drawable(const LineChart& chart) {
  for (const Series& s : chart.series) {
    for (const auto& p : s.points) {
      if (p.first != s.points.front().first) return true;
    }
  }
  return false;
}

std::string RenderLineChart(LineChart chart) {
  constexpr double kLeft = 66, kRight = 18, kTop = 40, kPlotHeight = 210,
                   kPad = 12;
  const double plot_width = kChartWidth - kLeft - kRight;

  double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min,
         y_max = 0;
  double y_min_positive = std::numeric_limits<double>::infinity();
  std::vector<double> xs;
  for (Series& s : chart.series) {
    std::stable_sort(
        s.points.begin(), s.points.end(),
        [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [x, y] : s.points) {
      x_min = std::min(x_min, x);
      x_max = std::max(x_max, x);
      y_max = std::max(y_max, y);
      if (y > 0) y_min_positive = std::min(y_min_positive, y);
      xs.push_back(x);
    }
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  // Batch sizes double from point to point; a log axis spaces them evenly.
  const bool log_x = x_min > 0 && x_max / x_min >= 4;
  auto fx = [&](double x) { return log_x ? std::log2(x) : x; };
  auto px = [&](double x) {
    return kLeft + kPad +
           (fx(x) - fx(x_min)) / (fx(x_max) - fx(x_min)) *
               (plot_width - 2 * kPad);
  };
  const bool log_y = chart.log_y_when_wide && y_min_positive < y_max &&
                     y_max / y_min_positive >= 30;
  std::vector<double> y_ticks;
  double y_lo = 0, y_hi = 1;
  if (log_y) {
    y_lo = std::pow(10.0, std::floor(std::log10(y_min_positive)));
    y_hi = std::pow(10.0, std::ceil(std::log10(y_max)));
    const bool many_decades = y_hi / y_lo > 1e4;
    for (double decade = y_lo; decade <= y_hi * 1.001; decade *= 10) {
      for (double m : {1.0, 2.0, 5.0}) {
        if ((m == 1.0 || !many_decades) && decade * m <= y_hi * 1.001) {
          y_ticks.push_back(decade * m);
        }
      }
    }
  } else {
    const Scale scale = NiceScale(y_max * 1.04);
    y_hi = scale.max;
    for (double v = 0; v <= scale.max + scale.step * 1e-6; v += scale.step)
      y_ticks.push_back(v);
  }
  auto py = [&](double y) {
    const double f = log_y
                         ? (std::log10(std::max(y, y_lo)) - std::log10(y_lo)) /
                               (std::log10(y_hi) - std::log10(y_lo))
                         : (y - y_lo) / (y_hi - y_lo);
    return kTop + kPlotHeight - f * kPlotHeight;
  };

  std::vector<LegendEntry> legend;
  for (const Series& s : chart.series) {
    legend.push_back(
        {s.label, s.color, s.dashed ? Mark::kDashedLine : Mark::kLine});
  }
  int rows = 0;
  const double legend_top = kTop + kPlotHeight + 62;
  const std::string legend_svg = Legend(legend, legend_top, &rows);
  const double height = legend_top + (rows - 1) * kLegendRow + 10;

  std::string svg = SvgOpen(height, chart.title);
  // Horizontal grid and y ticks.
  for (double v : y_ticks) {
    const double y = py(v);
    absl::StrAppend(&svg, "<line x1=\"", Px(kLeft), "\" y1=\"", Px(y),
                    "\" x2=\"", Px(kLeft + plot_width), "\" y2=\"", Px(y),
                    "\" stroke=\"", kGrid, "\"/>");
    absl::StrAppend(&svg, "<text x=\"", Px(kLeft - 6), "\" y=\"", Px(y + 4),
                    "\" text-anchor=\"end\" fill=\"", kMutedInk, "\">",
                    TickLabel(v), "</text>");
  }
  // x ticks at the data's own x values, dropping any that would collide.
  if (!log_x && xs.size() > 12) {
    xs.clear();
    const Scale s = NiceScale(x_max);
    for (double v = 0; v <= s.max + s.step * 1e-6; v += s.step) {
      if (v >= x_min && v <= x_max) xs.push_back(v);
    }
  }
  double last_right = -1e9;
  for (double v : xs) {
    const std::string label = TickLabel(v);
    const double x = px(v);
    const double half = TextWidth(label) / 2;
    if (x - half < last_right + 8) continue;
    last_right = x + half;
    absl::StrAppend(&svg, "<line x1=\"", Px(x), "\" y1=\"", Px(kTop),
                    "\" x2=\"", Px(x), "\" y2=\"", Px(kTop + kPlotHeight),
                    "\" stroke=\"", kGrid, "\"/>");
    absl::StrAppend(&svg, "<line x1=\"", Px(x), "\" y1=\"",
                    Px(kTop + kPlotHeight), "\" x2=\"", Px(x), "\" y2=\"",
                    Px(kTop + kPlotHeight + 4), "\" stroke=\"", kAxis, "\"/>");
    absl::StrAppend(&svg, "<text x=\"", Px(x), "\" y=\"",
                    Px(kTop + kPlotHeight + 18),
                    "\" text-anchor=\"middle\" fill=\"", kMutedInk, "\">",
                    label, "</text>");
  }
  // Axes and their labels.
  absl::StrAppend(&svg, "<path d=\"M", Px(kLeft), " ", Px(kTop), " V",
                  Px(kTop + kPlotHeight), " H", Px(kLeft + plot_width),
                  "\" fill=\"none\" stroke=\"", kAxis, "\"/>");
  absl::StrAppend(&svg, "<text x=\"", Px(kLeft + plot_width / 2), "\" y=\"",
                  Px(kTop + kPlotHeight + 38), "\" text-anchor=\"middle\">",
                  Esc(chart.x_label + (log_x ? " (log scale)" : "")),
                  "</text>");
  absl::StrAppend(
      &svg, "<text transform=\"translate(16 ", Px(kTop + kPlotHeight / 2),
      ") rotate(-90)\" text-anchor=\"middle\">",
      Esc(chart.y_label + (log_y ? " (log scale)" : "")), "</text>");
  // Lines, then points over them.
  for (const Series& s : chart.series) {
    std::vector<std::string> pts;
    for (const auto& [x, y] : s.points)
      pts.push_back(absl::StrCat(Px(px(x)), ",", Px(py(y))));
    if (pts.size() > 1) {
      absl::StrAppend(&svg, "<polyline points=\"", absl::StrJoin(pts, " "),
                      "\" fill=\"none\" stroke=\"", s.color,
                      "\" stroke-width=\"2\"",
                      s.dashed ? " stroke-dasharray=\"6 4\"" : "", "/>");
    }
    for (const auto& [x, y] : s.points) {
      absl::StrAppend(&svg, "<circle cx=\"", Px(px(x)), "\" cy=\"", Px(py(y)),
                      "\" r=\"3.5\" fill=\"", s.dashed ? "#fff" : s.color,
                      "\" stroke=\"", s.color,
                      "\" stroke-width=\"1.5\"><title>", Esc(s.label), ": ",
                      Esc(chart.x_label), " ", TickLabel(x), ", ", Fig(y),
                      "</title></circle>");
    }
  }
  absl::StrAppend(&svg, legend_svg, "</svg>");
  return svg;
}

struct Bar {
  std::string label;
  double value = 0;
  std::string value_text;
  std::string color;
  std::string tooltip;
};

struct BarChart {
  std::string title;
  std::string x_label;
  std::vector<Bar> bars;
  // A dashed vertical line, e.g. at 1x for speedups.
  std::optional<double> reference;
  std::vector<LegendEntry> legend;
};

// Horizontal bars: labels such as "fp16 + channels_last, batch 256" read
// better along rows than under columns.
std::string RenderBarChart(const BarChart& chart) {
  constexpr double kTop = 40, kRow = 22, kRight = 64, kMaxLabel = 230;
  double label_width = 0;
  for (const Bar& b : chart.bars)
    label_width = std::max(label_width, TextWidth(b.label));
  label_width = std::min(label_width, kMaxLabel);
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
    absl::StrAppend(&svg, "<text x=\"", Px(left - 8), "\" y=\"",
                    Px(y + kRow / 2 + 4), "\" text-anchor=\"end\">",
                    Esc(Fit(b.label, kMaxLabel)), "<title>", Esc(b.label),
                    "</title></text>");
    absl::StrAppend(&svg, "<rect x=\"", Px(left), "\" y=\"", Px(y + 4),
                    "\" width=\"", Px(w), "\" height=\"", Px(kRow - 8),
                    "\" rx=\"2\" fill=\"", b.color, "\"><title>",
                    Esc(b.tooltip.empty() ? b.label : b.tooltip),
                    "</title></rect>");
    absl::StrAppend(&svg, "<text x=\"", Px(left + w + 5), "\" y=\"",
                    Px(y + kRow / 2 + 4), "\" fill=\"", kMutedInk, "\">",
                    Esc(b.value_text), "</text>");
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
                  Esc(chart.x_label), "</text>");
  absl::StrAppend(&svg, legend_svg, "</svg>");
  return svg;
}

// ---------------------------------------------------------------- one job

// Figures of these states are whole measurements; plots use only them.
bool Succeeded(const v1::Run& r) {
  return r.state() == v1::RUN_STATE_SUCCEEDED &&
         r.result().throughput_samples_per_s() > 0;
}

// Cancelled runs keep partial figures; the table shows them, flagged.
bool HasFigures(const v1::Run& r) {
  return r.state() == v1::RUN_STATE_SUCCEEDED ||
         r.state() == v1::RUN_STATE_CANCELLED;
}

struct JobView {
  const ReportJob* src = nullptr;
  std::vector<const v1::Run*> runs;  // by index
  std::vector<FacetValues> values;   // per run
  std::array<bool, kFacetCount> varying{};
};

JobView MakeView(const ReportJob& job) {
  JobView view;
  view.src = &job;
  for (const v1::Run& r : job.runs) view.runs.push_back(&r);
  std::stable_sort(view.runs.begin(), view.runs.end(),
                   [](const v1::Run* a, const v1::Run* b) {
                     return a->index() < b->index();
                   });
  for (const v1::Run* r : view.runs)
    view.values.push_back(ValuesOf(r->config(), r->result()));
  for (size_t i = 1; i < view.values.size(); ++i) {
    for (int f = 0; f < kFacetCount; ++f) {
      if (view.values[i][f] != view.values[0][f]) view.varying[f] = true;
    }
  }
  return view;
}

// Groups a job's runs that agree outside `excluded`, in order of first
// appearance, keeping only the runs `keep` accepts.
template <typename Keep>
std::vector<std::vector<size_t>> Groups(const JobView& view, FacetMask excluded,
                                        Keep keep) {
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < view.runs.size(); ++i) {
    if (!keep(*view.runs[i])) continue;
    const std::string key = GroupKey(view.values[i], excluded);
    auto [it, added] = by_key.emplace(key, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

std::string LabelOr(std::string label, const std::string& fallback) {
  return label.empty() ? fallback : label;
}

std::string Figure(const std::string& svg) {
  return absl::StrCat("<figure>", svg, "</figure>\n");
}

std::string BatchPlots(const JobView& view) {
  const auto groups = Groups(view, Bit(kBatch), [](const v1::Run& r) {
    return Succeeded(r) && r.config().batch_size() > 0;
  });
  LineChart tput{"Throughput vs batch size", "batch size", "samples/s", {}};
  LineChart latency{"Latency (p50, p95) vs batch size",
                    "batch size",
                    "ms per step",
                    {},
                    true};
  bool device_memory = false;
  int64_t max_bytes = 0;
  for (const auto& g : groups) {
    for (size_t i : g) {
      const auto& m = view.runs[i]->result().memory();
      if (m.peak_device_allocated_bytes() > 0) device_memory = true;
      max_bytes = std::max({max_bytes, m.peak_device_allocated_bytes(),
                            m.peak_host_rss_bytes()});
    }
  }
  const bool gib = max_bytes >= (int64_t{1} << 30);
  LineChart memory{device_memory ? "Peak device memory vs batch size"
                                 : "Peak host RSS vs batch size",
                   "batch size",
                   absl::StrCat(device_memory ? "peak allocated" : "peak RSS",
                                gib ? " (GiB)" : " (MiB)"),
                   {}};
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& g = groups[gi];
    const std::string label =
        LabelOr(GroupLabel(view.values[g[0]], view.varying, Bit(kBatch)),
                view.values[g[0]][kWorkload]);
    const std::string color = SeriesColor(gi);
    Series t{label, color, false, {}}, p50{label + " p50", color, false, {}},
        p95{label + " p95", color, true, {}}, mem{label, color, false, {}};
    for (size_t i : g) {
      const v1::Run& r = *view.runs[i];
      const double batch = r.config().batch_size();
      const auto& res = r.result();
      t.points.push_back({batch, res.throughput_samples_per_s()});
      if (res.latency().p50_ms() > 0)
        p50.points.push_back({batch, res.latency().p50_ms()});
      if (res.latency().p95_ms() > 0)
        p95.points.push_back({batch, res.latency().p95_ms()});
      const int64_t bytes = device_memory
                                ? res.memory().peak_device_allocated_bytes()
                                : res.memory().peak_host_rss_bytes();
      if (bytes > 0)
        mem.points.push_back({batch, bytes / double(gib ? 1 << 30 : 1 << 20)});
    }
    tput.series.push_back(std::move(t));
    if (!p50.points.empty()) latency.series.push_back(std::move(p50));
    if (!p95.points.empty()) latency.series.push_back(std::move(p95));
    if (!mem.points.empty()) memory.series.push_back(std::move(mem));
  }
  std::string out;
  for (const LineChart* c : {&tput, &latency, &memory}) {
    if (Drawable(*c)) out += Figure(RenderLineChart(*c));
  }
  return out;
}

constexpr size_t kMaxBars = 40;

std::vector<LegendEntry> SpeedupLegend(const std::string& baseline) {
  return {{"faster than " + baseline, kFaster, Mark::kBox},
          {"slower", kSlower, Mark::kBox},
          {"1\u00d7 = " + baseline, kInk, Mark::kReference}};
}

Bar SpeedupBar(std::string label, const v1::Run& run, const v1::Run& base) {
  const double a = run.result().throughput_samples_per_s();
  const double b = base.result().throughput_samples_per_s();
  const double ratio = a / b;
  return {std::move(label), ratio, absl::StrFormat("%.2f\u00d7", ratio),
          ratio >= 1 ? kFaster : kSlower,
          absl::StrCat(Fig(a), " vs ", Fig(b), " samples/s")};
}

void CapBars(BarChart* chart) {
  if (chart->bars.size() <= kMaxBars) return;
  const size_t all = chart->bars.size();
  chart->bars.resize(kMaxBars);
  chart->title += absl::StrFormat(" (first %d of %d)", kMaxBars, all);
}

std::string DeviceSpeedupPlot(const JobView& view) {
  BarChart chart{"Speedup by device",
                 "throughput ratio (\u00d7)",
                 {},
                 1.0,
                 SpeedupLegend("the baseline device")};
  for (const auto& g : Groups(view, Bit(kDevice), Succeeded)) {
    // CPU is the natural baseline; without one, the first device listed.
    size_t base = g[0];
    for (size_t i : g) {
      if (view.values[i][kDevice] == "cpu") {
        base = i;
        break;
      }
    }
    const std::string context =
        GroupLabel(view.values[base], view.varying, Bit(kDevice));
    for (size_t i : g) {
      if (view.values[i][kDevice] == view.values[base][kDevice]) continue;
      std::string label = absl::StrCat(view.values[i][kDevice], " vs ",
                                       view.values[base][kDevice]);
      if (!context.empty()) absl::StrAppend(&label, " \u00b7 ", context);
      chart.bars.push_back(
          SpeedupBar(std::move(label), *view.runs[i], *view.runs[base]));
    }
  }
  if (chart.bars.empty()) return "";
  CapBars(&chart);
  return Figure(RenderBarChart(chart));
}

bool Fp32(const v1::RunConfig& c) {
  return c.precision() == v1::PRECISION_FP32 ||
         c.precision() == v1::PRECISION_UNSPECIFIED;
}

bool IsBaseline(const v1::RunConfig& c) {
  return Fp32(c) && !c.channels_last() &&
         c.execution() != v1::EXECUTION_CUDA_GRAPH;
}

std::string OptimisedPlot(const JobView& view) {
  constexpr FacetMask kOptimisations =
      Bit(kPrecision) | Bit(kChannelsLast) | Bit(kExecution);
  BarChart chart{"Optimised vs baseline (fp32, eager, no channels_last)",
                 "throughput ratio (\u00d7)",
                 {},
                 1.0,
                 SpeedupLegend("baseline")};
  for (const auto& g : Groups(view, kOptimisations, Succeeded)) {
    std::optional<size_t> base;
    for (size_t i : g) {
      if (IsBaseline(view.runs[i]->config())) {
        base = i;
        break;
      }
    }
    if (!base) continue;
    const std::string context =
        GroupLabel(view.values[*base], view.varying, kOptimisations);
    for (size_t i : g) {
      const v1::RunConfig& c = view.runs[i]->config();
      if (IsBaseline(c)) continue;
      std::vector<std::string> what;
      if (!Fp32(c)) what.push_back(view.values[i][kPrecision]);
      if (c.channels_last()) what.push_back("channels_last");
      if (c.execution() == v1::EXECUTION_CUDA_GRAPH)
        what.push_back("cuda_graph");
      std::string label = absl::StrJoin(what, " + ");
      if (!context.empty()) absl::StrAppend(&label, " \u00b7 ", context);
      chart.bars.push_back(
          SpeedupBar(std::move(label), *view.runs[i], *view.runs[*base]));
    }
  }
  if (chart.bars.empty()) return "";
  CapBars(&chart);
  return Figure(RenderBarChart(chart));
}

std::string DataWaitPlot(const JobView& view) {
  const auto groups = Groups(view, Bit(kLoaders), [](const v1::Run& r) {
    return Succeeded(r) && HostInput(r.config());
  });
  LineChart chart{"Data-wait share vs loader threads",
                  "loader threads",
                  "data wait (% of measured time)",
                  {}};
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& g = groups[gi];
    Series s{LabelOr(GroupLabel(view.values[g[0]], view.varying, Bit(kLoaders)),
                     view.values[g[0]][kWorkload] + ", host input"),
             SeriesColor(gi),
             false,
             {}};
    for (size_t i : g) {
      const v1::Run& r = *view.runs[i];
      s.points.push_back({double(r.config().pipeline().loader_threads()),
                          100 * r.result().data_wait_share()});
    }
    chart.series.push_back(std::move(s));
  }
  return Drawable(chart) ? Figure(RenderLineChart(chart)) : "";
}

// Stable colours per category across every operator chart of the page.
const char* CategoryColor(const std::string& category) {
  static const std::map<std::string, int> kOrder = {
      {"convolution", 0},   {"matmul", 1},      {"attention", 2},
      {"normalization", 3}, {"elementwise", 4}, {"pooling", 5},
      {"rnn", 6},           {"memcpy_h2d", 7},  {"memcpy_d2h", 7},
      {"memcpy_d2d", 7},    {"optimizer", 8}};
  auto it = kOrder.find(category);
  return it == kOrder.end() ? "#bab0ac" : SeriesColor(it->second);
}

constexpr int kMaxOperatorCharts = 8;
constexpr int kMaxOperators = 12;

std::string OperatorPlots(const JobView& view) {
  std::string out;
  int charts = 0, skipped = 0;
  for (size_t i = 0; i < view.runs.size(); ++i) {
    const v1::Run& r = *view.runs[i];
    const auto& profile = r.result().profile();
    if (profile.top_operators().empty()) continue;
    if (charts == kMaxOperatorCharts) {
      ++skipped;
      continue;
    }
    ++charts;
    const std::string context = GroupLabel(view.values[i], view.varying, 0);
    BarChart chart{
        absl::StrCat("Top operators \u00b7 run #", r.index(),
                     context.empty() ? "" : absl::StrCat(" (", context, ")")),
        absl::StrCat("share of ", profile.device_times() ? "device" : "CPU",
                     " self time (%)"),
        {},
        std::nullopt,
        {}};
    std::vector<const v1::OperatorStat*> ops;
    for (const auto& op : profile.top_operators()) ops.push_back(&op);
    std::stable_sort(ops.begin(), ops.end(), [](const auto* a, const auto* b) {
      return a->share() > b->share();
    });
    if (ops.size() > kMaxOperators) ops.resize(kMaxOperators);
    std::vector<std::string> categories;
    for (const auto* op : ops) {
      const std::string category =
          op->category().empty() ? "other" : op->category();
      chart.bars.push_back(
          {op->name(), 100 * op->share(),
           absl::StrFormat("%.1f%%", 100 * op->share()),
           CategoryColor(category),
           absl::StrFormat("%s: %d calls, %.0f us self, %s", op->name(),
                           op->count(), op->self_time_us(), category)});
      if (std::find(categories.begin(), categories.end(), category) ==
          categories.end()) {
        categories.push_back(category);
        chart.legend.push_back({category, CategoryColor(category), Mark::kBox});
      }
    }
    out += Figure(RenderBarChart(chart));
  }
  if (skipped > 0) {
    out += absl::StrFormat(
        "<p class=\"note\">%d more profiled runs not drawn.</p>\n", skipped);
  }
  return out;
}

// ---------------------------------------------------------------- HTML

std::string StatePill(const std::string& text, const std::string& cls) {
  return absl::StrCat("<span class=\"pill ", cls, "\">", Esc(text), "</span>");
}

std::string RunStateClass(v1::RunState s) {
  switch (s) {
    case v1::RUN_STATE_SUCCEEDED:
      return "ok";
    case v1::RUN_STATE_FAILED:
      return "bad";
    case v1::RUN_STATE_OUT_OF_MEMORY:
    case v1::RUN_STATE_CANCELLED:
      return "warn";
    default:
      return "muted";
  }
}

std::string JobStateClass(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_SUCCEEDED:
      return "ok";
    case v1::JOB_STATE_FAILED:
      return "bad";
    case v1::JOB_STATE_CANCELLED:
    case v1::JOB_STATE_INTERRUPTED:
      return "warn";
    default:
      return "muted";
  }
}

std::string Flags(const v1::Run& r) {
  const auto& res = r.result();
  std::vector<std::string> flags;
  if (HasFigures(r)) {
    if (!res.stable()) flags.push_back(StatePill("unstable", "warn"));
    if (r.state() == v1::RUN_STATE_CANCELLED)
      flags.push_back(StatePill("partial", "warn"));
    if (res.bandwidth_gb_per_s() > 0) {
      flags.push_back(StatePill(
          absl::StrFormat("%.1f GB/s", res.bandwidth_gb_per_s()), "info"));
    } else if (res.achieved_tflops() > 0) {
      flags.push_back(StatePill(
          absl::StrFormat("%.1f TFLOP/s", res.achieved_tflops()), "info"));
    }
  }
  if (res.telemetry().throttled()) {
    std::string text = "throttled";
    if (!res.telemetry().throttle_reasons().empty()) {
      absl::StrAppend(&text, ": ",
                      absl::StrJoin(res.telemetry().throttle_reasons(), ", "));
    }
    flags.push_back(StatePill(text, "warn"));
  }
  switch (r.history().verdict()) {
    case v1::VERDICT_REGRESSED:
      flags.push_back(StatePill(
          absl::StrFormat("regressed %.2f\u00d7", r.history().ratio()), "bad"));
      break;
    case v1::VERDICT_IMPROVED:
      flags.push_back(StatePill(
          absl::StrFormat("improved %.2f\u00d7", r.history().ratio()), "ok"));
      break;
    default:
      break;
  }
  if (!r.error().empty()) {
    const std::string shown = r.error().size() > 100
                                  ? r.error().substr(0, 100) + "\u2026"
                                  : r.error();
    flags.push_back(absl::StrCat("<span class=\"err\" title=\"", Esc(r.error()),
                                 "\">", Esc(shown), "</span>"));
  }
  return absl::StrJoin(flags, " ");
}

std::string Td(const std::string& html, bool num = false) {
  return absl::StrCat(num ? "<td class=\"num\">" : "<td>", html, "</td>");
}

std::string RunTable(const JobView& view) {
  if (view.runs.empty()) return "<p class=\"note\">No runs.</p>\n";
  std::string out =
      "<div class=\"tablewrap\"><table class=\"runs\"><thead><tr><th "
      "class=\"num\">#</th>";
  for (int f = 0; f < kFacetCount; ++f) {
    if (view.varying[f])
      absl::StrAppend(&out, "<th>", Facets()[f].header, "</th>");
  }
  absl::StrAppend(
      &out,
      "<th>state</th><th class=\"num\">samples/s</th><th class=\"num\">95% "
      "CI</th>"
      "<th class=\"num\">p50 ms</th><th class=\"num\">p95 ms</th>"
      "<th class=\"num\">p99 ms</th><th class=\"num\">data wait</th>"
      "<th class=\"num\">peak mem</th><th class=\"num\">loss first&gt;last</th>"
      "<th>flags</th></tr></thead><tbody>\n");
  for (size_t i = 0; i < view.runs.size(); ++i) {
    const v1::Run& r = *view.runs[i];
    const auto& res = r.result();
    out += "<tr>";
    out += Td(absl::StrCat(r.index()), true);
    for (int f = 0; f < kFacetCount; ++f) {
      if (view.varying[f])
        out += Td(Esc(view.values[i][f]), f == kBatch || f == kLoaders);
    }
    out += Td(StatePill(Short(v1::RunState_descriptor(), r.state()),
                        RunStateClass(r.state())));
    std::string tput = "-", ci = "-", p50 = "-", p95 = "-", p99 = "-",
                wait = "-", loss = "-";
    if (HasFigures(r)) {
      tput = Fig(res.throughput_samples_per_s());
      if (res.throughput_ci_high() > 0) {
        ci = absl::StrCat(Fig(res.throughput_ci_low()), "\u2013",
                          Fig(res.throughput_ci_high()));
      }
      p50 = Fig(res.latency().p50_ms());
      p95 = Fig(res.latency().p95_ms());
      p99 = Fig(res.latency().p99_ms());
      wait = absl::StrFormat("%.1f%%", 100 * res.data_wait_share());
      if (Trains(r.config()) &&
          (res.first_loss() != 0 || res.last_loss() != 0)) {
        loss = absl::StrFormat("%.3f &gt; %.3f", res.first_loss(),
                               res.last_loss());
      }
    }
    const int64_t device_bytes = res.memory().peak_device_allocated_bytes();
    const std::string mem =
        device_bytes > 0 ? Bytes(device_bytes)
        : res.memory().peak_host_rss_bytes() > 0
            ? Bytes(res.memory().peak_host_rss_bytes()) + " RSS"
            : "-";
    out += Td(tput, true) +
           Td(absl::StrCat("<span class=\"ci\">", ci, "</span>"), true) +
           Td(p50, true) + Td(p95, true) + Td(p99, true) + Td(wait, true) +
           Td(mem, true) + Td(loss, true) + "<td class=\"flags\">" + Flags(r) +
           "</td>";
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
  return out;
}

std::string MaxBatchFits(const JobView& view) {
  const auto& fits = view.src->job.max_batch_size_fits();
  if (fits.empty()) return "-";
  std::vector<std::pair<std::string, int>> rows;
  for (const auto& [key, batch] : fits) {
    std::string label;
    if (auto config = ParseConfigKey(key); config.ok()) {
      label = GroupLabel(ValuesOf(*config, {}), view.varying, Bit(kBatch));
      if (label.empty()) label = ValuesOf(*config, {})[kWorkload];
    } else {
      label = key;  // written by another version; show it as it is
    }
    rows.push_back({label, batch});
  }
  std::sort(rows.begin(), rows.end());
  std::vector<std::string> parts;
  for (const auto& [label, batch] : rows) {
    parts.push_back(absl::StrCat("<span class=\"kv\">", Esc(label), ": <b>",
                                 batch, "</b></span>"));
  }
  return absl::StrJoin(parts, " ");
}

std::string JobId(const v1::Job& job) {
  return job.job_id().empty() ? "job" : job.job_id();
}

std::string JobSection(const ReportJob& job) {
  const JobView view = MakeView(job);
  const v1::Job& j = job.job;
  std::string out = absl::StrCat(
      "<section class=\"job\" id=\"job-", Esc(JobId(j)), "\">\n<h2>",
      Esc(j.spec().name().empty() ? "Job " + j.job_id() : j.spec().name()), " ",
      StatePill(Short(v1::JobState_descriptor(), j.state()),
                JobStateClass(j.state())),
      "</h2>\n<dl class=\"summary\">");
  auto row = [&out](const std::string& name, const std::string& html) {
    absl::StrAppend(&out, "<dt>", name, "</dt><dd>", html, "</dd>");
  };
  row("job id", absl::StrCat("<code>", Esc(j.job_id()), "</code>"));
  row("name", j.spec().name().empty() ? "-" : Esc(j.spec().name()));
  row("state", StatePill(Short(v1::JobState_descriptor(), j.state()),
                         JobStateClass(j.state())));
  std::string host = Esc(job.host.empty() ? "local" : job.host);
  if (!j.host_id().empty())
    absl::StrAppend(&host, " <span class=\"muted\">(", Esc(j.host_id()),
                    ")</span>");
  row("host", host);
  int succeeded = 0;
  for (const v1::Run* r : view.runs)
    succeeded += r->state() == v1::RUN_STATE_SUCCEEDED;
  row("runs", absl::StrFormat("%d of %d done, %d succeeded", j.runs_done(),
                              std::max<int>(j.run_count(), view.runs.size()),
                              succeeded));
  std::string times =
      Esc(When(j.submit_time()).empty() ? "-"
                                        : "submitted " + When(j.submit_time()));
  if (!When(j.start_time()).empty() && !When(j.end_time()).empty()) {
    absl::StrAppend(
        &times, "; ran ",
        Esc(absl::FormatDuration(absl::Trunc(
            Between(j.start_time(), j.end_time()), absl::Seconds(1)))),
        " from ", Esc(When(j.start_time())));
  }
  row("time", times);
  row("max batch that fit", MaxBatchFits(view));
  if (!j.schedule_id().empty()) row("schedule", Esc(j.schedule_id()));
  if (!j.error().empty())
    row("error",
        absl::StrCat("<span class=\"err\">", Esc(j.error()), "</span>"));
  if (!j.worker_exit().empty()) row("worker exit", Esc(j.worker_exit()));
  out += "</dl>\n";
  if (!j.worker_stderr_tail().empty()) {
    absl::StrAppend(&out, "<pre class=\"stderr\">", Esc(j.worker_stderr_tail()),
                    "</pre>\n");
  }
  if (!view.runs.empty()) {
    std::vector<std::string> fixed;
    for (int f = 0; f < kFacetCount; ++f) {
      if (view.varying[f] || view.values[0][f] == "-") continue;
      fixed.push_back(absl::StrCat("<span class=\"kv\">", Facets()[f].header,
                                   " <b>", Esc(view.values[0][f]),
                                   "</b></span>"));
    }
    if (!fixed.empty()) {
      absl::StrAppend(&out, "<p class=\"fixed\">Every run: ",
                      absl::StrJoin(fixed, " "), "</p>\n");
    }
  }
  out += RunTable(view);
  const std::string plots = BatchPlots(view) + DeviceSpeedupPlot(view) +
                            OptimisedPlot(view) + DataWaitPlot(view) +
                            OperatorPlots(view);
  if (!plots.empty())
    absl::StrAppend(&out, "<div class=\"plots\">\n", plots, "</div>\n");
  out += "</section>\n";
  return out;
}

constexpr char kCss[] = R"css(
:root { color-scheme: light; }
body { margin: 0; background: #f6f7f9; color: #1f2328;
  font: 14px/1.45 "Helvetica Neue", Arial, "Liberation Sans", "DejaVu Sans", sans-serif; }
main { max-width: 1220px; margin: 0 auto; padding: 20px 24px 40px; }
header h1 { font-size: 24px; margin: 4px 0 4px; }
header .meta { color: #57606a; margin: 0 0 6px; }
header ul { margin: 4px 0 16px; padding-left: 20px; }
a { color: #0969da; text-decoration: none; }
.job { background: #fff; border: 1px solid #d0d7de; border-radius: 8px;
  padding: 14px 20px 18px; margin: 0 0 20px; }
.job h2 { font-size: 18px; margin: 0 0 10px; }
dl.summary { display: grid; grid-template-columns: max-content 1fr; gap: 3px 16px; margin: 0 0 10px; }
dl.summary dt { color: #57606a; }
dl.summary dd { margin: 0; }
.fixed { color: #57606a; margin: 6px 0 10px; }
.kv { display: inline-block; margin-right: 12px; }
.muted, .ci { color: #6e7781; }
.note { color: #57606a; font-style: italic; }
.err { color: #a40e26; }
pre.stderr { background: #f6f8fa; border: 1px solid #d0d7de; padding: 8px; font-size: 12px;
  overflow-x: auto; }
.tablewrap { overflow-x: auto; margin: 0 0 14px; }
table.runs { border-collapse: collapse; font-size: 13px; }
table.runs th, table.runs td { padding: 4px 9px; border-bottom: 1px solid #eaeef2;
  white-space: nowrap; text-align: left; }
table.runs th { background: #f3f5f7; font-weight: 600; border-bottom: 1px solid #d0d7de; }
table.runs td.flags { white-space: normal; min-width: 180px; max-width: 320px; }
table.runs .num { text-align: right; font-variant-numeric: tabular-nums; }
table.runs tbody tr:nth-child(even) { background: #fafbfc; }
.pill { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px;
  line-height: 18px; background: #eaeef2; color: #424a53; }
h2 .pill { vertical-align: middle; }
.pill.ok { background: #dafbe1; color: #116329; }
.pill.bad { background: #ffebe9; color: #a40e26; }
.pill.warn { background: #fff8c5; color: #7d4e00; }
.pill.info { background: #ddf4ff; color: #0550ae; }
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(540px, 1fr)); gap: 14px; }
figure { margin: 0; border: 1px solid #eaeef2; border-radius: 6px; padding: 6px; background: #fff; }
svg.chart { display: block; width: 100%; height: auto; }
footer { color: #6e7781; font-size: 12px; text-align: center; margin-top: 8px; }
)css";

}  // namespace

std::string RenderReport(const std::vector<ReportJob>& jobs,
                         const std::string& title) {
  // Hosts in order of first appearance, each with the host ids seen on it.
  std::vector<std::pair<std::string, std::vector<std::string>>> hosts;
  for (const ReportJob& job : jobs) {
    const std::string name = job.host.empty() ? "local" : job.host;
    auto it = std::find_if(hosts.begin(), hosts.end(),
                           [&](const auto& h) { return h.first == name; });
    if (it == hosts.end()) it = hosts.insert(hosts.end(), {name, {}});
    const std::string& id = job.job.host_id();
    if (!id.empty() && std::find(it->second.begin(), it->second.end(), id) ==
                           it->second.end()) {
      it->second.push_back(id);
    }
  }
  std::vector<std::string> host_parts;
  for (const auto& [name, ids] : hosts) {
    host_parts.push_back(
        ids.empty() ? Esc(name)
                    : absl::StrCat(Esc(name), " <span class=\"muted\">(",
                                   Esc(absl::StrJoin(ids, ", ")), ")</span>"));
  }

  std::string out = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, "
      "initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"gpubench ",
      kGpubenchVersion, "\">\n<title>", Esc(title), "</title>\n<style>", kCss,
      "</style>\n</head>\n<body>\n<main>\n<header>\n<h1>", Esc(title),
      "</h1>\n<p class=\"meta\">", "Generated ",
      absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::Now(),
                       absl::UTCTimeZone()),
      " \u00b7 ", jobs.size(), jobs.size() == 1 ? " job" : " jobs", " \u00b7 ",
      hosts.size() == 1 ? "host " : "hosts ",
      host_parts.empty() ? "-" : absl::StrJoin(host_parts, ", "), "</p>\n");
  if (jobs.size() > 1) {
    out += "<ul class=\"toc\">";
    for (const ReportJob& job : jobs) {
      const v1::Job& j = job.job;
      absl::StrAppend(
          &out, "<li><a href=\"#job-", Esc(JobId(j)), "\">",
          Esc(j.spec().name().empty() ? j.job_id() : j.spec().name()),
          "</a> <span class=\"muted\">", Esc(j.job_id()), "</span></li>");
    }
    out += "</ul>\n";
  }
  out += "</header>\n";
  if (jobs.empty()) out += "<p class=\"note\">No jobs.</p>\n";
  for (const ReportJob& job : jobs) out += JobSection(job);
  absl::StrAppend(
      &out, "<footer>gpubench ", kGpubenchVersion,
      " \u00b7 self-contained report: inline CSS and SVG, no scripts</footer>\n"
      "</main>\n</body>\n</html>\n");
  return out;
}

}  // namespace gpubench::client
