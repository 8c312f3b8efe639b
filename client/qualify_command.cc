// gpubench qualify: a decision per check of each host's probe session
// (report/qualify.h) against its SKU's envelope, with the one line, exit
// code and textfile that node-problem-detector, Slurm's NHC and Prometheus
// take.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/json_writer.h"
#include "client/output.h"
#include "client/probe_hosts.h"
#include "common/printable.h"
#include "report/fleet_rank.h"
#include "report/qualify.h"

namespace gpubench::client {

extern const char kShippedEnvelope[];  // shipped_envelope.cc, from deploy/envelopes/v1.json

namespace {

using report::ProbeFigureText;

absl::StatusOr<v1::Envelope> EnvelopeFrom(const Args& a) {
  if (!a.Has("envelope")) return report::ParseEnvelope(kShippedEnvelope, "shipped envelope");
  std::ifstream in(a.Option("envelope"));
  if (!in) return absl::InvalidArgumentError("--envelope: cannot read " + a.Option("envelope"));
  std::stringstream text;
  text << in.rdbuf();
  return report::ParseEnvelope(text.str(), a.Option("envelope"));
}

void QualifyJson(const std::vector<report::Check>& checks, const std::string& line,
                 std::ostream& out) {
  JsonWriter json(out);
  json.Object().Key("status").String(line).Key("outcome").String(
      report::OutcomeName(report::Overall(checks)));
  json.Key("checks").Array();
  for (const report::Check& c : checks) {
    json.Object()
        .Key("host").String(c.host)
        .Key("device").String(c.device)
        .Key("probe").String(c.probe)
        .Key("sku").String(c.sku)
        .Key("outcome").String(report::OutcomeName(c.outcome))
        .Key("value").Number(c.value)
        .Key("unit").String(c.unit)
        .Key("why").String(c.why)
        .Key("run_id").String(c.run_id);
    if (c.has_envelope) {
      json.Key("envelope").Object()
          .Key("median").Number(c.envelope.median())
          .Key("bound").Number(c.envelope.bound())
          .Key("sessions").Int(c.envelope.sessions())
          .Key("source").String(c.envelope.source())
          .End();
    }
    json.End();
  }
  json.End().End();
}

Table QualifyTable(const std::vector<report::Check>& checks) {
  Table t;
  t.header = {"host", "device", "probe", "check", "figure", "unit", "bound", "why"};
  for (const report::Check& c : checks) {
    t.rows.push_back({c.host, c.device, c.probe, report::OutcomeName(c.outcome),
                      c.value > 0 ? ProbeFigureText(c.value) : "-", c.unit,
                      c.has_envelope ? ProbeFigureText(c.envelope.bound()) : "-",
                      Printable(c.why)});
  }
  return t;
}

// One host's session: the suite of request run now (as probe), or its
// latest stored sessions since `since` (--latest). A sustained run comes
// with its per-iteration samples, its throughput over time.
absl::Status SessionOf(const Daemon& d, const v1::RunProbeRequest& request, bool latest,
                       const google::protobuf::Timestamp& since, std::vector<v1::Run>* runs,
                       std::ostream& log) {
  if (latest) {
    if (auto s = ProbeRuns(d, since, runs); !s.ok()) return s;
  } else {
    auto queued = d.Call(&v1::BenchService::Stub::RunProbe, request);
    if (!queued.ok()) return queued.status();
    for (const v1::Job& job : queued->jobs()) GatherJob(d, job.job_id(), runs, log);
  }
  if (request.level() < 2) return absl::OkStatus();
  // The newest held run of each device is the one judged: its samples only.
  std::set<std::string> judged;
  for (const auto& [key, held] : report::NewestHeld(*runs)) {
    if (report::ProbeLevelOf(*held) <= request.level()) judged.insert(held->run_id());
  }
  for (v1::Run& run : *runs) {
    if (judged.count(run.run_id()) == 0) continue;
    auto got = FetchRun(d, run.run_id(), /*include_samples=*/true);
    if (!got.ok()) return got.status();
    run = *std::move(got);
  }
  return absl::OkStatus();
}

// A hold's flag in whole seconds from 1 to most, or 0 where not given;
// InvalidArgument naming the flag.
absl::StatusOr<int32_t> SecondsOf(const Args& a, const std::string& flag, int64_t most,
                                  int from_level, int level) {
  if (!a.Has(flag)) return 0;
  absl::Duration held;
  if (!absl::ParseDuration(a.Option(flag), &held) || held < absl::Seconds(1) ||
      held > absl::Seconds(most) || held != absl::Trunc(held, absl::Seconds(1))) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": whole seconds from 1s to ",
                                                   most, "s (", most / 60, "m), as 60s or 2m"));
  }
  if (level < from_level) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": only with --level ", from_level, from_level < 3 ? " or 3" : ""));
  }
  return static_cast<int32_t>(absl::ToInt64Seconds(held));
}

