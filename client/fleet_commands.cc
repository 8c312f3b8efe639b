// The CLI's commands across hosts and runs: hosts, compare, regressions,
// report.
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/compare.h"
#include "client/report.h"
#include "common/spec.h"
#include "google/protobuf/util/time_util.h"

namespace gpubench::client {
namespace {

using google::protobuf::util::TimeUtil;

constexpr int kHistoryRuns = 7;

std::string GiB(int64_t bytes) { return absl::StrFormat("%.1f GiB", bytes / double(1 << 30)); }

struct Side {
  std::string name;  // host, job or run it came from
  std::vector<v1::Run> runs;
};

// One comparison row.
struct Row {
  std::string config, baseline, candidate;
  double baseline_tput = 0, candidate_tput = 0;
  Comparison c;
};

Table RowsTable(const std::vector<Row>& rows) {
  Table t;
  t.header = {"config",     "baseline",     "candidate", "base samples/s", "cand samples/s",
              "speedup",    "95% CI",       "p",         "verdict"};
  for (const Row& r : rows) {
    const bool ok = r.c.verdict != Verdict::kNotComparable;
    t.rows.push_back(
        {r.config, r.baseline, r.candidate, absl::StrFormat("%.1f", r.baseline_tput),
         absl::StrFormat("%.1f", r.candidate_tput),
         ok ? absl::StrFormat("%.3f", r.c.speedup.value) : "-",
         ok ? absl::StrFormat("%.3f-%.3f", r.c.speedup.ci95.low, r.c.speedup.ci95.high) : "-",
         ok ? absl::StrFormat("%.2g", r.c.p_value) : "-",
         ok ? VerdictName(r.c.verdict) : VerdictName(r.c.verdict) + ": " + r.c.why});
  }
  return t;
}

// Pairs the runs of two sides by config (every field equal) and compares
// each pair; two sides of one run each are compared whatever their configs.
std::vector<Row> Pair(const Side& base, const Side& cand, const CompareRule& rule) {
  std::vector<Row> rows;
  std::map<std::string, const v1::Run*> by_config;
  for (const v1::Run& r : base.runs) by_config[ConfigKey(r.config())] = &r;
  const bool single = base.runs.size() == 1 && cand.runs.size() == 1;
  for (const v1::Run& r : cand.runs) {
    const v1::Run* b = nullptr;
    if (auto it = by_config.find(ConfigKey(r.config())); it != by_config.end()) {
      b = it->second;
    } else if (single) {
      b = &base.runs[0];  // two runs named on purpose: compare them anyway
    }
    if (b == nullptr) continue;
    Row row;
    row.config = ConfigLabel(r.config());
    if (single && ConfigKey(b->config()) != ConfigKey(r.config())) {
      row.config = ConfigLabel(b->config()) + " vs " + row.config;
    }
    row.baseline = base.name;
    row.candidate = cand.name;
    row.baseline_tput = b->result().throughput_samples_per_s();
    row.candidate_tput = r.result().throughput_samples_per_s();
    row.c = CompareRuns(*b, r, rule);
    rows.push_back(std::move(row));
  }
  return rows;
}

absl::StatusOr<CompareRule> Rule(const Args& a) {
  CompareRule rule;
  if (a.Has("alpha") && (!absl::SimpleAtod(a.Option("alpha"), &rule.alpha) ||
                         rule.alpha <= 0 || rule.alpha >= 1)) {
    return absl::InvalidArgumentError("--alpha: must be a number in (0, 1)");
  }
  if (a.Has("min-effect") && (!absl::SimpleAtod(a.Option("min-effect"), &rule.min_effect) ||
                              rule.min_effect < 0)) {
    return absl::InvalidArgumentError("--min-effect: must be a number >= 0");
  }
  return rule;
}

// Runs of a job or one run, with samples.
absl::Status FetchSide(const Daemon& d, const std::string& id, Side* side) {
  side->name = id;
  if (!id.empty() && id[0] == 'r') {
    v1::GetRunRequest req;
    req.set_run_id(id);
    req.set_include_samples(true);
    auto resp = d.Call(&v1::BenchService::Stub::GetRun, req);
    if (!resp.ok()) return resp.status();
    side->runs = {resp->run()};
    return absl::OkStatus();
  }
  return ListAllRuns(d, id, /*include_samples=*/true, &side->runs);
}

int PrintRows(const std::vector<Row>& rows, const Args& a, std::ostream& out,
              std::ostream& err) {
  if (rows.empty()) {
    err << "gpubench: nothing to compare: no run of one side has the config of a run of the "
           "other\n";
    return kExitJobFailed;
  }
  PrintTable(RowsTable(rows), a.format, out);
  for (const Row& r : rows) {
    if (r.c.verdict == Verdict::kSlower) return kExitRegression;
  }
  return kExitOk;
}

// compare --hosts a,b SPEC: submits to every host at once, waits for all,
// then compares each host with the first.
int CompareHosts(const Args& a, const CompareRule& rule, std::ostream& out, std::ostream& err) {
  Args hosts_args = a;
  hosts_args.options["host"] = a.All("hosts");
  auto daemons = ConnectAll(hosts_args, false);
  if (!daemons.ok()) return Usage(err, std::string(daemons.status().message()));
  if (daemons->size() < 2) return Usage(err, "--hosts: name at least two hosts");
  auto spec = BuildSpec(a, a.positional.empty() ? "" : a.positional[0]);
  if (!spec.ok()) return Usage(err, std::string(spec.status().message()));
  std::vector<Side> sides(daemons->size());
  std::vector<int> codes(daemons->size(), kExitOk);
  std::vector<std::string> messages(daemons->size());
  std::mutex err_mu;
  ForEachDaemon(*daemons, [&](size_t i) {
    {
      const Daemon& d = (*daemons)[i];
      std::ostringstream log;
      sides[i].name = d.host.name;
      v1::SubmitJobRequest submit;
      *submit.mutable_spec() = *spec;
      auto call = d.Call(&v1::BenchService::Stub::SubmitJob, submit);
      if (!call.ok()) {
        codes[i] = CallFailed(d.host, call.status(), log);
        messages[i] = log.str();
        return;
      }
      const v1::SubmitJobResponse& submitted = *call;
      {
        std::lock_guard<std::mutex> lock(err_mu);
        err << d.host.name << ": job " << submitted.job().job_id() << " queued\n";
      }
      grpc::ClientContext ctx;
      PrepareCall(d.host, 0, &ctx);
      v1::WatchJobRequest req;
      req.set_job_id(submitted.job().job_id());
      auto reader = d.stub->WatchJob(&ctx, req);
      v1::WatchJobResponse event;
      while (reader->Read(&event)) {
      }
      if (auto s = reader->Finish(); !s.ok()) {
        codes[i] = CallFailed(d.host, s, log);
      } else if (auto s2 = FetchSide(d, submitted.job().job_id(), &sides[i]); !s2.ok()) {
        codes[i] = CallFailed(d.host, s2, log);
      } else {
        for (const v1::Run& r : sides[i].runs) {
          if (r.state() != v1::RUN_STATE_SUCCEEDED) {
            log << "gpubench: " << d.host.name << ": run " << r.index() << " "
                << Short(v1::RunState_descriptor(), r.state()) << ": " << Printable(r.error()) << "\n";
            codes[i] = kExitJobFailed;
          }
        }
        if (sides[i].runs.empty()) codes[i] = kExitJobFailed;
      }
      sides[i].name = d.host.name;
      std::lock_guard<std::mutex> lock(err_mu);
      err << d.host.name << ": job " << submitted.job().job_id() << " done\n";
      messages[i] = log.str();
    }
  });
  int worst = kExitOk;
  for (size_t i = 0; i < codes.size(); ++i) {
    err << messages[i];
    worst = std::max(worst, codes[i]);
  }
  if (codes[0] != kExitOk) {
    err << "gpubench: the baseline host " << sides[0].name << " gave no results\n";
    return codes[0];
  }
  std::vector<Row> rows;
  for (size_t i = 1; i < sides.size(); ++i) {
    if (codes[i] != kExitOk) continue;
    auto pairs = Pair(sides[0], sides[i], rule);
    rows.insert(rows.end(), pairs.begin(), pairs.end());
  }
  const int code = PrintRows(rows, a, out, err);
  return code == kExitOk ? worst : code;
}

// compare RUN --history: the run against its schedule's last runs of the
// same config, their samples pooled.
int CompareHistory(const Args& a, const CompareRule& rule, std::ostream& out,
                   std::ostream& err) {
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  Side cand;
  if (auto s = FetchSide(*d, a.positional[0], &cand); !s.ok()) return CallFailed(d->host, s, err);
  if (cand.runs.size() != 1) return Usage(err, "compare --history takes a run id (r...)");
  const v1::Run& run = cand.runs[0];
  v1::GetJobRequest job_req;
  job_req.set_job_id(run.job_id());
  auto got = d->Call(&v1::BenchService::Stub::GetJob, job_req);
  if (!got.ok()) return CallFailed(d->host, got.status(), err);
  const v1::GetJobResponse& job = *got;
  if (job.job().schedule_id().empty()) {
    err << "gpubench: run " << run.run_id() << " is not from a schedule\n";
    return kExitUsage;
  }
  v1::QueryRunsRequest req;
  req.set_schedule_id(job.job().schedule_id());
  req.set_workload(run.config().workload());
  req.add_states(v1::RUN_STATE_SUCCEEDED);
  req.set_include_samples(true);
  req.set_page_size(200);
  *req.mutable_started_before() = run.start_time();  // its history: earlier runs only
  v1::Run pooled = run;
  pooled.clear_samples();
  int used = 0;
  double tput = 0;
  // With samples the daemon pages by a few runs: read on until the history
  // is full or the schedule has no more.
  do {
    auto queried = d->Call(&v1::BenchService::Stub::QueryRuns, req);
    if (!queried.ok()) return CallFailed(d->host, queried.status(), err);
    const v1::QueryRunsResponse& resp = *queried;
    for (const v1::Run& r : resp.runs()) {
      if (r.job_id() == run.job_id() || ConfigKey(r.config()) != ConfigKey(run.config())) {
        continue;
      }
      if (used == kHistoryRuns) break;
      ++used;
      tput += r.result().throughput_samples_per_s();
      for (float ms : r.samples().device_ms()) pooled.mutable_samples()->add_device_ms(ms);
    }
    req.set_page_token(resp.next_page_token());
  } while (used < kHistoryRuns && !req.page_token().empty());
  if (used == 0) {
    err << "gpubench: schedule " << job.job().schedule_id() << " has no earlier run of "
        << ConfigLabel(run.config()) << "\n";
    return kExitJobFailed;
  }
  pooled.mutable_result()->set_throughput_samples_per_s(tput / used);
  Side base{absl::StrCat("last ", used, " runs"), {pooled}};
  cand.name = run.run_id();
  return PrintRows(Pair(base, cand, rule), a, out, err);
}

}  // namespace

int HostsCommand(const Args& a, std::ostream& out, std::ostream& err) {
  auto daemons = ConnectAll(a, /*all_fleet=*/true);
  if (!daemons.ok()) return Usage(err, std::string(daemons.status().message()));
  std::vector<v1::HostInfo> infos(daemons->size());
  std::vector<absl::Status> status(daemons->size());
  ForEachDaemon(*daemons, [&](size_t i) {
    auto resp = (*daemons)[i].Call(&v1::BenchService::Stub::GetHostInfo,
                                   v1::GetHostInfoRequest(), /*deadline_s=*/10);
    status[i] = resp.status();
    if (resp.ok()) infos[i] = resp->host();
  });
  int code = kExitOk;
  for (size_t i = 0; i < daemons->size(); ++i) {
    if (!status[i].ok()) code = std::max(code, CallFailed((*daemons)[i].host, status[i], err));
  }
  if (a.format == Format::kJson) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < infos.size(); ++i) {
      parts.push_back(absl::StrCat(
          "{\"name\": \"", (*daemons)[i].host.name, "\", \"reachable\": ",
          status[i].ok() ? "true" : "false",
          status[i].ok() ? absl::StrCat(", \"host\": ", MessageToJson(infos[i], false)) : "",
          "}"));
    }
    out << "[" << absl::StrJoin(parts, ",\n ") << "]\n";
    return code;
  }
  // Side by side: one column per host.
  Table t;
  t.header = {"host"};
  for (const Daemon& d : *daemons) t.header.push_back(d.host.name);
  auto row = [&](const std::string& name, const std::function<std::string(const v1::HostInfo&)>& f) {
    std::vector<std::string> r = {name};
    for (size_t i = 0; i < infos.size(); ++i) {
      r.push_back(status[i].ok() ? f(infos[i]) : i == 0 || name == "hostname" ? "unreachable" : "-");
    }
    t.rows.push_back(std::move(r));
  };
  row("hostname", [](const v1::HostInfo& h) { return h.hostname(); });
  row("gpus", [](const v1::HostInfo& h) {
    if (h.gpus().empty()) return std::string(h.mps_available() ? "Apple MPS" : "none");
    std::map<std::string, int> count;
    for (const auto& g : h.gpus()) ++count[absl::StrCat(g.name(), " ", GiB(g.memory_bytes()))];
    std::vector<std::string> parts;
    for (const auto& [name, n] : count) parts.push_back(absl::StrCat(n, "x ", name));
    return absl::StrJoin(parts, ", ");
  });
  row("compute capability", [](const v1::HostInfo& h) {
    return h.gpus().empty() ? std::string("-") : h.gpus(0).compute_capability();
  });
  row("driver", [](const v1::HostInfo& h) { return h.driver_version().empty() ? "-" : h.driver_version(); });
  row("cuda", [](const v1::HostInfo& h) { return h.cuda_version().empty() ? "-" : h.cuda_version(); });
  row("cudnn", [](const v1::HostInfo& h) { return h.cudnn_version().empty() ? "-" : h.cudnn_version(); });
  row("torch", [](const v1::HostInfo& h) { return h.torch_version(); });
  row("cpu", [](const v1::HostInfo& h) {
    return absl::StrCat(h.cpu_model(), " (", h.cpu_cores(), " cores)");
  });
  row("memory", [](const v1::HostInfo& h) { return GiB(h.memory_bytes()); });
  row("os", [](const v1::HostInfo& h) { return absl::StrCat(h.os(), " ", h.kernel()); });
  row("gpubench", [](const v1::HostInfo& h) { return h.gpubench_version(); });
  PrintTable(t, a.format, out);
  return code;
}

