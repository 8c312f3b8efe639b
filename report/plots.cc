#include "report/plots.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/spec.h"
#include "common/workload_registry.h"
#include "report/breakdown_plots.h"
#include "report/chart.h"
#include "report/figures.h"
#include "report/format.h"
#include "report/language_model_plots.h"
#include "report/serve_table.h"
#include "report/roofline.h"
#include "report/speedup.h"

namespace gpubench::report::internal {
namespace {

std::string LabelOr(std::string label, const std::string& fallback) {
  return label.empty() ? fallback : label;
}


// A measured throughput at x with its 95% interval, where the run has one.
void AddThroughput(double x, const v1::RunResult& res, Series* s) {
  s->points.push_back({x, res.throughput_samples_per_s()});
  if (res.throughput_ci_high() > res.throughput_ci_low() && res.throughput_ci_low() > 0) {
    s->error_bars.push_back({x, res.throughput_ci_low(), res.throughput_ci_high()});
  }
}

// A language model's tokens/s at x; a training run's interval is its
// samples/s interval times the tokens in a sample (decoding has none: its
// spread is the inter-token latency's, drawn against the context).
void AddTokens(double x, const v1::RunConfig& c, const v1::RunResult& res, Series* s) {
  s->points.push_back({x, res.tokens_per_s()});
  const double per_sample = res.tokens_per_s() / res.throughput_samples_per_s();
  if (Trains(c) && res.throughput_ci_high() > res.throughput_ci_low() &&
      res.throughput_ci_low() > 0) {
    s->error_bars.push_back(
        {x, res.throughput_ci_low() * per_sample, res.throughput_ci_high() * per_sample});
  }
}

bool CountsTokens(const v1::RunResult& r) {
  return r.tokens_per_s() > 0 && r.throughput_samples_per_s() > 0;
}

// What a sweep's charts draw against their axis.
enum Drawn : unsigned { kThroughput = 1, kLatency = 2, kMemory = 4, kDataWait = 8 };

// One sweep axis of a job: the facet it varies, where a run lands on the x
// axis (0 leaves the run out), the axis' name, and the charts it draws.
struct SweepAxis {
  FacetId facet;
  double (*x)(const v1::Run&);
  const char* name;  // "batch size"
  unsigned drawn;
};

// Each returns -1 for a run the axis does not apply to.
double BatchOf(const v1::Run& r) {
  return r.config().batch_size() > 0 ? r.config().batch_size() : -1;
}
double MillionsOfParameters(const v1::Run& r) {
  return r.result().parameter_count() > 0 ? r.result().parameter_count() / 1e6 : -1;
}
double LoadersOf(const v1::Run& r) {
  return HostInput(r.config()) ? r.config().pipeline().loader_threads() : -1;
}

// How a sweep's groups draw memory. A group whose device's allocator counts
// (CUDA; the CPU since the worker's counting allocator) is drawn by its
// tensors' peak allocated; one without (older runs, MPS) by its process's
// peak RSS, on a chart of its own. Each chart in GiB where its largest
// figure reaches one, else MiB.
struct MemoryUnits {
  std::vector<bool> on_device;  // per group
  double device = 1 << 20, rss = 1 << 20;
};

MemoryUnits UnitsOf(const JobView& view, const std::vector<std::vector<size_t>>& groups) {
  MemoryUnits units;
  int64_t max_device = 0, max_rss = 0;
  for (const auto& g : groups) {
    const bool device = std::any_of(g.begin(), g.end(), [&](size_t i) {
      return view.runs[i]->result().memory().peak_device_allocated_bytes() > 0;
    });
    units.on_device.push_back(device);
    for (size_t i : g) {
      const auto& memory = view.runs[i]->result().memory();
      if (device) {
        max_device = std::max(max_device, memory.peak_device_allocated_bytes());
      } else {
        max_rss = std::max(max_rss, memory.peak_host_rss_bytes());
      }
    }
  }
  if (max_device >= (int64_t{1} << 30)) units.device = 1 << 30;
  if (max_rss >= (int64_t{1} << 30)) units.rss = 1 << 30;
  return units;
}

// Throughput (with its intervals), latency p50/p95, peak memory and data-wait
// share against one sweep axis, a line per group of runs that agree on
// everything else.
std::string SweepPlots(const JobView& view, const SweepAxis& axis) {
  const auto groups = Groups(view, Bit(axis.facet), [&](const v1::Run& r) {
    return Measured(r) && axis.x(r) >= 0;
  });
  // Workloads 30x apart share the chart on a log axis, where the slow one
  // does not read as zero.
  // The y axes are the figure table's units (report/figures.h).
  LineChart tput{absl::StrCat("Throughput vs ", axis.name, " (bars: 95% interval)"), axis.name,
                 FigureNamed("throughput_samples_per_s").unit, {}, true};
  // Language models count tokens, on a chart of their own.
  LineChart tokens{absl::StrCat("Tokens/s vs ", axis.name, " (bars: 95% interval)"), axis.name,
                   FigureNamed("tokens_per_s").unit, {}, true};
  LineChart latency{absl::StrCat("Latency (p50, p95) vs ", axis.name), axis.name, "ms per step",
                    {}, true};
  LineChart wait{absl::StrCat("Data-wait share vs ", axis.name), axis.name,
                 "data wait (% of measured time)", {}};
  const MemoryUnits units = UnitsOf(view, groups);
  const std::vector<bool>& on_device = units.on_device;
  const double device_unit = units.device, rss_unit = units.rss;
  auto device_bytes = [&](size_t i) {
    return view.runs[i]->result().memory().peak_device_allocated_bytes();
  };
  auto unit_name = [](double unit) { return unit > (1 << 20) ? " (GiB)" : " (MiB)"; };
  LineChart device_memory{absl::StrCat("Peak memory allocated vs ", axis.name), axis.name,
                          absl::StrCat("peak allocated", unit_name(device_unit)), {}};
  LineChart rss{absl::StrCat("Peak host RSS vs ", axis.name), axis.name,
                absl::StrCat("peak RSS", unit_name(rss_unit)), {}};
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& g = groups[gi];
    const std::string label =
        LabelOr(GroupLabel(view.values[g[0]], view.varying, Bit(axis.facet)),
                view.values[g[0]][kWorkload]);
    const std::string color = SeriesColor(gi);
    const bool device = on_device[gi];
    const bool counts_tokens = std::all_of(
        g.begin(), g.end(), [&](size_t i) { return CountsTokens(view.runs[i]->result()); });
    Series t{label, color, false, {}, {}}, p50{label + " p50", color, false, {}, {}},
        p95{label + " p95", color, true, {}, {}}, mem{label, color, false, {}, {}},
        waiting{label, color, false, {}, {}};
    for (size_t i : g) {
      const v1::Run& r = *view.runs[i];
      const double x = axis.x(r);
      const auto& res = r.result();
      if (counts_tokens) {
        AddTokens(x, r.config(), res, &t);
      } else {
        AddThroughput(x, res, &t);
      }
      if (res.latency().p50_ms() > 0) p50.points.push_back({x, res.latency().p50_ms()});
      if (res.latency().p95_ms() > 0) p95.points.push_back({x, res.latency().p95_ms()});
      const int64_t bytes = device ? device_bytes(i) : res.memory().peak_host_rss_bytes();
      if (bytes > 0) mem.points.push_back({x, bytes / (device ? device_unit : rss_unit)});
      if (HostInput(r.config())) waiting.points.push_back({x, 100 * res.data_wait_share()});
    }
    (counts_tokens ? tokens : tput).series.push_back(std::move(t));
    if (!p50.points.empty()) latency.series.push_back(std::move(p50));
    if (!p95.points.empty()) latency.series.push_back(std::move(p95));
    if (!mem.points.empty()) (device ? device_memory : rss).series.push_back(std::move(mem));
    if (!waiting.points.empty()) wait.series.push_back(std::move(waiting));
  }
  std::string out;
  if (axis.drawn & kThroughput) {
    out += InFigure(RenderLineChart(tput)) + InFigure(RenderLineChart(tokens));
  }
  if (axis.drawn & kDataWait) out += InFigure(RenderLineChart(wait));
  if (axis.drawn & kLatency) out += InFigure(RenderLineChart(latency));
  if (axis.drawn & kMemory) {
    out += InFigure(RenderLineChart(device_memory)) + InFigure(RenderLineChart(rss));
  }
  return out;
}

constexpr size_t kMaxBars = 40;

std::vector<LegendEntry> SpeedupLegend(const std::string& baseline) {
  return {{"faster than " + baseline, kFaster, Mark::kBox},
          {"slower", kSlower, Mark::kBox},
          {"too noisy to tell, or no difference (as compare decides: one run a side "
           "never tells; gpubench compare --repeat 5)",
           kNoisy, Mark::kBox},
          {"1\u00d7 = " + baseline, kInk, Mark::kReference}};
}

// A bar of run's throughput against base's, coloured by the verdict every
// view gives (common/verdict.h) on the repetitions of each: grey unless
// that rule calls it faster or slower.
Bar SpeedupBar(std::string label, const verdict::Comparison& c, const v1::Run& run,
               const v1::Run& base) {
  const v1::RunResult& a = run.result();
  const v1::RunResult& b = base.result();
  const double ratio = c.verdict == verdict::Verdict::kNotComparable
                           ? a.throughput_samples_per_s() / b.throughput_samples_per_s()
                           : c.speedup.value;
  std::string detail = absl::StrCat(
      FormatFigure(a.throughput_samples_per_s()), " vs ", FormatFigure(b.throughput_samples_per_s()),
      " samples/s; ", c.candidate_runs, " vs ", c.baseline_runs, c.baseline_runs == 1 ? " run" : " runs",
      ": ", verdict::VerdictName(c.verdict), c.why.empty() ? "" : " (" + c.why + ")");
  if (c.has_interval()) {
    absl::StrAppend(&detail, absl::StrFormat("; 95%% interval %.2f-%.2f\u00d7", c.speedup.ci95.low,
                                             c.speedup.ci95.high));
  }
  return {std::move(label), ratio, absl::StrFormat("%.2f\u00d7", ratio),
          c.verdict == verdict::Verdict::kFaster   ? kFaster
          : c.verdict == verdict::Verdict::kSlower ? kSlower
                                                   : kNoisy,
          std::move(detail)};
}

void CapBars(BarChart* chart) {
  if (chart->bars.size() <= kMaxBars) return;
  const size_t all = chart->bars.size();
  chart->bars.resize(kMaxBars);
  chart->title += absl::StrFormat(" (first %d of %d)", kMaxBars, all);
}

// The device sweep's speedup (report/speedup.h, as `show` prints it): a bar
// per device against the baseline, its interval on hover, and a table of the
// operator categories per device where the runs were profiled.
std::string DeviceSpeedupPlot(const JobView& view) {
  const auto views = DeviceSpeedups(view.runs, view.src->job.spec().profiling().iterations());
  BarChart chart{"Speedup by device",
                 "throughput ratio (\u00d7)",
                 {},
                 1.0,
                 SpeedupLegend("the baseline device")};
  std::string tables;
  for (const DeviceSpeedup& v : views) {
    const DeviceSide& base = v.sides[0];
    for (size_t i = 1; i < v.sides.size(); ++i) {
      const DeviceSide& s = v.sides[i];
      // What tells the configs apart first ("batch 64"), where the job varies
      // more than the device; the whole config otherwise.
      const auto at = std::find(view.runs.begin(), view.runs.end(), s.run);
      std::string config = at == view.runs.end()
                               ? std::string()
                               : GroupLabel(view.values[at - view.runs.begin()], view.varying,
                                            Bit(kDevice));
      if (config.empty()) config = v.config;
      chart.bars.push_back(SpeedupBar(absl::StrCat(config, " \u00b7 ", s.device, " vs ", base.device),
                                      s.vs_baseline, *s.run, *base.run));
    }
    if (v.categories.empty()) continue;
    absl::StrAppend(&tables, "<table class=\"runs\"><caption>",
                    EscapeHtml(v.config), ": self time per sample by operator category (\u00b5s)"
                    "</caption><tr><th>category</th>");
    for (const DeviceSide& s : v.sides) absl::StrAppend(&tables, "<th>", EscapeHtml(s.device), "</th>");
    for (size_t i = 1; i < v.sides.size(); ++i) {
      absl::StrAppend(&tables, "<th>speedup ", EscapeHtml(v.sides[i].device), "</th>");
    }
    absl::StrAppend(&tables, "</tr>");
    for (const CategoryTimes& row : v.categories) {
      absl::StrAppend(&tables, "<tr><td>", EscapeHtml(row.category), "</td>");
      for (double us : row.us_per_sample) {
        absl::StrAppend(&tables, "<td class=\"num\">",
                        us < 0 ? "-" : absl::StrFormat("%.2f", us), "</td>");
      }
      for (size_t i = 1; i < row.us_per_sample.size(); ++i) {
        const double a = row.us_per_sample[0], b = row.us_per_sample[i];
        absl::StrAppend(&tables, "<td class=\"num\">",
                        a > 0 && b > 0 ? absl::StrFormat("%.2f\u00d7", a / b) : "-", "</td>");
      }
      absl::StrAppend(&tables, "</tr>");
    }
    absl::StrAppend(&tables, "</table>\n");
  }
  CapBars(&chart);
  return InFigure(RenderBarChart(chart)) + tables;
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
  for (const auto& g : Groups(view, kOptimisations, Measured)) {
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
    std::set<std::string> drawn;  // a config's repeats are one bar
    for (size_t i : g) {
      const v1::RunConfig& c = view.runs[i]->config();
      if (IsBaseline(c) || !drawn.insert(ConfigKey(c)).second) continue;
      std::vector<std::string> what;
      if (!Fp32(c)) what.push_back(view.values[i][kPrecision]);
      if (c.channels_last()) what.push_back("channels_last");
      if (c.execution() == v1::EXECUTION_CUDA_GRAPH)
        what.push_back("cuda_graph");
      std::string label = absl::StrJoin(what, " + ");
      if (!context.empty()) absl::StrAppend(&label, " \u00b7 ", context);
      const verdict::Comparison verdict =
          verdict::CompareRuns(RepeatsOf(*view.runs[*base], view.runs),
                               RepeatsOf(*view.runs[i], view.runs), {});
      chart.bars.push_back(
          SpeedupBar(std::move(label), verdict, *view.runs[i], *view.runs[*base]));
    }
  }
  CapBars(&chart);
  return InFigure(RenderBarChart(chart));
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
    out += InFigure(RenderBarChart(chart));
  }
  if (skipped > 0) {
    out += absl::StrFormat(
        "<p class=\"note\">%d more profiled runs not drawn.</p>\n", skipped);
  }
  return out;
}

