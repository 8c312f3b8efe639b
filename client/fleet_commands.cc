// The CLI's commands across hosts and runs: regressions, report.
#include <algorithm>
#include <climits>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli.h"
#include "client/change_output.h"
#include "client/cli_internal.h"
#include "client/schedule_history.h"
#include "client/json_writer.h"
#include "client/repro.h"
#include "report/profile_diff.h"
#include "report/report.h"
#include "common/printable.h"
#include "common/stats.h"
#include "google/protobuf/util/time_util.h"

namespace gpubench::client {
namespace {

using google::protobuf::util::TimeUtil;

// "regressed", then "; environment differs: power limit 700 W -> 500 W"
// where the run's environment changed since its history's latest, and ";
// biggest change: aten::addmm +42.73 us a sample, ..." where both were
// profiled.
std::string VerdictWithChanges(const v1::HistoryComparison& h) {
  std::string text = Short(v1::Verdict_descriptor(), h.verdict());
  if (!h.environment_changes().empty()) {
    absl::StrAppend(&text, "; environment differs: ",
                    Printable(absl::StrJoin(h.environment_changes(), ", ")));
  }
  if (const std::string change = report::BiggestChange(h); !change.empty()) {
    absl::StrAppend(&text, "; biggest change: ", Printable(change));
  }
  return text;
}

// {"hosts": [{"host", "regressions"}], "change_points": {...}, "missing": [...]}.
void RegressionsJson(const std::vector<Daemon>& daemons, const std::vector<absl::Status>& status,
                     const std::vector<v1::ListRegressionsResponse>& found,
                     const report::ChangeFamily& changes, const Table& missing,
                     std::ostream& out) {
  JsonWriter json(out);
  json.Object().Key("hosts").Array();
  for (size_t i = 0; i < daemons.size(); ++i) {
    if (!status[i].ok()) continue;
    json.Object().Key("host").String(daemons[i].host.name);
    json.Key("regressions").Message(found[i]).End();
  }
  json.End().Key("change_points");
  ChangesJson(changes, json);
  json.Key("missing");
  MissingJson(missing, json);
  json.End();
}

}  // namespace

int RegressionsCommand(const Args& a, std::ostream& out, std::ostream& err) {
  const absl::Time now = absl::Now();
  absl::Time since = now - absl::Hours(24 * 7);
  if (a.Has("since")) {
    auto t = ParseWhen("since", a.Option("since"));
    if (!t.ok()) return Usage(err, std::string(t.status().message()));
    since = *t;
  }
  auto daemons = ConnectAll(a, /*all_fleet=*/true);
  if (!daemons.ok()) return Usage(err, std::string(daemons.status().message()));
  std::vector<v1::ListRegressionsResponse> found(daemons->size());
  std::vector<ScheduleHistory> histories(daemons->size());
  std::vector<absl::Status> status(daemons->size());
  ForEachDaemon(*daemons, [&](size_t i) {
    v1::ListRegressionsRequest req;
    *req.mutable_since() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(since));
    req.set_include_improvements(a.Has("include-improvements"));
    auto resp = (*daemons)[i].Call(&v1::BenchService::Stub::ListRegressions, req);
    status[i] = resp.status();
    if (!resp.ok()) return;
    found[i] = std::move(*resp);
    status[i] = ReadScheduleHistory((*daemons)[i], since, now, &histories[i]);
  });
  int code = kExitOk;
  Table t;
  t.header = {"host", "run", "job", "config", "verdict", "samples/s", "baseline", "ratio",
              "history", "ended"};
  Table missing;
  missing.header = {"host", "what", "missing"};
  std::vector<report::Series> family;
  bool regressed = false;
  for (size_t i = 0; i < daemons->size(); ++i) {
    if (!status[i].ok()) {
      code = std::max(code, CallFailed((*daemons)[i].host, status[i], err));
      missing.rows.push_back({(*daemons)[i].host.name, "host",
                              absl::StrCat("did not answer: ", status[i].message())});
      continue;
    }
    for (const v1::Run& r : found[i].runs()) {
      const auto& h = r.history();
      regressed |= h.verdict() == v1::VERDICT_REGRESSED;
      t.rows.push_back({(*daemons)[i].host.name, r.run_id(), r.job_id(), DescribeConfig(r.config()),
                        VerdictWithChanges(h),
                        absl::StrFormat("%.1f", h.value_samples_per_s()),
                        absl::StrFormat("%.1f", h.baseline_median_samples_per_s()),
                        absl::StrFormat("%.3f", h.ratio()), absl::StrCat(h.history_count()),
                        absl::FormatTime("%Y-%m-%d %H:%M", absl::FromUnixSeconds(r.end_time().seconds()),
                                         absl::LocalTimeZone())});
    }
    for (auto& s : histories[i].series) family.push_back(std::move(s));
    for (auto& row : histories[i].missing) missing.rows.push_back(std::move(row));
  }
  // The family is judged whole; the points named are those since --since.
  report::ChangeFamily changes = report::FindChanges(family, stats::ChangePointRule());
  changes.kept.erase(std::remove_if(changes.kept.begin(), changes.kept.end(),
                                    [&](const report::SeriesChange& c) {
                                      return c.first_after->start_ns < absl::ToUnixNanos(since);
                                    }),
                     changes.kept.end());
  if (a.format == Format::kJson) {
    RegressionsJson(*daemons, status, found, changes, missing, out);
  } else {
    PrintTable(t, a.format, out);
    PrintChanges(changes, a.format, out, err);
    PrintMissing(missing, a.format, out);
  }
  err << HostsAnswered(*daemons, status) << "\n";
  if (regressed || StillWorse(changes)) code = std::max(code, kExitRegression);
  if (!missing.rows.empty()) code = std::max(code, kExitMissing);
  return code;
}

