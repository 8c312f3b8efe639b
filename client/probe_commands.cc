// gpubench probe: the fleet probe suite (report/fleet_rank.h) on every host,
// each GPU in turn, the host to itself: each daemon builds and marks the
// suite's jobs itself (RunProbe), and the command follows them. gpubench
// fleet: every GPU's latest probe figures (the daemons' own probe runs
// only) ranked against its peers (same SKU and driver) across the fleet,
// with stragglers, drift and what differs in their setup.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli.h"
#include "client/change_output.h"
#include "client/cli_internal.h"
#include "client/json_writer.h"
#include "client/output.h"
#include "client/probe_hosts.h"
#include "common/printable.h"
#include "common/spec.h"
#include "report/fleet_rank.h"
#include "report/qualify.h"
#include "report/report.h"

namespace gpubench::client {
namespace {

using report::FleetRule;
using report::ProbeFigureText;
using report::ProbeNamed;
using report::ProbeResult;
using report::Ranked;

// What a ranked row says beyond its figures: straggler, drift, and what
// differs in its setup where it is flagged.
std::string Flags(const Ranked& r) {
  std::vector<std::string> flags;
  if (r.straggler) {
    flags.push_back(absl::StrFormat("straggler: %.2fx the median of %d", r.ratio, r.peers));
  }
  if (r.drifted) {
    flags.push_back(absl::StrFormat("drifted: %.2fx its own last %d", *r.drift,
                                    static_cast<int>(r.result.history.size())));
  }
  if (r.straggler_too_noisy) {
    flags.push_back(absl::StrFormat("%.2fx the median, within the noise (its peers' spread, "
                                    "or the probe's between sessions): too noisy to tell",
                                    r.ratio));
  }
  if (r.drift_too_noisy) {
    flags.push_back(absl::StrFormat("%.2fx its own last %d, within their spread: too noisy "
                                    "to tell",
                                    *r.drift, static_cast<int>(r.result.history.size())));
  }
  if (!r.no_verdict.empty()) flags.push_back(r.no_verdict);
  if ((r.straggler || r.drifted) && !r.differs.empty()) {
    flags.push_back(absl::StrJoin(r.differs, ", "));
  }
  return absl::StrJoin(flags, "; ");
}

Table FleetTable(const std::vector<Ranked>& ranked) {
  Table t;
  t.header = {"probe", "sku", "host", "gpu", "figure", "unit", "x median", "percentile", "z",
              "drift", "flags"};
  for (const Ranked& r : ranked) {
    const report::ProbeInfo* info = ProbeNamed(r.result.probe);
    t.rows.push_back(
        {r.result.probe, r.result.sku, r.result.host, r.result.gpu, ProbeFigureText(r.result.value),
         info ? info->unit : "", absl::StrFormat("%.3f", r.ratio),
         r.percentile ? absl::StrFormat("%.0f", *r.percentile) : "-",
         r.z ? absl::StrFormat("%+.2f", *r.z) : "-",
         r.drift ? absl::StrFormat("%.3f", *r.drift) : "-", Flags(r)});
  }
  return t;
}

void FleetJson(const std::vector<Ranked>& ranked, const std::string& answered,
               const report::ChangeFamily& changes, const Table& missing, std::ostream& out) {
  JsonWriter json(out);
  json.Object().Key("suite").String(report::kProbeSuite).Key("answered").String(answered);
  json.Key("gpus").Array();
  for (const Ranked& r : ranked) {
    json.Object()
        .Key("probe").String(r.result.probe)
        .Key("sku").String(r.result.sku)
        .Key("host").String(r.result.host)
        .Key("gpu").String(r.result.gpu)
        .Key("run_id").String(r.result.run_id)
        .Key("value").Number(r.result.value)
        .Key("peers").Int(r.peers)
        .Key("median").Number(r.median)
        .Key("ratio").Number(r.ratio);
    if (r.percentile) json.Key("percentile").Number(*r.percentile);
    if (r.z) json.Key("z").Number(*r.z);
    if (r.drift) json.Key("drift").Number(*r.drift);
    json.Key("history").Array();
    for (double v : r.result.history) json.Number(v);
    json.End();
    json.Key("straggler").Bool(r.straggler).Key("drifted").Bool(r.drifted);
    if (r.no_verdict.empty()) json.Key("noise").Number(r.noise);
    if (!r.no_verdict.empty()) json.Key("no_verdict").String(r.no_verdict);
    json.Key("straggler_too_noisy").Bool(r.straggler_too_noisy);
    json.Key("drift_too_noisy").Bool(r.drift_too_noisy);
    json.Key("differs").Array();
    for (const std::string& d : r.differs) json.String(d);
    json.End().End();
  }
  json.End();
  json.Key("change_points");
  ChangesJson(changes, json);
  json.Key("missing");
  MissingJson(missing, json);
  json.End();
}

// What ranking reads of a run, and nothing more: a host's answers are held
// for every host at once.
v1::Run Trimmed(const v1::Run& r) {
  v1::Run t;
  t.set_run_id(r.run_id());
  t.set_job_id(r.job_id());
  t.set_state(r.state());
  t.set_daemon_probe(r.daemon_probe());
  *t.mutable_config() = r.config();
  *t.mutable_start_time() = r.start_time();
  *t.mutable_fingerprint() = r.fingerprint();
  const v1::RunResult& from = r.result();
  v1::RunResult* to = t.mutable_result();
  to->set_resolved_device(from.resolved_device());
  to->set_achieved_tflops(from.achieved_tflops());
  to->set_bandwidth_gb_per_s(from.bandwidth_gb_per_s());
  to->set_bus_bandwidth_gb_per_s(from.bus_bandwidth_gb_per_s());
  to->set_throughput_samples_per_s(from.throughput_samples_per_s());
  *to->mutable_host_latency() = from.host_latency();
  // What says it was contended or throttled (NotABaselineBecause).
  *to->mutable_contention() = from.contention();
  *to->mutable_telemetry()->mutable_throttle_reasons() = from.telemetry().throttle_reasons();
  return t;
}

absl::StatusOr<FleetRule> RuleOf(const Args& a) {
  FleetRule rule;
  if (a.Has("threshold") && (!absl::SimpleAtod(a.Option("threshold"), &rule.threshold) ||
                             !std::isfinite(rule.threshold) || rule.threshold <= 0 ||
                             rule.threshold >= 1)) {
    return absl::InvalidArgumentError("--threshold: must be a number in (0, 1), e.g. 0.05");
  }
  return rule;
}

// Every host's probe results; each host that did not answer said on err.
// The worst exit code of those.
int ResultsOf(const std::vector<Daemon>& daemons, const std::vector<HostRuns>& hosts,
              std::vector<ProbeResult>* results, std::vector<absl::Status>* status,
              std::ostream& err) {
  int code = kExitOk;
  for (size_t i = 0; i < daemons.size(); ++i) {
    status->push_back(hosts[i].status);
    if (!hosts[i].status.ok()) {
      // A host that failed part of the way is not ranked on the part.
      code = std::max(code, CallFailed(daemons[i].host, hosts[i].status, err));
      continue;
    }
    for (ProbeResult& r : report::ProbeResults(daemons[i].host.name, hosts[i].cpu_model,
                                               hosts[i].runs)) {
      // A held product is qualify's alone: its length varies with
      // --sustain or --load, so its runs are no series to rank or bound.
      if (const report::ProbeInfo* p = ProbeNamed(r.probe); p != nullptr && p->held) continue;
      results->push_back(std::move(r));
    }
  }
  return code;
}

// A GPU's probe sessions as a series for change points.
report::Series SeriesOf(const ProbeResult& r) {
  const report::ProbeInfo* info = ProbeNamed(r.probe);
  report::Series s;
  s.host = r.host;
  s.what = absl::StrCat(r.gpu, " ", r.probe);
  s.unit = info ? info->unit : "";
  s.higher_is_better = info == nullptr || info->higher_is_better;
  s.points = r.sessions;
  return s;
}

// Each device of each host that answered whose latest probe session (any
// probe) started before `oldest`, or that has none since --since.
Table StaleProbes(const std::vector<Daemon>& daemons, const std::vector<HostRuns>& hosts,
                  const std::vector<ProbeResult>& results, absl::Time oldest) {
  Table t;
  t.header = {"host", "what", "missing"};
  for (size_t i = 0; i < daemons.size(); ++i) {
    if (!hosts[i].status.ok()) continue;
    for (const std::string& device : hosts[i].devices) {
      int64_t latest = 0;
      for (const ProbeResult& r : results) {
        if (r.host != daemons[i].host.name || !r.sessions.size()) continue;
        if (r.gpu != device && !absl::StartsWith(r.gpu, device + " ")) continue;
        latest = std::max(latest, r.sessions.back().start_ns);
      }
      if (latest >= absl::ToUnixNanos(oldest)) continue;
      t.rows.push_back({daemons[i].host.name, device,
                        latest == 0 ? "no probe in the window (--since)"
                                    : absl::StrCat("latest probe ",
                                                   absl::FormatTime("%Y-%m-%d %H:%M",
                                                                    absl::FromUnixNanos(latest),
                                                                    absl::LocalTimeZone()),
                                                   ", older than --max-age")});
    }
  }
  return t;
}

}  // namespace

absl::Status ProbeRuns(const Daemon& d, const google::protobuf::Timestamp& since,
                       std::vector<v1::Run>* runs) {
  for (const report::ProbeInfo& p : report::ProbeSuite()) {
    v1::QueryRunsRequest req;
    req.add_config_equals(absl::StrCat("probe=", report::kProbeSuite, "/", p.name));
    req.add_states(v1::RUN_STATE_SUCCEEDED);
    *req.mutable_started_after() = since;
    req.set_page_size(1000);
    for (int page = 0; page < 10; ++page) {  // 10,000 runs of a probe at most
      auto resp = d.Call(&v1::BenchService::Stub::QueryRuns, req);
      if (!resp.ok()) return resp.status();
      if (resp->runs_size() > req.page_size()) {
        return absl::DataLossError(absl::StrCat("answered ", resp->runs_size(),
                                                " runs to a page of ", req.page_size()));
      }
      for (const v1::Run& r : resp->runs()) runs->push_back(Trimmed(r));
      if (resp->next_page_token().empty()) break;
      req.set_page_token(resp->next_page_token());
    }
  }
  return absl::OkStatus();
}

std::vector<HostRuns> EachHost(
    const std::vector<Daemon>& daemons,
    const std::function<void(size_t, const v1::HostInfo&, HostRuns*)>& gather) {
  std::vector<HostRuns> hosts(daemons.size());
  ForEachDaemon(daemons, [&](size_t i) {
    auto info = daemons[i].Call(&v1::BenchService::Stub::GetHostInfo, v1::GetHostInfoRequest());
    hosts[i].status = info.status();
    if (!info.ok()) return;
    hosts[i].cpu_model = info->host().cpu_model();
    for (const v1::GpuInfo& g : info->host().gpus()) {
      hosts[i].devices.push_back(absl::StrCat("cuda:", g.index()));
    }
    if (hosts[i].devices.empty()) hosts[i].devices.push_back("cpu");
    gather(i, info->host(), &hosts[i]);
  });
  return hosts;
}

int ProbeCommand(const Args& a, std::ostream& out, std::ostream& err) {
  auto daemons = ConnectAll(a, /*all_fleet=*/true);
  if (!daemons.ok()) return Usage(err, std::string(daemons.status().message()));
  v1::RunProbeRequest request;
  request.set_small(a.Has("small"));
  std::vector<int> codes(daemons->size(), kExitOk);
  std::vector<std::string> logs(daemons->size());
  std::mutex err_mu;
  const std::vector<HostRuns> hosts =
      EachHost(*daemons, [&](size_t i, const v1::HostInfo&, HostRuns* host) {
        const Daemon& d = (*daemons)[i];
        // The daemon builds the suite from its own host info and marks its
        // runs as its probes: nothing of the suite is sent from here.
        auto queued = d.Call(&v1::BenchService::Stub::RunProbe, request);
        if (!queued.ok()) {
          host->status = queued.status();
          return;
        }
        std::ostringstream log;
        const int n = queued->jobs_size();
        for (int j = 0; j < n; ++j) {
          const v1::Job& job = queued->jobs(j);
          codes[i] = std::max(codes[i], GatherJob(d, job.job_id(), &host->runs, log));
          std::lock_guard<std::mutex> lock(err_mu);
          err << d.host.name << ": " << job.spec().base().probe() << " done (" << j + 1
              << " of " << n << ")\n";
        }
        logs[i] = log.str();
      });
  for (const std::string& log : logs) err << log;
  std::vector<ProbeResult> results;
  std::vector<absl::Status> status;
  int code = ResultsOf(*daemons, hosts, &results, &status, err);
  for (int c : codes) code = std::max(code, c);
  Table t;
  t.header = {"host", "gpu", "sku", "probe", "figure", "unit", "run", "fleet"};
  for (const ProbeResult& r : results) {
    const report::ProbeInfo* info = ProbeNamed(r.probe);
    t.rows.push_back({r.host, r.gpu, r.sku, r.probe, ProbeFigureText(r.value),
                      info ? info->unit : "", r.run_id, "counts"});
  }
  // A run the session made that fleet will not rank (contended, throttled)
  // is shown, and why, rather than dropped without a word.
  int left_out = 0;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (!hosts[i].status.ok()) continue;
    for (const v1::Run& r : hosts[i].runs) {
      const std::string why = report::NotAProbeResultBecause(r);
      if (why.empty() || r.state() != v1::RUN_STATE_SUCCEEDED) continue;  // failures: above
      const report::ProbeInfo* probe = report::ProbeOf(r);
      const double value = probe ? report::ProbeFigure(*probe, r) : 0;
      ++left_out;
      t.rows.push_back({(*daemons)[i].host.name,
                        r.result().resolved_device().empty() ? r.config().device()
                                                             : r.result().resolved_device(),
                        "", r.config().probe(), value > 0 ? ProbeFigureText(value) : "-",
                        probe ? probe->unit : "", r.run_id(), "left out: " + why});
    }
  }
  PrintTable(t, a.format, out);
  err << HostsAnswered(*daemons, status);
  if (left_out > 0) err << "; " << left_out << " run(s) left out of fleet (its column says why)";
  err << "; `gpubench fleet` ranks each GPU against its peers\n";
  return code;
}

