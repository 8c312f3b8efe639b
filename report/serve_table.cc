#include "report/serve_table.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/chart.h"
#include "report/figures.h"
#include "report/format.h"

namespace gpubench::report {
namespace {

std::string Number(double v) { return absl::StrFormat("%.4g", v); }

// A percentile with its interval where the requests bound it: "12.3
// [11.9, 13.0]", else "12.3".
std::string WithInterval(const v1::ServeLatency& l, double value, double low, double high) {
  if (l.count() == 0) return "-";
  if (high <= 0) return Number(value);
  return absl::StrCat(Number(value), " [", Number(low), ", ", Number(high), "]");
}

}  // namespace

const char kServingLegend[] =
    "TTFT: from arrival to the first token; TPOT: (e2e - ttft) / (tokens - 1) a request; ITL: "
    "each gap between tokens; E2E: arrival to the last token; [low, high]: the percentile's 95% "
    "interval where the requests bound it; req/s asked, sent (the measured arrivals) and done "
    "(finished in the window); in flight: the mean against Little's law (sent x mean E2E); "
    "J/out tok: the window's board energy over its output tokens; docs/serving.md defines each";

const char kSlicesLegend[] =
    "each run's measured window in --slice-ms slices: tokens made in the slice a second, "
    "requests finished in it, the median TTFT of requests whose first token came in it, the "
    "median gap between tokens ending in it";

LanguageModelTable ServingFigures(const std::vector<const v1::Run*>& runs) {
  LanguageModelTable t;
  t.header = {"#",          "requests",   "req/s asked", "sent",        "done",
              "output tok/s", "tok/s/user", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms",
              "TPOT p99 ms", "ITL p99 ms", "E2E p99 ms",  "goodput",     "in flight",
              "batch",       "J/out tok"};
  for (const v1::Run* run : runs) {
    const v1::Run& r = *run;
    if (!Measured(r) || !r.result().has_serve()) continue;
    const v1::ServeResult& s = r.result().serve();
    const v1::ServeLoad& load = r.config().serve();
    const bool slo = load.slo_ttft_ms() > 0 || load.slo_tpot_ms() > 0 || load.slo_e2e_ms() > 0;
    const v1::ServeLatency &ttft = s.ttft(), &tpot = s.tpot(), &itl = s.itl(), &e2e = s.e2e();
    t.rows.push_back(
        {absl::StrCat(r.index()), absl::StrCat(s.requests(), " of ", s.requests_asked()),
         load.request_rate() > 0 ? Number(load.request_rate()) : "closed",
         s.request_rate().achieved() > 0 ? Number(s.request_rate().achieved()) : "-",
         Number(s.request_throughput()), Number(s.output_tokens_per_s()),
         s.output_tokens_per_s_per_user() > 0 ? Number(s.output_tokens_per_s_per_user()) : "-",
         WithInterval(ttft, ttft.p50_ms(), ttft.p50_low_ms(), ttft.p50_high_ms()),
         WithInterval(ttft, ttft.p99_ms(), ttft.p99_low_ms(), ttft.p99_high_ms()),
         WithInterval(tpot, tpot.p50_ms(), tpot.p50_low_ms(), tpot.p50_high_ms()),
         WithInterval(tpot, tpot.p99_ms(), tpot.p99_low_ms(), tpot.p99_high_ms()),
         WithInterval(itl, itl.p99_ms(), itl.p99_low_ms(), itl.p99_high_ms()),
         WithInterval(e2e, e2e.p99_ms(), e2e.p99_low_ms(), e2e.p99_high_ms()),
         slo ? absl::StrFormat("%.4g/s (%d of %d)", s.goodput(), s.requests_meeting_slo(),
                               s.requests())
             : "-",
         s.littles_law_in_flight() > 0
             ? absl::StrCat(Number(s.mean_in_flight()), " / ", Number(s.littles_law_in_flight()))
             : "-",
         absl::StrCat(Number(s.mean_batch()), " of ", r.config().batch_size()),
         s.joules_per_output_token() > 0 ? Number(s.joules_per_output_token()) : "-"});
  }
  return t;
}

LanguageModelTable ServingSlices(const std::vector<const v1::Run*>& runs) {
  LanguageModelTable t;
  t.header = {"#", "from ms", "to ms", "output tok/s", "done", "TTFT p50 ms", "ITL p50 ms",
              "batch"};
  for (const v1::Run* run : runs) {
    if (!Measured(*run) || !run->result().has_serve()) continue;
    for (const v1::ServeSlice& x : run->result().serve().slices()) {
      auto or_dash = [](double v) { return v > 0 ? Number(v) : std::string("-"); };
      t.rows.push_back({absl::StrCat(run->index()), Number(x.start_ms()), Number(x.end_ms()),
                        Number(x.output_tokens_per_s()), absl::StrCat(x.requests_finished()),
                        or_dash(x.ttft_p50_ms()), or_dash(x.itl_p50_ms()),
                        or_dash(x.mean_batch())});
    }
  }
  return t;
}

namespace internal {
namespace {

bool Serves(const v1::Run& r) { return Measured(r) && r.result().has_serve(); }

// A line per group of serving runs that agree outside `apart`, each run a
// point (x, y) of its own; its label the group's facets that vary.
void AddLines(const JobView& view, FacetMask apart, double (*x)(const v1::Run&),
              const std::vector<double (*)(const v1::Run&)>& ys,
              const std::vector<std::string>& suffixes, LineChart* chart) {
  const auto groups = Groups(view, apart, Serves);
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string label = GroupLabel(view.values[groups[g][0]], view.varying, apart);
    for (size_t k = 0; k < ys.size(); ++k) {
      Series line{absl::StrCat(label.empty() ? "serving" : label, suffixes[k]),
                  SeriesColor(static_cast<int>(g)), k > 0, {}, {}};
      for (size_t i : groups[g]) line.points.push_back({x(*view.runs[i]), ys[k](*view.runs[i])});
      chart->series.push_back(line);
    }
  }
}

}  // namespace

std::string ServingPlots(const JobView& view) {
  const LanguageModelTable t = ServingFigures(view.runs);
  if (t.rows.empty()) return "";
  const std::string html = TableHtml(absl::StrCat("Serving (", kServingLegend, ")"), t);
  // Throughput against interactivity: the load (concurrency) and the slots
  // move along a line.
  LineChart pareto{"Output tokens/s vs tokens/s per user (a point per load)",
                   "tokens/s per user (1000 / median TPOT ms)", "output tokens/s", {}, false};
  AddLines(
      view, Bit(kMode) | Bit(kBatch),
      [](const v1::Run& r) { return r.result().serve().output_tokens_per_s_per_user(); },
      {[](const v1::Run& r) { return r.result().serve().output_tokens_per_s(); }}, {""},
      &pareto);
  // Latency against load: the asked rate moves along a line.
  LineChart latency{"TTFT and TPOT p99 vs request rate", "requests/s asked", "ms", {}, true};
  AddLines(
      view, Bit(kMode), [](const v1::Run& r) { return r.config().serve().request_rate(); },
      {[](const v1::Run& r) { return r.result().serve().ttft().p99_ms(); },
       [](const v1::Run& r) { return r.result().serve().tpot().p99_ms(); }},
      {" TTFT p99", " TPOT p99"}, &latency);
  return html + InFigure(RenderLineChart(pareto)) + InFigure(RenderLineChart(latency));
}

}  // namespace internal
}  // namespace gpubench::report