namespace {

// Where each of the job's profiled CUDA runs' device time went, from its
// stored trace, read as it streams in; a trace that cannot be read is said
// on err and left out.
void AddBreakdowns(const Daemon& d, report::ReportJob* job, std::ostream& err) {
  for (const v1::Run& run : job->runs) {
    const v1::ProfileSummary& p = run.result().profile();
    if (!p.has_trace() || !p.device_times()) continue;
    report::TraceEvents events;
    if (auto s = FetchTraceEvents(d, run.run_id(), 0, &events); !s.ok()) {
      err << "gpubench: " << run.run_id() << "'s breakdown left out: "
          << Printable(std::string(s.message())) << "\n";
      continue;
    }
    job->breakdowns[run.run_id()] = report::BreakDown(std::move(events), INT_MAX);
  }
}

}  // namespace

int ReportCommand(const Args& a, std::ostream& out, std::ostream& err) {
  if (a.positional.empty() || !a.Has("out")) return Usage(err, "report JOB... -o FILE");
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  std::vector<report::ReportJob> jobs;
  for (const std::string& id : a.positional) {
    report::ReportJob rj;
    rj.host = d->host.name;
    {
      v1::GetJobRequest req;
      req.set_job_id(id);
      auto resp = d->Call(&v1::BenchService::Stub::GetJob, req);
      if (!resp.ok()) return CallFailed(d->host, resp.status(), err);
      rj.job = resp->job();
    }
    if (auto s = ListAllRuns(*d, id, /*include_samples=*/false, &rj.runs); !s.ok()) {
      return CallFailed(d->host, s, err);
    }
    if (auto s = ListPeakRuns(*d, rj.job, rj.runs, &rj.peak_runs); !s.ok()) {
      return CallFailed(d->host, s, err);
    }
    rj.repro = ReproCommand(rj.job.job_id(), rj.job.spec());
    AddBreakdowns(*d, &rj, err);
    jobs.push_back(std::move(rj));
  }
  const std::string path = a.Option("out");
  std::ofstream file(path, std::ios::trunc);
  if (!file) return Usage(err, "cannot write " + path);
  file << report::RenderReport(jobs, a.Option("title", "gpubench report"));
  file.close();
  if (!file) {
    err << "gpubench: writing " << path << " failed\n";
    return kExitJobFailed;
  }
  out << path << "\n";
  return kExitOk;
}

}  // namespace gpubench::client