int CompareCommand(const Args& a, std::ostream& out, std::ostream& err) {
  auto rule = Rule(a);
  if (!rule.ok()) return Usage(err, std::string(rule.status().message()));
  if (a.Has("hosts")) return CompareHosts(a, *rule, out, err);
  if (!a.spec_flags.empty()) {
    return Usage(err, "compare: spec flags go with --hosts (unknown option --" +
                          a.spec_flags.begin()->first + ")");
  }
  if (a.Has("history")) {
    if (a.positional.size() != 1) return Usage(err, "compare RUN --history takes one run id");
    return CompareHistory(a, *rule, out, err);
  }
  if (a.positional.size() != 2) {
    return Usage(err, "compare takes two job or run ids, --hosts a,b SPEC, or RUN --history");
  }
  // With two --host flags, A comes from the first and B from the second.
  auto daemons = ConnectAll(a, false);
  if (!daemons.ok()) return Usage(err, std::string(daemons.status().message()));
  Side sides[2];
  for (int i = 0; i < 2; ++i) {
    const Daemon& d = (*daemons)[std::min<size_t>(i, daemons->size() - 1)];
    if (auto s = FetchSide(d, a.positional[i], &sides[i]); !s.ok()) {
      return CallFailed(d.host, s, err);
    }
  }
  return PrintRows(Pair(sides[0], sides[1], *rule), a, out, err);
}

