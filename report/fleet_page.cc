#include "report/fleet_page.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "report/chart.h"

namespace gpubench::report::internal {
namespace {

// Bars beyond the threshold but within the noise, and bars of a group too
// small for a straggler verdict: each its own colour and legend, so that
// neither reads as "within the threshold".
constexpr char kTooNoisy[] = "#e3b15b";
constexpr char kNoVerdict[] = "#dde3ea";

// A bar's colour and its legend's words.
LegendEntry Kind(const Ranked& r) {
  if (r.straggler || r.drifted) return {"straggler or drifted", kSlower, Mark::kBox};
  if (r.straggler_too_noisy || r.drift_too_noisy) {
    return {"beyond the threshold, within the noise: too noisy to tell", kTooNoisy, Mark::kBox};
  }
  if (!r.no_verdict.empty()) return {r.no_verdict, kNoVerdict, Mark::kBox};
  return {"within the threshold", kNoisy, Mark::kBox};
}

// One chart: the GPUs of a SKU on one probe, worst first (RankFleet's
// order), each a bar of its figure over the median.
std::string ProbeChart(const std::string& probe, const std::string& sku,
                       const std::vector<const Ranked*>& gpus) {
  const ProbeInfo* info = ProbeNamed(probe);
  BarChart chart;
  chart.title = absl::StrCat(probe, " (", info ? info->unit : "", ") \u00b7 ", sku, " \u00b7 ",
                             gpus.size(), gpus.size() == 1 ? " device" : " devices");
  // One group, one size: say once why it has no straggler verdict.
  if (!gpus.empty() && !gpus.front()->no_verdict.empty()) {
    absl::StrAppend(&chart.title, " \u00b7 ", gpus.front()->no_verdict);
  }
  chart.x_label = absl::StrCat("figure / the median of its peers (",
                               info && !info->higher_is_better ? "above" : "below",
                               " 1: worse)");
  chart.reference = 1.0;
  for (const Ranked* r : gpus) {
    const LegendEntry kind = Kind(*r);
    Bar bar;
    bar.label = absl::StrCat(r->result.host, " ", r->result.gpu);
    bar.value = r->ratio;
    bar.value_text = absl::StrFormat("%.3f\u00d7 %s", r->ratio, FormatFigure(r->result.value));
    bar.color = kind.color;
    bar.tooltip = absl::StrCat(bar.label, ": ", bar.value_text, "; ", kind.label,
                               r->differs.empty() ? "" : "; ", absl::StrJoin(r->differs, ", "));
    chart.bars.push_back(std::move(bar));
    // The legend names what the bars show, each kind once.
    if (std::none_of(chart.legend.begin(), chart.legend.end(),
                     [&](const LegendEntry& e) { return e.label == kind.label; })) {
      chart.legend.push_back(kind);
    }
  }
  return InFigure(RenderBarChart(chart));
}

std::string FlaggedTable(const std::vector<Ranked>& ranked) {
  std::string rows;
  for (const Ranked& r : ranked) {
    if (!r.straggler && !r.drifted) continue;
    const ProbeInfo* info = ProbeNamed(r.result.probe);
    absl::StrAppend(
        &rows, "<tr><td>", EscapeHtml(r.result.probe), "</td><td>", EscapeHtml(r.result.host),
        "</td><td>", EscapeHtml(r.result.gpu), "</td><td>", FormatFigure(r.result.value), " ",
        info ? info->unit : "", "</td><td>", absl::StrFormat("%.3f", r.ratio), "</td><td>",
        r.straggler ? "straggler" : "", r.straggler && r.drifted ? ", " : "",
        r.drifted ? "drifted" : "", "</td><td>", EscapeHtml(absl::StrJoin(r.differs, ", ")),
        "</td></tr>\n");
  }
  if (rows.empty()) return "<p>No GPU is a straggler or has drifted.</p>\n";
  return absl::StrCat(
      "<div class=\"tablewrap\"><table class=\"runs\"><thead><tr><th>probe</th><th>host</th>"
      "<th>GPU</th><th>figure</th><th>\u00d7 median</th><th>flag</th><th>setup that differs "
      "from its peers</th></tr></thead><tbody>\n",
      rows, "</tbody></table></div>\n");
}

}  // namespace

std::string FleetSections(const std::vector<Ranked>& ranked, const FleetRule& rule) {
  std::string out = absl::StrCat(
      "<section><h2>Flagged</h2>\n<p>A straggler is worse than the median of the GPUs of its "
      "SKU and driver by more than ",
      absl::StrFormat("%.0f%%", 100 * rule.threshold), " (with ", rule.min_peers,
      " or more of them) and stands out of their spread (a robust z-score of ",
      absl::StrFormat("%g", rule.max_robust_z),
      " or more, their spread never taken below the probe's own between sessions, so peers "
      "that tie flag nothing); a GPU has drifted when it is that much worse than the median of "
      "its own ",
      rule.min_history, " or more earlier probes and outside their prediction interval (p &lt; ",
      absl::StrFormat("%g", rule.alpha), "). Amber bars beyond the threshold are too noisy to "
      "tell; a group of fewer than ", rule.min_peers, " GPUs gets no straggler verdict, and "
      "its chart says so.</p>\n", FlaggedTable(ranked), "</section>\n");
  // Charts in RankFleet's order: probe, SKU, worst first.
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<const Ranked*>>> groups;
  for (const Ranked& r : ranked) {
    const auto key = std::make_pair(r.result.probe, r.result.sku);
    if (groups.empty() || groups.back().first != key) groups.push_back({key, {}});
    groups.back().second.push_back(&r);
  }
  absl::StrAppend(&out, "<section><h2>Each probe</h2>\n");
  for (const auto& [key, gpus] : groups) {
    absl::StrAppend(&out, ProbeChart(key.first, key.second, gpus));
  }
  absl::StrAppend(&out, "</section>\n");
  return out;
}

}  // namespace gpubench::report::internal
