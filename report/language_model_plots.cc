#include "report/language_model_plots.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/chart.h"
#include "report/format.h"
#include "report/language_model_table.h"
#include "report/roofline.h"

namespace gpubench::report::internal {
namespace {

// A decoding run's params but its size and prompt length.
std::string ParamsButPrompt(const v1::RunConfig& c) {
  v1::WorkloadParams p = c.params();
  p.clear_model_size();
  p.clear_prompt_length();
  return p.ShortDebugString();
}

// What a language-model run is called on its bars and lines: its size and
// the other facets that vary in the job (the size's filled-in shape left out).
std::string LanguageModelLabel(const JobView& view, size_t i) {
  const std::string context =
      GroupLabel(view.values[i], view.varying, Bit(kModelSize) | Bit(kParams));
  std::string label = view.values[i][kModelSize] == "-" ? view.values[i][kWorkload]
                                                        : view.values[i][kModelSize];
  const int64_t parameters = view.runs[i]->result().parameter_count();
  if (parameters > 0) absl::StrAppend(&label, absl::StrFormat(" (%.1fM)", parameters / 1e6));
  if (!context.empty()) absl::StrAppend(&label, " \u00b7 ", context);
  return label;
}

// ITL p50/p99 and TTFT p50 against the prompt length, a line per config
// that agrees on everything else.
std::string ContextPlots(const JobView& view) {
  LineChart itl{"Inter-token latency (p50, p99) vs prompt length", "prompt length (tokens)",
                "ms per token", {}, true};
  LineChart ttft{"Time to first token (p50) vs prompt length", "prompt length (tokens)",
                 "ms", {}, true};
  std::map<std::string, size_t> lines;  // config without its prompt -> line
  std::vector<size_t> first_run;         // per line
  for (size_t i = 0; i < view.runs.size(); ++i) {
    const v1::Run& r = *view.runs[i];
    if (!Measured(r) || !r.result().has_inter_token_latency()) continue;
    v1::RunConfig key = r.config();
    key.mutable_params()->clear_prompt_length();
    auto [it, added] = lines.emplace(key.ShortDebugString(), first_run.size());
    const size_t line = it->second;
    if (added) {
      first_run.push_back(i);
      const std::string color = SeriesColor(static_cast<int>(line));
      itl.series.push_back({"", color, false, {}, {}});
      itl.series.push_back({"", color, true, {}, {}});
      ttft.series.push_back({"", color, false, {}, {}});
    }
    const double x = r.config().params().prompt_length();
    const v1::RunResult& res = r.result();
    itl.series[2 * line].points.push_back({x, res.inter_token_latency().p50_ms()});
    itl.series[2 * line + 1].points.push_back({x, res.inter_token_latency().p99_ms()});
    ttft.series[line].points.push_back({x, res.time_to_first_token().p50_ms()});
  }
  std::vector<std::string> labels;
  std::map<std::string, int> uses;
  for (size_t i : first_run) ++uses[labels.emplace_back(LanguageModelLabel(view, i))];
  for (size_t line = 0; line < first_run.size(); ++line) {
    std::string& label = labels[line];
    // Lines apart only in another param (new tokens) say it.
    if (uses[label] > 1) {
      absl::StrAppend(&label, " \u00b7 ", ParamsButPrompt(view.runs[first_run[line]]->config()));
    }
    itl.series[2 * line].label = label + " p50";
    itl.series[2 * line + 1].label = label + " p99";
    ttft.series[line].label = label;
  }
  return InFigure(RenderLineChart(itl)) + InFigure(RenderLineChart(ttft));
}

// Bars of runs that share a label say their params (a prompt length, a
// sequence length) too.
void SayParamsWhereLabelsMeet(const JobView& view, const std::vector<size_t>& runs,
                              BarChart* chart) {
  std::map<std::string, int> uses;
  for (const Bar& b : chart->bars) ++uses[b.label];
  for (size_t k = 0; k < chart->bars.size(); ++k) {
    Bar& b = chart->bars[k];
    if (uses[b.label] < 2) continue;
    v1::WorkloadParams p = view.runs[runs[k]]->config().params();
    p.clear_model_size();
    absl::StrAppend(&b.label, " \u00b7 ", p.ShortDebugString());
  }
}

// A chart of shares, a bar a run, and the runs its bars stand for.
struct ShareChart {
  BarChart chart;
  int color;
  std::vector<size_t> runs;