// --level, --sustain and --load as the daemon's request; InvalidArgument
// naming the flag.
absl::StatusOr<v1::RunProbeRequest> LevelOf(const Args& a) {
  v1::RunProbeRequest request;
  const std::string level = a.Option("level", "1");
  if (level != "1" && level != "2" && level != "3") {
    return absl::InvalidArgumentError("--level: 1, 2 or 3");
  }
  request.set_level(level[0] - '0');
  auto sustain = SecondsOf(a, "sustain", 600, 2, request.level());
  if (!sustain.ok()) return sustain.status();
  auto load = SecondsOf(a, "load", 3600, 3, request.level());
  if (!load.ok()) return load.status();
  request.set_sustain_s(*sustain);
  request.set_load_s(*load);
  return request;
}

// The line on stdout, the table on stderr (or the JSON), the textfile, and
// the exit code of checks.
int Verdict(const Args& a, const std::vector<report::Check>& checks, int level,
            std::ostream& out, std::ostream& err) {
  const std::string line = report::StatusLine(checks, level);
  if (a.format == Format::kJson) {
    QualifyJson(checks, line, out);
  } else {
    out << Printable(line) << "\n";
    PrintTable(QualifyTable(checks), a.format, err);
  }
  if (a.Has("textfile")) {
    // Written whole, then renamed: the collector never reads half a file.
    const std::string path = a.Option("textfile"), part = path + ".part";
    std::ofstream file(part, std::ios::trunc);
    file << report::QualifyMetrics(checks);
    file.close();
    if (!file || std::rename(part.c_str(), path.c_str()) != 0) {
      err << "gpubench: --textfile: cannot write " << path << "\n";
      return 2;
    }
  }
  switch (report::Overall(checks)) {
    case report::Outcome::kPass:
      return 0;
    case report::Outcome::kFail:
      return 1;
    case report::Outcome::kUnknown:
      break;
  }
  return 2;
}

// qualify --pairs: the links between the hosts, not their GPUs.
int QualifyPairs(const Args& a, std::ostream& out, std::ostream& err) {
  for (const char* other : {"level", "sustain", "load", "latest", "envelope"}) {
    if (a.Has(other)) {
      return Usage(err, absl::StrCat("--pairs judges the links between hosts against each "
                                     "other: no --", other));
    }
  }
  auto daemons = ConnectAll(a, /*all_fleet=*/true);
  if (!daemons.ok()) return Usage(err, std::string(daemons.status().message()));
  if (daemons->size() < 2) return Usage(err, "--pairs: two hosts or more (--host, or the fleet file)");
  std::vector<std::string> hosts;
  std::set<std::string> addresses;
  for (const Daemon& d : *daemons) {
    // One daemon under two names would pair with itself, and wait.
    if (!addresses.insert(d.host.address).second) {
      return Usage(err, absl::StrCat("--pairs: ", d.host.address, " is named twice"));
    }
    hosts.push_back(d.host.name);
  }
  std::ostringstream log;
  const std::vector<report::HostPairResult> pairs = RunHostPairs(*daemons, log);
  err << log.str();
  return Verdict(a, report::QualifyHostPairs(hosts, pairs), /*level=*/0, out, err);
}