// The profiled runs against their devices' roofs (report/roofline.h), with a
// line per run saying which bound it met and why.
std::string RooflinePlot(const JobView& view) {
  if (!AnyRooflineFigures(view.runs)) return "";
  const auto peaks = PeaksOf(view.runs, view.src->peak_runs);
  const auto points = Roofline(view.runs, peaks);
  RooflineChart chart{"Roofline (traffic estimated from the profiled window)", {}, {}};
  std::map<std::pair<std::string, double>, bool> drawn;
  std::string notes = "<ul class=\"note\">";
  for (size_t i = 0; i < points.size(); ++i) {
    const RooflinePoint& p = points[i];
    if (p.peak_flops_per_s > 0 && p.peak_bytes_per_s > 0 &&
        !drawn[{p.device, p.peak_flops_per_s}]) {
      drawn[{p.device, p.peak_flops_per_s}] = true;
      chart.roofs.push_back({absl::StrFormat("%s peak %s, %s", p.device,
                                             FlopRate(p.peak_flops_per_s),
                                             ByteRate(p.peak_bytes_per_s)),
                             kInk, p.peak_flops_per_s, p.peak_bytes_per_s});
    }
    // The datasheet's compute roof above the measured one, on the measured
    // bandwidth.
    if (p.datasheet_flops_per_s > 0 && p.peak_bytes_per_s > 0 &&
        !drawn[{p.device, p.datasheet_flops_per_s}]) {
      drawn[{p.device, p.datasheet_flops_per_s}] = true;
      chart.roofs.push_back({absl::StrFormat("%s datasheet %s", p.device,
                                             FlopRate(p.datasheet_flops_per_s)),
                             kNoisy, p.datasheet_flops_per_s, p.peak_bytes_per_s});
    }
    const std::string label = absl::StrCat("#", p.run->index(), " ", DescribeConfig(p.run->config()));
    chart.marks.push_back({label, SeriesColor(static_cast<int>(i)), p.intensity, p.flops_per_s,
                           absl::StrCat(label, ": ", FlopRate(p.flops_per_s), ", ",
                                        FormatFigure(p.intensity), " FLOP/B")});
    absl::StrAppend(&notes, "<li>", EscapeHtml(label), ": <b>",
                    EscapeHtml(p.verdict.empty() ? "no verdict" : p.verdict), "</b>, ",
                    EscapeHtml(p.why), "</li>");
  }
  absl::StrAppend(&notes, "</ul>\n");
  return InFigure(RenderRooflineChart(chart)) + notes;
}