  void Add(size_t run, const std::string& label, double share, std::string tooltip) {
    runs.push_back(run);
    chart.bars.push_back({label, 100 * share, absl::StrFormat("%.1f%%", 100 * share),
                          SeriesColor(color), std::move(tooltip)});
  }
};

// MFU against the datasheet and against the measured matmul, and
// decoding's reads against the copy peak.
std::string ShareBars(const JobView& view) {
  const auto peaks = PeaksOf(view.runs, view.src->peak_runs);
  ShareChart datasheet{{"MFU by model size (% of the GPU's dense datasheet peak)", "MFU (%)",
                        {}, std::nullopt, {}}, 0, {}};
  ShareChart measured{{"MFU by model size (% of this host's best measured matmul)",
                       "achieved / measured peak (%)", {}, std::nullopt, {}}, 1, {}};
  ShareChart bandwidth{{"Decoding's weight and KV-cache reads (% of this host's best copy "
                        "traffic)", "bandwidth / measured peak (%)", {}, std::nullopt, {}}, 2, {}};
  for (size_t i = 0; i < view.runs.size(); ++i) {
    const v1::Run& r = *view.runs[i];
    const v1::RunResult& res = r.result();
    if (!Measured(r) || res.tokens_per_s() <= 0) continue;
    const std::string label = LanguageModelLabel(view, i);
    const RunPeaks roof = PeaksForRun(peaks, r);
    const std::string tokens = absl::StrCat(FormatFigure(res.tokens_per_s()), " tokens/s, ");
    if (res.mfu() > 0) {
      datasheet.Add(i, label, res.mfu(),
                    absl::StrCat(tokens, FormatFigure(res.achieved_tflops()), " of ",
                                 FormatFigure(res.datasheet_peak_tflops()), " TFLOP/s"));
    }
    if (Trains(r.config()) && res.achieved_tflops() > 0 && roof.flops_per_s > 0) {
      measured.Add(i, label, res.achieved_tflops() * 1e12 / roof.flops_per_s,
                   absl::StrCat(tokens, FlopRate(res.achieved_tflops() * 1e12), " of ",
                                FlopRate(roof.flops_per_s)));
    }
    if (res.decode_bandwidth_gb_per_s() > 0 && roof.bytes_per_s > 0) {
      bandwidth.Add(i, label, res.decode_bandwidth_gb_per_s() * 1e9 / roof.bytes_per_s,
                    absl::StrCat(tokens, ByteRate(res.decode_bandwidth_gb_per_s() * 1e9), " of ",
                                 ByteRate(roof.bytes_per_s)));
    }
  }
  std::string html;
  for (ShareChart* c : {&datasheet, &measured, &bandwidth}) {
    SayParamsWhereLabelsMeet(view, c->runs, &c->chart);
    html += InFigure(RenderBarChart(c->chart));
  }
  return html;
}

// The figures as show prints them (report/language_model_table.h).
std::string FiguresTable(const JobView& view) {
  const LanguageModelTable lm =
      LanguageModelFigures(view.runs, PeaksOf(view.runs, view.src->peak_runs));
  if (lm.rows.empty()) return "";
  return TableHtml(absl::StrCat("Language models (", kLanguageModelLegend, ")"), lm);
}

}  // namespace

std::string LanguageModelPlots(const JobView& view) {
  return FiguresTable(view) + ContextPlots(view) + ShareBars(view);
}

}  // namespace gpubench::report::internal
