#include "report/fleet_page.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "report/chart.h"

namespace gpubench::report::internal {
namespace {

const ProbeInfo* InfoOf(const std::string& probe) {
  for (const ProbeInfo& p : ProbeSuite()) {
    if (probe == p.name) return &p;
  }
  return nullptr;
}

// One chart: the GPUs of a SKU on one probe, worst first (RankFleet's
// order), each a bar of its figure over the median.
std::string ProbeChart(const std::string& probe, const std::string& sku,
                       const std::vector<const Ranked*>& gpus) {
  const ProbeInfo* info = InfoOf(probe);
  BarChart chart;
  chart.title = absl::StrCat(probe, " (", info ? info->unit : "", ") \u00b7 ", sku, " \u00b7 ",
                             gpus.size(), gpus.size() == 1 ? " device" : " devices");
  chart.x_label = absl::StrCat("figure / the median of its peers (",
                               info && !info->higher_is_better ? "above" : "below",
                               " 1: worse)");
  chart.reference = 1.0;
  for (const Ranked* r : gpus) {
    const bool flagged = r->straggler || r->drifted;
    Bar bar;
    bar.label = absl::StrCat(r->result.host, " ", r->result.gpu);
    bar.value = r->ratio;
    bar.value_text = absl::StrFormat("%.3f\u00d7 %s", r->ratio, FormatFigure(r->result.value));
    bar.color = flagged ? kSlower : kNoisy;
    bar.tooltip = absl::StrCat(bar.label, ": ", bar.value_text,
                               r->differs.empty() ? "" : "; ", absl::StrJoin(r->differs, ", "));
    chart.bars.push_back(std::move(bar));
  }
  chart.legend = {{"straggler or drifted", kSlower, Mark::kBox},
                  {"within the threshold", kNoisy, Mark::kBox}};
  return Figure(RenderBarChart(chart));
}

std::string FlaggedTable(const std::vector<Ranked>& ranked) {
  std::string rows;
  for (const Ranked& r : ranked) {
    if (!r.straggler && !r.drifted) continue;
    const ProbeInfo* info = InfoOf(r.result.probe);
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
      " or more); a GPU has drifted when it is that much worse than the median of its own ",
      rule.min_history, " or more earlier probes and outside their prediction interval (p &lt; ",
      absl::StrFormat("%g", rule.alpha), "). Grey bars beyond the threshold are too noisy to "
      "tell.</p>\n", FlaggedTable(ranked), "</section>\n");
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