int FleetCommand(const Args& a, std::ostream& out, std::ostream& err) {
  auto daemons = ConnectAll(a, /*all_fleet=*/true);
  if (!daemons.ok()) return Usage(err, std::string(daemons.status().message()));
  auto rule = RuleOf(a);
  if (!rule.ok()) return Usage(err, std::string(rule.status().message()));
  auto since = ParseWhen("--since", a.Option("since", "30d"));
  if (!since.ok()) return Usage(err, std::string(since.status().message()));
  auto oldest = ParseWhen("--max-age", a.Option("max-age", "8d"));
  if (!oldest.ok()) return Usage(err, std::string(oldest.status().message()));
  google::protobuf::Timestamp after;
  after.set_seconds(absl::ToUnixSeconds(*since));
  const std::vector<HostRuns> hosts =
      EachHost(*daemons, [&](size_t i, const v1::HostInfo&, HostRuns* host) {
        host->status = ProbeRuns((*daemons)[i], after, &host->runs);
      });
  std::vector<ProbeResult> results;
  std::vector<absl::Status> status;
  std::ostringstream failures;
  int code = ResultsOf(*daemons, hosts, &results, &status, failures);
  const std::vector<Ranked> ranked = report::RankFleet(results, *rule);
  const std::string answered = HostsAnswered(*daemons, status);
  std::vector<report::Series> family;
  for (const ProbeResult& r : results) family.push_back(SeriesOf(r));
  const report::ChangeFamily changes = report::FindChanges(family, stats::ChangePointRule());
  const Table missing = StaleProbes(*daemons, hosts, results, *oldest);
  if (a.Has("envelope")) {
    const std::string source = absl::StrCat(
        "gpubench fleet --envelope --since ", a.Option("since", "30d"), ", ",
        absl::FormatTime("%Y-%m-%d", absl::Now(), absl::UTCTimeZone()), ", ", answered);
    std::vector<std::string> left_out;
    const v1::Envelope envelope = report::EnvelopeOf(results, *rule, source, &left_out);
    std::ofstream file(a.Option("envelope"));
    file << report::EnvelopeJson(envelope);
    if (!file) return Usage(err, "--envelope: cannot write " + a.Option("envelope"));
    err << "envelope: " << envelope.probes_size() << " SKU and probe entries (" << rule->min_history
        << " sessions or more each) written to " << a.Option("envelope") << "\n";
    for (const std::string& why : left_out) err << "envelope: left out " << why << "\n";
  }
  if (a.Has("report")) {
    std::ofstream page(a.Option("report"));
    page << report::RenderFleetPage(ranked, answered, *rule);
    if (!page) return Usage(err, "--report: cannot write " + a.Option("report"));
  }
  if (a.format == Format::kJson) {
    FleetJson(ranked, answered, changes, missing, out);
  } else {
    PrintTable(FleetTable(ranked), a.format, out);
    PrintChanges(changes, a.format, out, err);
    PrintMissing(missing, a.format, out);
  }
  err << failures.str() << answered << "\n";
  if (ranked.empty()) {
    err << "gpubench: no probe results since " << a.Option("since", "30d")
        << ": run `gpubench probe` on the fleet first\n";
  }
  const bool flagged = StillWorse(changes) ||
                      std::any_of(ranked.begin(), ranked.end(),
                                  [](const Ranked& r) { return r.straggler || r.drifted; });
  if (flagged) code = std::max(code, kExitRegression);
  return missing.rows.empty() ? code : std::max(code, kExitMissing);
}

}  // namespace gpubench::client
