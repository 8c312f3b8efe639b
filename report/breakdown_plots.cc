#include "report/breakdown_plots.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/chart.h"
#include "report/language_model_table.h"
#include "report/plots.h"
#include "report/profile_diff.h"
#include "report/report.h"
#include "report/trace_breakdown.h"

namespace gpubench::report::internal {
namespace {

constexpr size_t kMaxBars = 24;   // runs a chart draws
constexpr size_t kMaxDiffs = 8;   // runs diffed against the first
constexpr size_t kDiffRows = 5;   // rows a diff shows

bool Profiled(const v1::Run& r) {
  return r.result().profiled_iterations() > 0 && !r.result().profile().top_operators().empty();
}

std::string RunLabel(const JobView& view, size_t i) {
  const std::string context = GroupLabel(view.values[i], view.varying, 0);
  return absl::StrCat("run #", view.runs[i]->index(),
                      context.empty() ? "" : absl::StrCat(" \u00b7 ", context));
}

const Breakdown* BreakdownOf(const JobView& view, const v1::Run& r) {
  auto it = view.src->breakdowns.find(r.run_id());
  return it == view.src->breakdowns.end() ? nullptr : &it->second;
}

struct Share {
  const char* name;
  double Breakdown::*us;
  const char* color;
};
constexpr Share kShares[] = {{"compute", &Breakdown::compute_us, "#4e79a7"},
                             {"communication", &Breakdown::communication_us, "#f28e2b"},
                             {"memory", &Breakdown::memory_us, "#59a14f"},
                             {"other", &Breakdown::other_us, "#e15759"},
                             {"idle", &Breakdown::idle_us, "#bab0ac"}};

// A bar per run with a device trace: its span's shares, with the sentence
// that names the biggest under the chart.
std::string DeviceChart(const JobView& view) {
  BarChart chart{"Where the device's time went (HTA's temporal breakdown of each profiled span)",
                 "% of the profiled span", {}, std::nullopt, {}};
  for (const Share& s : kShares) chart.legend.push_back({s.name, s.color, Mark::kBox});
  std::string sentences;
  for (size_t i = 0; i < view.runs.size() && chart.bars.size() < kMaxBars; ++i) {
    const Breakdown* b = BreakdownOf(view, *view.runs[i]);
    if (b == nullptr || !(b->span_us > 0)) continue;
    Bar bar{RunLabel(view, i), 100, absl::StrCat("span ", FormatFigure(b->span_us), " us"), "",
            "", {}};
    for (const Share& s : kShares) {
      bar.segments.push_back({b->Pct(b->*s.us), s.color,
                              absl::StrFormat("%s: %.0f us, %.1f%% of the span", s.name,
                                              b->*s.us, b->Pct(b->*s.us))});
    }
    absl::StrAppend(&sentences, "<li>", EscapeHtml(bar.label), ": ",
                    EscapeHtml(BiggestShare(*b)), "</li>");
    chart.bars.push_back(std::move(bar));
  }
  const std::string svg = InFigure(RenderBarChart(chart));
  return svg.empty() ? "" : absl::StrCat(svg, "<ul class=\"note\">", sentences, "</ul>\n");
}

// A bar per profiled run: its profile's self time by operator category.
std::string CategoryChart(const JobView& view) {
  BarChart chart{"Where the profiled time went, by operator category",
                 "% of the profiled window's self time", {}, std::nullopt, {}};
  std::vector<std::string> seen;
  for (size_t i = 0; i < view.runs.size() && chart.bars.size() < kMaxBars; ++i) {
    const v1::ProfileSummary& p = view.runs[i]->result().profile();
    if (!Profiled(*view.runs[i]) || p.categories().empty()) continue;
    Bar bar{absl::StrCat(RunLabel(view, i), p.device_times() ? " (device)" : " (CPU)"), 0, "",
            "", "", {}};
    const v1::CategoryShare* top = &p.categories(0);
    for (const v1::CategoryShare& c : p.categories()) {
      const std::string& category = c.category().empty() ? "other" : c.category();
      bar.value += 100 * c.share();
      bar.segments.push_back({100 * c.share(), CategoryColor(category),
                              absl::StrFormat("%s: %.0f us self, %.1f%%", category,
                                              c.self_time_us(), 100 * c.share())});
      if (c.share() > top->share()) top = &c;
      if (std::find(seen.begin(), seen.end(), category) == seen.end()) {
        seen.push_back(category);
        chart.legend.push_back({category, CategoryColor(category), Mark::kBox});
      }
    }
    bar.value_text = absl::StrFormat("%s %.0f%%", top->category(), 100 * top->share());
    chart.bars.push_back(std::move(bar));
  }
  return InFigure(RenderBarChart(chart));
}

// B's diff against A: every kernel of their traces where both have one
// stored, else their profiles' top tables (a trace's kernels against a top
// table's rows would not compare).
ProfileDiff DiffRuns(const JobView& view, const v1::Run& a, const v1::Run& b) {
  ProfiledWindow windows[2] = {WindowOf(a), WindowOf(b)};
  const Breakdown* traced[2] = {BreakdownOf(view, a), BreakdownOf(view, b)};
  if (traced[0] != nullptr && traced[1] != nullptr) {
    for (int i = 0; i < 2; ++i) {
      windows[i].rows = traced[i]->top;
      windows[i].complete = true;
    }
  }
  return DiffWindows(windows[0], windows[1]);
}

// Each profiled run after the first against it, its biggest rows.
std::string DiffTable(const JobView& view) {
  std::vector<size_t> profiled;
  for (size_t i = 0; i < view.runs.size(); ++i) {
    if (Profiled(*view.runs[i])) profiled.push_back(i);
  }
  if (profiled.size() < 2) return "";
  const v1::Run& first = *view.runs[profiled[0]];
  LanguageModelTable t{{"B", "kernel or operator", "A calls/step", "A us/call", "B calls/step",
                        "B us/call", "delta us/sample", "share of delta"},
                       {}};
  size_t diffs = 0, left_out = 0;
  for (size_t k = 1; k < profiled.size(); ++k) {
    const v1::Run& r = *view.runs[profiled[k]];
    // CPU operators' times against kernels' do not compare.
    const bool comparable =
        r.result().profile().device_times() == first.result().profile().device_times();
    const ProfileDiff diff =
        comparable && diffs < kMaxDiffs ? DiffRuns(view, first, r) : ProfileDiff();
    if (diff.rows.empty()) {
      ++left_out;
      continue;
    }
    ++diffs;
    const size_t n = std::min(diff.rows.size(), kDiffRows);
    const std::vector<std::string> names = ShortNames(diff.rows, n);
    for (size_t j = 0; j < n; ++j) {
      const DiffCells c = CellsOf(diff.rows[j]);
      t.rows.push_back(
          {j > 0 ? "" : absl::StrFormat("%s (%.2f against %.2f us a sample in all)",
                                        RunLabel(view, profiled[k]), diff.b_us_per_sample,
                                        diff.a_us_per_sample),
           names[j], c.a_calls, c.a_us, c.b_calls, c.b_us, c.delta, c.share});
    }
  }
  std::string out;
  if (!t.rows.empty()) {
    out = TableHtml(
        absl::StrCat("What changed against ", RunLabel(view, profiled[0]),
                     " (A), in each profiled run (B): the rows that moved most, us a sample "
                     "(kernels from the traces where both sides' are stored, else the profiles' "
                     "top tables; "
                     "- : a name a top table left out, its delta unknown: ?)"),
        t);
  }
  if (left_out > 0) {
    absl::StrAppend(&out, "<p class=\"note\">", left_out,
                    " more profiled runs not diffed (after the first ", kMaxDiffs,
                    ", CPU times against device times, or without samples a step).</p>\n");
  }
  return out;
}

}  // namespace

std::string BreakdownPlots(const JobView& view) {
  return DeviceChart(view) + CategoryChart(view) + DiffTable(view);
}

}  // namespace gpubench::report::internal