int RegressionsCommand(const Args& a, std::ostream& out, std::ostream& err) {
  absl::Time since = absl::Now() - absl::Hours(24 * 7);
  if (a.Has("since")) {
    auto t = ParseWhen("since", a.Option("since"));
    if (!t.ok()) return Usage(err, std::string(t.status().message()));
    since = *t;
  }
  auto daemons = ConnectAll(a, /*all_fleet=*/true);
  if (!daemons.ok()) return Usage(err, std::string(daemons.status().message()));
  std::vector<v1::ListRegressionsResponse> found(daemons->size());
  std::vector<absl::Status> status(daemons->size());
  ForEachDaemon(*daemons, [&](size_t i) {
    v1::ListRegressionsRequest req;
    *req.mutable_since() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(since));
    req.set_include_improvements(a.Has("include-improvements"));
    auto resp = (*daemons)[i].Call(&v1::BenchService::Stub::ListRegressions, req);
    status[i] = resp.status();
    if (resp.ok()) found[i] = std::move(*resp);
  });
  int code = kExitOk;
  Table t;
  t.header = {"host", "run", "job", "config", "verdict", "samples/s", "baseline", "ratio",
              "history", "ended"};
  bool regressed = false;
  for (size_t i = 0; i < daemons->size(); ++i) {
    if (!status[i].ok()) {
      code = std::max(code, CallFailed((*daemons)[i].host, status[i], err));
      continue;
    }
    for (const v1::Run& r : found[i].runs()) {
      const auto& h = r.history();
      regressed |= h.verdict() == v1::VERDICT_REGRESSED;
      t.rows.push_back({(*daemons)[i].host.name, r.run_id(), r.job_id(), ConfigLabel(r.config()),
                        Short(v1::Verdict_descriptor(), h.verdict()),
                        absl::StrFormat("%.1f", h.value_samples_per_s()),
                        absl::StrFormat("%.1f", h.baseline_median_samples_per_s()),
                        absl::StrFormat("%.3f", h.ratio()), absl::StrCat(h.history_count()),
                        absl::FormatTime("%Y-%m-%d %H:%M", absl::FromUnixSeconds(r.end_time().seconds()),
                                         absl::LocalTimeZone())});
    }
  }
  if (a.format == Format::kJson) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < daemons->size(); ++i) {
      if (status[i].ok()) {
        parts.push_back(absl::StrCat("{\"host\": \"", (*daemons)[i].host.name,
                                     "\", \"regressions\": ", MessageToJson(found[i], false), "}"));
      }
    }
    out << "[" << absl::StrJoin(parts, ",\n ") << "]\n";
  } else {
    PrintTable(t, a.format, out);
  }
  if (code != kExitOk) return code;
  return regressed ? kExitRegression : kExitOk;
}

int ReportCommand(const Args& a, std::ostream& out, std::ostream& err) {
  if (a.positional.empty() || !a.Has("out")) return Usage(err, "report JOB... -o FILE");
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  std::vector<ReportJob> jobs;
  for (const std::string& id : a.positional) {
    ReportJob rj;
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
    jobs.push_back(std::move(rj));
  }
  const std::string path = a.Option("out");
  std::ofstream file(path, std::ios::trunc);
  if (!file) return Usage(err, "cannot write " + path);
  file << RenderReport(jobs, a.Option("title", "gpubench report"));
  file.close();
  if (!file) {
    err << "gpubench: writing " << path << " failed\n";
    return kExitJobFailed;
  }
  out << path << "\n";
  return kExitOk;
}

}  // namespace gpubench::client