// The suite run again on each host marked in confirm (all at once), and
// each one's fails kept only where its re-run fails too (report::ConfirmFails).
void RerunFailingHosts(const std::vector<Daemon>& daemons, const std::vector<HostRuns>& hosts,
                       const std::vector<bool>& confirm, const v1::Envelope& envelope,
                       const google::protobuf::Timestamp& since,
                       std::vector<std::vector<report::Check>>* by_host, std::ostream& err) {
  std::vector<std::string> rerun_logs(hosts.size());
  const std::vector<HostRuns> reruns =
      EachHost(daemons, [&](size_t i, const v1::HostInfo&, HostRuns* host) {
        if (!confirm[i]) return;
        v1::RunProbeRequest again;
        again.set_level(1);
        std::ostringstream log;
        host->status = SessionOf(daemons[i], again, false, since, &host->runs, log);
        rerun_logs[i] = log.str();
      });
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (!confirm[i]) continue;
    const std::string& name = daemons[i].host.name;
    err << rerun_logs[i];
    if (!reruns[i].status.ok()) {
      err << "qualify: " << name << ": the re-run: " << reruns[i].status.message() << "\n";
    }
    std::vector<report::Check> rerun;
    if (reruns[i].status.ok()) {
      rerun = report::QualifyHost(name, hosts[i].cpu_model, reruns[i].runs, envelope, 1);
    }
    report::ConfirmFails(rerun, &(*by_host)[i]);
  }
}

}  // namespace

int QualifyCommand(const Args& a, std::ostream& out, std::ostream& err) {
  if (a.Has("pairs")) return QualifyPairs(a, out, err);
  auto request = LevelOf(a);
  if (!request.ok()) return Usage(err, std::string(request.status().message()));
  auto envelope = EnvelopeFrom(a);
  if (!envelope.ok()) return Usage(err, std::string(envelope.status().message()));
  auto oldest = ParseWhen("--max-age", a.Option("max-age", "8d"));
  if (!oldest.ok()) return Usage(err, std::string(oldest.status().message()));
  google::protobuf::Timestamp since;
  since.set_seconds(absl::ToUnixSeconds(*oldest));
  auto daemons = ConnectAll(a, /*all_fleet=*/true);
  if (!daemons.ok()) return Usage(err, std::string(daemons.status().message()));
  std::vector<std::string> logs(daemons->size());
  const std::vector<HostRuns> hosts =
      EachHost(*daemons, [&](size_t i, const v1::HostInfo&, HostRuns* host) {
        std::ostringstream log;
        host->status =
            SessionOf((*daemons)[i], *request, a.Has("latest"), since, &host->runs, log);
        logs[i] = log.str();
      });
  // Each answering host's checks; a fail of the suite drains a node, so
  // where one fails the suite runs again (on every such host at once) and a
  // fail stands only where its re-run fails too.
  std::vector<std::vector<report::Check>> by_host(hosts.size());
  std::vector<bool> confirm(hosts.size(), false);
  for (size_t i = 0; i < hosts.size(); ++i) {
    err << logs[i];
    if (!hosts[i].status.ok()) continue;
    const std::string& name = (*daemons)[i].host.name;
    by_host[i] =
        report::QualifyHost(name, hosts[i].cpu_model, hosts[i].runs, *envelope, request->level());
    confirm[i] = !a.Has("latest") && report::NeedsConfirming(by_host[i]);
    if (confirm[i]) {
      err << "qualify: " << name << ": a check fails; running the suite again to confirm\n";
    }
  }
  if (std::find(confirm.begin(), confirm.end(), true) != confirm.end()) {
    RerunFailingHosts(*daemons, hosts, confirm, *envelope, since, &by_host, err);
  }
  std::vector<report::Check> checks;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (!hosts[i].status.ok()) {
      report::Check c;
      c.host = (*daemons)[i].host.name;
      c.device = "-";
      c.probe = "-";
      c.why = absl::StrCat("did not answer: ", hosts[i].status.message());
      checks.push_back(c);
      continue;
    }
    for (report::Check& c : by_host[i]) checks.push_back(std::move(c));
  }
  return Verdict(a, checks, request->level(), out, err);
}

}  // namespace gpubench::client