// A config as one line of a distributed chart: everything but the axis
// the chart draws along (the message size, or the rank count).
std::string LineKey(v1::RunConfig c, bool along_bytes) {
  if (along_bytes) {
    c.mutable_params()->clear_collective_bytes();
  } else {
    c.clear_world_size();
  }
  return DescribeConfig(c);
}

// Collectives: nccl-tests' curves, bus bandwidth and time per operation
// against the message size, a line per operation and rank count (one rank
// moves nothing between GPUs: its line is algbw). ddp: samples/s against
// the rank count beside the ideal K x T_1 (dashed).
std::string DistributedPlots(const JobView& view) {
  LineChart bandwidth{"Bus bandwidth vs message size (nccl-tests' busbw; algbw for one rank)",
                      "bytes", "GB/s", {}, true};
  LineChart time{"Time per operation vs message size", "bytes", "us per operation", {}, true};
  LineChart scaling{"Data-parallel throughput vs ranks (dashed: K x one rank's)", "ranks",
                    "samples/s (all ranks)", {}};
  std::map<std::string, size_t> collective_lines, ddp_lines;
  std::map<std::string, double> one_rank;
  for (const v1::Run* r : view.runs) {
    if (!Measured(*r)) continue;
    const v1::RunConfig& c = r->config();
    const v1::RunResult& res = r->result();
    if (IsWorkload(c.workload(), WorkloadId::kCollective) && res.throughput_samples_per_s() > 0) {
      const std::string key = LineKey(c, true);
      auto [it, added] = collective_lines.emplace(key, bandwidth.series.size());
      if (added) {
        const std::string color = SeriesColor(static_cast<int>(it->second));
        bandwidth.series.push_back({key, color, false, {}, {}});
        time.series.push_back({key, color, false, {}, {}});
      }
      const double bytes = static_cast<double>(c.params().collective_bytes());
      if (c.world_size() > 1) {  // one rank moves nothing between devices: no bandwidth
        bandwidth.series[it->second].points.push_back({bytes, res.bus_bandwidth_gb_per_s()});
      }
      time.series[it->second].points.push_back({bytes, 1e6 / res.throughput_samples_per_s()});
    } else if (IsWorkload(c.workload(), WorkloadId::kDdp)) {
      const std::string key = LineKey(c, false);
      auto [it, added] = ddp_lines.emplace(key, scaling.series.size());
      if (added) {
        const std::string color = SeriesColor(static_cast<int>(it->second));
        scaling.series.push_back({key, color, false, {}, {}});
        scaling.series.push_back({key + " ideal", color, true, {}, {}});
      }
      scaling.series[it->second].points.push_back(
          {static_cast<double>(std::max(1, c.world_size())), res.throughput_samples_per_s()});
      if (c.world_size() <= 1) one_rank[key] = res.throughput_samples_per_s();
    }
  }
  for (const auto& [key, at] : ddp_lines) {
    auto base = one_rank.find(key);
    if (base == one_rank.end()) continue;
    for (const auto& [ranks, tput] : scaling.series[at].points) {
      scaling.series[at + 1].points.push_back({ranks, ranks * base->second});
    }
  }
  // A line without its ideal (no one-rank run) leaves the ideal empty, and
  // a one-rank collective has no bandwidth.
  for (LineChart* chart : {&bandwidth, &scaling}) {
    std::vector<Series> drawn;
    for (Series& s : chart->series) {
      if (!s.points.empty()) drawn.push_back(std::move(s));
    }
    chart->series = std::move(drawn);
  }
  return InFigure(RenderLineChart(bandwidth)) + InFigure(RenderLineChart(time)) +
         InFigure(RenderLineChart(scaling));
}

}  // namespace

