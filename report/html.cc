#include "report/html.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "report/format.h"
#include "report/chart.h"
#include "report/facets.h"
#include "report/figures.h"
#include "report/plots.h"
#include "common/spec.h"

namespace gpubench::report::internal {
namespace {

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

// A figure of report/figures.h in a runs table's cell: "-" where the run
// has none, a share as a percent, a figure in its significant digits.
std::string FigureCell(const Figure& f, const v1::Run& r) {
  const std::optional<double> v = f.number(r);
  if (!v) return "-";
  const std::string unit = f.unit;
  if (f.type == FigureType::kBytes) return Bytes(static_cast<int64_t>(*v));
  if (unit == "share") return absl::StrFormat("%.1f%%", 100 * *v);
  if (unit == "%") return absl::StrFormat("%.0f%%", *v);
  return FormatFigure(*v);
}

std::string Pill(const std::string& text, const std::string& cls) {
  return absl::StrCat("<span class=\"pill ", cls, "\">", EscapeHtml(text),
                      "</span>");
}

// A run's or a job's state by its short name, coloured by how it ended:
// succeeded, failed, stopped short (out of memory, cancelled, interrupted) or
// not ended.
std::string StatePill(const google::protobuf::EnumDescriptor* type, int state) {
  const std::string name = Short(type, state);
  const char* cls =
      name == "succeeded" ? "ok"
      : name == "failed"  ? "bad"
      : name == "out_of_memory" || name == "cancelled" || name == "interrupted"
          ? "warn"
          : "muted";
  return Pill(name, cls);
}

std::string Flags(const v1::Run& r) {
  const auto& res = r.result();
  std::vector<std::string> flags;
  for (const std::string& w : RunWarnings(r)) {
    if (w != "throttled") flags.push_back(Pill(w, "warn"));  // throttled names its reasons below
  }
  if (HasFigures(r)) {
    if (res.bandwidth_gb_per_s() > 0) {
      flags.push_back(
          Pill(absl::StrFormat("%.1f GB/s", res.bandwidth_gb_per_s()), "info"));
    } else if (const std::string rate = FlopRate(res.achieved_tflops() * 1e12);
               !rate.empty()) {
      flags.push_back(Pill(rate, "info"));
    }
  }
  if (const std::string n = NumericsNote(res.numerics()); !n.empty()) {
    const bool ok = res.numerics().passed();
    flags.push_back(Pill(n, ok ? "ok" : res.numerics().checked() ? "bad" : "muted"));
  }
  if (res.telemetry().throttled()) {
    std::string text = "throttled";
    if (!res.telemetry().throttle_reasons().empty()) {
      absl::StrAppend(&text, ": ",
                      absl::StrJoin(res.telemetry().throttle_reasons(), ", "));
    }
    flags.push_back(Pill(text, "warn"));
  }
  switch (r.history().verdict()) {
    case v1::VERDICT_REGRESSED:
      flags.push_back(Pill(
          absl::StrFormat("regressed %.2f\u00d7", r.history().ratio()), "bad"));
      break;
    case v1::VERDICT_IMPROVED:
      flags.push_back(Pill(
          absl::StrFormat("improved %.2f\u00d7", r.history().ratio()), "ok"));
      break;
    default:
      break;
  }
  if (!r.error().empty()) {
    const std::string shown = r.error().size() > 100
                                  ? r.error().substr(0, 100) + "\u2026"
                                  : r.error();
    flags.push_back(absl::StrCat("<span class=\"err\" title=\"",
                                 EscapeHtml(r.error()), "\">",
                                 EscapeHtml(shown), "</span>"));
  }
  return absl::StrJoin(flags, " ");
}

// What each warning in the table's flags means, those that appear only.
std::string WarningLegend(const std::vector<const v1::Run*>& runs) {
  std::vector<std::string> seen;
  for (const v1::Run* r : runs) {
    for (const std::string& w : RunWarnings(*r)) {
      if (std::find(seen.begin(), seen.end(), w) == seen.end()) seen.push_back(w);
    }
  }
  if (seen.empty()) return "";
  std::string out = "<dl class=\"legend\">";
  for (const std::string& w : seen) {
    absl::StrAppend(&out, "<dt>", Pill(w, "warn"), "</dt><dd>", EscapeHtml(WarningMeaning(w)),
                    "</dd>");
  }
  return out + "</dl>\n";
}

std::string Td(const std::string& html, bool num = false) {
  return absl::StrCat(num ? "<td class=\"num\">" : "<td>", html, "</td>");
}

std::string RunTable(const JobView& view) {
  if (view.runs.empty()) {
    return view.src->job.state() == v1::JOB_STATE_RUNNING ||
                   view.src->job.state() == v1::JOB_STATE_QUEUED
               ? "<p class=\"note\">No run has finished yet.</p>\n"
               : "<p class=\"note\">No runs.</p>\n";
  }
  std::string out =
      "<div class=\"tablewrap\"><table class=\"runs\"><thead><tr><th "
      "class=\"num\">#</th>";
  for (int f = 0; f < kFacetCount; ++f) {
    if (view.varying[f])
      absl::StrAppend(&out, "<th>", Facets()[f].header, "</th>");
  }
  // Cancelled runs keep partial figures (HasFigures); the table shows them,
  // flagged. Each figure's heading and presence are the figure table's.
  const Figure& tput = FigureNamed("throughput_samples_per_s");
  std::vector<const Figure*> latency;
  for (const char* name : {"p50_ms", "p95_ms", "p99_ms", "data_wait_share", "gpu_utilization_pct"}) {
    latency.push_back(&FigureNamed(name));
  }
  absl::StrAppend(&out, "<th>state</th><th class=\"num\">", EscapeHtml(tput.heading),
                  "</th><th class=\"num\">95% CI</th>");
  for (const Figure* f : latency) {
    absl::StrAppend(&out, "<th class=\"num\">", EscapeHtml(f->heading), "</th>");
  }
  absl::StrAppend(&out,
                  "<th class=\"num\">peak mem</th><th class=\"num\">loss first&gt;last</th>"
                  "<th>flags</th></tr></thead><tbody>\n");
  for (size_t i = 0; i < view.runs.size(); ++i) {
    const v1::Run& r = *view.runs[i];
    const auto& res = r.result();
    out += "<tr>";
    out += Td(absl::StrCat(r.index()), true);
    for (int f = 0; f < kFacetCount; ++f) {
      if (view.varying[f])
        out += Td(EscapeHtml(view.values[i][f]), f == kBatch || f == kLoaders);
    }
    out += Td(StatePill(v1::RunState_descriptor(), r.state()));
    std::string ci = "-", loss = "-";
    if (HasFigures(r)) {
      if (res.throughput_ci_high() > 0) {
        ci = absl::StrCat(FormatFigure(res.throughput_ci_low()), "\u2013",
                          FormatFigure(res.throughput_ci_high()));
      } else {
        ci = ThroughputIntervalText(res, 1);
      }
      if (FigureNamed("loss_last").number(r)) {
        loss = absl::StrFormat("%.4g &gt; %.4g", res.first_loss(), res.last_loss());
      }
    }
    const int64_t device_bytes = res.memory().peak_device_allocated_bytes();
    const std::string mem =
        device_bytes > 0 ? Bytes(device_bytes)
        : res.memory().peak_host_rss_bytes() > 0
            ? Bytes(res.memory().peak_host_rss_bytes()) + " RSS"
            : "-";
    out += Td(FigureCell(tput, r), true) +
           Td(absl::StrCat("<span class=\"ci\">", ci, "</span>"), true);
    for (const Figure* f : latency) out += Td(FigureCell(*f, r), true);
    out += Td(mem, true) + Td(loss, true) + "<td class=\"flags\">" + Flags(r) + "</td>";
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
  return out + WarningLegend(view.runs);
}

// The largest batch that fit of each config that ran out of memory at a
// larger one; "" where nothing ran out of memory (the largest batch asked
// then fit, and is no limit).
std::string MaxBatchFits(const JobView& view) {
  const std::set<std::string> oom = OutOfMemoryConfigs(view.runs);
  if (oom.empty()) return "";
  std::vector<std::pair<std::string, int>> rows;
  for (const auto& [key, batch] : view.src->job.max_batch_size_fits()) {
    if (oom.count(key) == 0) continue;
    std::string label;
    if (auto config = ParseConfigKey(key); config.ok()) {
      label = GroupLabel(ValuesOf(*config, {}), view.varying, Bit(kBatch));
      if (label.empty()) label = ValuesOf(*config, {})[kWorkload];
    } else {
      label = key;  // written by another version; show it as it is
    }
    rows.push_back({label, batch});
  }
  if (rows.empty()) return "none (the smallest batch ran out of memory)";
  std::sort(rows.begin(), rows.end());
  std::vector<std::string> parts;
  for (const auto& [label, batch] : rows) {
    parts.push_back(absl::StrCat("<span class=\"kv\">", EscapeHtml(label),
                                 ": <b>", batch, "</b></span>"));
  }
  return absl::StrJoin(parts, " ");
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
dl.legend { display: grid; grid-template-columns: max-content 1fr; gap: 4px 10px;
  font-size: 12px; color: #57606a; margin: 6px 0 12px; }
dl.legend dd { margin: 0; align-self: center; }
svg.chart { display: block; width: 100%; height: auto; }
footer { color: #6e7781; font-size: 12px; text-align: center; margin-top: 8px; }
)css";

}  // namespace

std::string JobId(const v1::Job& job) {
  return job.job_id().empty() ? "job" : job.job_id();
}

// A running job's current run: its phase, iterations and time ("" when
// the job is not running).
std::string WhereItIs(const ReportJob& job) {
  if (job.job.state() != v1::JOB_STATE_RUNNING || job.current_run.run_count() == 0) return "";
  const v1::RunProgress& p = job.current_progress;
  std::string now = absl::StrFormat("run %d of %d: %s", job.current_run.index() + 1,
                                    job.current_run.run_count(),
                                    EscapeHtml(DescribeConfig(job.current_run.config())));
  if (p.phase().empty() || p.index() != job.current_run.index()) return now + ", starting";
  return absl::StrCat(now, absl::StrFormat(", %s, %d iterations, %.1f samples/s, %.0f s in, at "
                                           "most %.0f s left",
                                           EscapeHtml(p.phase()), p.iterations(),
                                           p.throughput_samples_per_s(), p.elapsed_ms() / 1000,
                                           p.eta_ms() / 1000));
}

std::string JobSection(const ReportJob& job) {
  const JobView view = MakeView(job);
  const v1::Job& j = job.job;
  std::string out = absl::StrCat(
      "<section class=\"job\" id=\"job-", EscapeHtml(JobId(j)), "\">\n<h2>",
      EscapeHtml(j.spec().name().empty() ? "Job " + j.job_id()
                                         : j.spec().name()),
      " ", StatePill(v1::JobState_descriptor(), j.state()),
      "</h2>\n<dl class=\"summary\">");
  auto row = [&out](const std::string& name, const std::string& html) {
    absl::StrAppend(&out, "<dt>", name, "</dt><dd>", html, "</dd>");
  };
  row("job id", absl::StrCat("<code>", EscapeHtml(j.job_id()), "</code>"));
  row("name", j.spec().name().empty() ? "-" : EscapeHtml(j.spec().name()));
  row("state", StatePill(v1::JobState_descriptor(), j.state()));
  std::string host = EscapeHtml(job.host.empty() ? "local" : job.host);
  if (!j.host_id().empty())
    absl::StrAppend(&host, " <span class=\"muted\">(", EscapeHtml(j.host_id()),
                    ")</span>");
  row("host", host);
  int succeeded = 0;
  for (const v1::Run* r : view.runs)
    succeeded += r->state() == v1::RUN_STATE_SUCCEEDED;
  row("runs", absl::StrFormat("%d of %d done, %d succeeded", j.runs_done(),
                              std::max<int>(j.run_count(), view.runs.size()),
                              succeeded));
  std::string times = EscapeHtml(When(j.submit_time()).empty()
                                     ? "-"
                                     : "submitted " + When(j.submit_time()));
  if (!When(j.start_time()).empty() && !When(j.end_time()).empty()) {
    absl::StrAppend(
        &times, "; ran ",
        EscapeHtml(absl::FormatDuration(absl::Trunc(
            Between(j.start_time(), j.end_time()), absl::Seconds(1)))),
        " from ", EscapeHtml(When(j.start_time())));
  }
  row("time", times);
  if (std::string now = WhereItIs(job); !now.empty()) row("now", now);
  if (const std::string fits = MaxBatchFits(view); !fits.empty()) row("max batch that fit", fits);
  if (!j.schedule_id().empty()) row("schedule", EscapeHtml(j.schedule_id()));
  if (!job.repro.empty()) {
    row("reproduce", absl::StrCat("<code>", EscapeHtml(job.repro), "</code>"));
  }
  if (!j.error().empty())
    row("error",
        absl::StrCat("<span class=\"err\">", EscapeHtml(j.error()), "</span>"));
  if (!j.worker_exit().empty()) row("worker exit", EscapeHtml(j.worker_exit()));
  out += "</dl>\n";
  if (!j.worker_stderr_tail().empty()) {
    absl::StrAppend(&out, "<pre class=\"stderr\">",
                    EscapeHtml(j.worker_stderr_tail()), "</pre>\n");
  }
  if (!view.runs.empty()) {
    std::vector<std::string> fixed;
    for (int f = 0; f < kFacetCount; ++f) {
      if (view.varying[f] || view.values[0][f] == "-") continue;
      fixed.push_back(absl::StrCat("<span class=\"kv\">", Facets()[f].header,
                                   " <b>", EscapeHtml(view.values[0][f]),
                                   "</b></span>"));
    }
    if (!fixed.empty()) {
      absl::StrAppend(&out, "<p class=\"fixed\">Every run: ",
                      absl::StrJoin(fixed, " "), "</p>\n");
    }
  }
  out += RunTable(view);
  const std::string plots = JobPlots(view);
  if (!plots.empty())
    absl::StrAppend(&out, "<div class=\"plots\">\n", plots, "</div>\n");
  out += "</section>\n";
  return out;
}

const char* ReportCss() { return kCss; }

std::string JobIndexRow(const v1::Job& job, const std::string& link) {
  std::vector<std::string> workloads;
  for (const std::string& w : job.spec().sweep().workload()) workloads.push_back(EscapeHtml(w));
  if (workloads.empty()) workloads.push_back(EscapeHtml(job.spec().base().workload()));
  return absl::StrCat("<tr><td><a href=\"", EscapeHtml(link), "\">", EscapeHtml(JobId(job)),
                      "</a></td><td>", EscapeHtml(job.spec().name()), "</td><td>",
                      StatePill(v1::JobState_descriptor(), job.state()), "</td><td>",
                      absl::StrJoin(workloads, ", "), "</td><td class=\"num\">", job.runs_done(),
                      "/", job.run_count(), "</td><td>", When(job.submit_time()), "</td></tr>\n");
}

}  // namespace gpubench::report::internal