const char* CategoryColor(const std::string& category) {
  static const std::map<std::string, int> kOrder = {
      {"convolution", 0},   {"matmul", 1},      {"attention", 2},
      {"normalization", 3}, {"elementwise", 4}, {"pooling", 5},
      {"rnn", 6},           {"memcpy_h2d", 7},  {"memcpy_d2h", 7},
      {"memcpy_d2d", 7},    {"optimizer", 8}};
  auto it = kOrder.find(category);
  return it == kOrder.end() ? "#bab0ac" : SeriesColor(it->second);
}

std::string JobPlots(const JobView& view) {
  static const SweepAxis kBatchAxis{kBatch, BatchOf, "batch size",
                                    kThroughput | kLatency | kMemory};
  static const SweepAxis kModelAxis{kModelSize, MillionsOfParameters,
                                    "model size (millions of parameters)",
                                    kThroughput | kMemory};
  static const SweepAxis kLoaderAxis{kLoaders, LoadersOf, "loader threads",
                                     kThroughput | kDataWait};
  return SweepPlots(view, kBatchAxis) + SweepPlots(view, kModelAxis) +
         SweepPlots(view, kLoaderAxis) + DeviceSpeedupPlot(view) + OptimisedPlot(view) +
         LanguageModelPlots(view) + ServingPlots(view) + OperatorPlots(view) + RooflinePlot(view) +
         DistributedPlots(view) + BreakdownPlots(view);
}

}  // namespace gpubench::report::internal
