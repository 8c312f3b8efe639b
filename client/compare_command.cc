// gpubench compare: two jobs or runs, one spec on several hosts, a run
// against its schedule's history, or two specs measured again A B A B; each
// row by the decision rule (common/verdict.h), and with --explain why
// (compare_explain.cc).
#include <algorithm>
#include <fstream>
#include <mutex>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/compare.h"
#include "client/spec_flags.h"
#include "common/contention.h"
#include "common/fingerprint.h"
#include "common/printable.h"
#include "common/spec.h"
#include "common/stats.h"
#include "google/protobuf/util/time_util.h"

namespace gpubench::client {
namespace {

using google::protobuf::util::TimeUtil;

constexpr int kHistoryRuns = 7;

struct Side {
  std::string name;  // host, job or run it came from
  std::vector<v1::Run> runs;
  const Daemon* daemon = nullptr;  // where they are stored
};

// One comparison row: the repetitions of one config on each side.
struct CompareRow {
  std::string config, baseline, candidate;
  double baseline_tput = 0, candidate_tput = 0;  // medians over the runs
  Comparison c;
  bool configs_differ = false;  // beyond what the comparison varies: no verdict
  // What differs between the two sides' latest runs' environments
  // (EnvironmentDiffers), "" where nothing does.
  std::string environment;
  // compare --explain's sides: each side's latest run (pointing into a
  // Side's runs) and where it is stored; every difference of the configs.
  ExplainedSide explain[2];
  std::string differences;
};

// What a comparison lets differ between its sides' configs.
enum class Varies {
  kNothing,    // --hosts, --history: one spec, so the same config on both sides
  kHowItRuns,  // A B named by the user: device, precision, batch... not the work
};

Table RowsTable(const std::vector<CompareRow>& rows) {
  Table t;
  t.header = {"config", "baseline", "candidate", "base samples/s", "cand samples/s",
              "runs",   "noise",    "speedup",   "95% CI",         "p",
              "verdict"};
  for (const CompareRow& r : rows) {
    const bool ok = r.c.verdict != Verdict::kNotComparable;
    const bool spread = r.c.baseline_runs > 1 && r.c.candidate_runs > 1;
    t.rows.push_back(
        {r.config, r.baseline, r.candidate, absl::StrFormat("%.1f", r.baseline_tput),
         absl::StrFormat("%.1f", r.candidate_tput),
         absl::StrCat(r.c.baseline_runs, "/", r.c.candidate_runs),
         ok && spread ? absl::StrFormat("%.1f%%", 100 * r.c.noise) : "-",
         ok ? absl::StrFormat("%.3f", r.c.speedup.value) : "-",
         ok && spread ? absl::StrFormat("%.3f-%.3f", r.c.speedup.ci95.low, r.c.speedup.ci95.high)
                      : "-",
         ok ? absl::StrFormat("%.2g", r.c.p_value) : "-",
         absl::StrCat(VerdictName(r.c.verdict), r.c.why.empty() ? "" : ": ", r.c.why,
                      r.environment.empty() ? "" : "; ", Printable(r.environment))});
  }
  return t;
}

// The run of runs (not empty) that started last.
const v1::Run* Latest(const std::vector<const v1::Run*>& runs) {
  return *std::max_element(runs.begin(), runs.end(), [](const v1::Run* a, const v1::Run* b) {
    return TimeUtil::TimestampToNanoseconds(a->start_time()) <
           TimeUtil::TimestampToNanoseconds(b->start_time());
  });
}

double MedianThroughput(const std::vector<const v1::Run*>& runs) {
  std::vector<double> values;
  for (const v1::Run* r : runs) values.push_back(r->result().throughput_samples_per_s());
  return stats::Median(std::move(values));
}

// Groups the runs of two sides by config (every field equal), the
// repetitions of a config together, and compares each config found on both
// sides. Two sides of one config each (two runs or jobs named on purpose)
// are compared where their configs differ only in what `varies` allows;
// otherwise their row is "not comparable", naming the difference: a verdict
// between two different workloads means nothing.
std::vector<CompareRow> Pair(const Side& base, const Side& cand, const CompareRule& rule,
                             Varies varies) {
  using Groups = std::vector<std::pair<std::string, std::vector<const v1::Run*>>>;
  auto group = [](const Side& side) {
    Groups groups;
    for (const v1::Run& r : side.runs) {
      const std::string key = ConfigKey(r.config());
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const auto& g) { return g.first == key; });
      if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
      it->second.push_back(&r);
    }
    return groups;
  };
  const Groups base_groups = group(base), cand_groups = group(cand);
  const bool single = base_groups.size() == 1 && cand_groups.size() == 1;
  std::vector<CompareRow> rows;
  for (const auto& cand_group : cand_groups) {
    const std::string& key = cand_group.first;
    const std::vector<const v1::Run*>& cand_runs = cand_group.second;
    auto b = std::find_if(base_groups.begin(), base_groups.end(),
                          [&](const auto& g) { return g.first == key; });
    if (b == base_groups.end() && single) b = base_groups.begin();
    if (b == base_groups.end()) continue;
    CompareRow row;
    row.config = DescribeConfig(cand_runs[0]->config());
    if (b->first != key) row.config = DescribeConfig(b->second[0]->config()) + " vs " + row.config;
    row.baseline = base.name;
    row.candidate = cand.name;
    row.baseline_tput = MedianThroughput(b->second);
    row.candidate_tput = MedianThroughput(cand_runs);
    const std::string differences =
        b->first == key ? ""
                        : ConfigDifferences(b->second[0]->config(), cand_runs[0]->config(),
                                            /*work_only=*/varies == Varies::kHowItRuns);
    row.environment =
        EnvironmentDiffers(Latest(b->second)->fingerprint(), Latest(cand_runs)->fingerprint());
    row.explain[0] = {base.name, base.daemon, Latest(b->second), row.baseline_tput};
    row.explain[1] = {cand.name, cand.daemon, Latest(cand_runs), row.candidate_tput};
    if (b->first != key) {
      row.differences = ConfigDifferences(b->second[0]->config(), cand_runs[0]->config(),
                                          /*work_only=*/false);
    }
    if (differences.empty()) {
      row.c = CompareRuns(b->second, cand_runs, rule);
    } else {
      row.configs_differ = true;
      row.c.baseline_runs = b->second.size();
      row.c.candidate_runs = cand_runs.size();
      row.c.why = absl::StrCat(varies == Varies::kHowItRuns ? "different work: "
                                                            : "different configs: ",
                               differences);
    }
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

// Runs of a job or one run (their throughput is the figure: no samples).
absl::Status FetchSide(const Daemon& d, const std::string& id, Side* side) {
  side->name = id;
  if (!id.empty() && id[0] == 'r') {
    auto run = FetchRun(d, id);
    if (!run.ok()) return run.status();
    side->runs = {*std::move(run)};
    return absl::OkStatus();
  }
  return ListAllRuns(d, id, /*include_samples=*/false, &side->runs);
}

int PrintRows(const std::vector<CompareRow>& rows, const Args& a, std::ostream& out,
              std::ostream& err) {
  if (rows.empty()) {
    // Two sides of different work (mlp against resnet50) are not
    // comparable: the same exit as a row of different configs.
    err << "gpubench: not comparable: no run of one side has the config of a run of the "
           "other; compare runs of one workload, mode and parameters\n";
    return kExitUsage;
  }
  PrintTable(RowsTable(rows), a.format, out);
  bool configs_differ = false, slower = false, unexplained = false;
  for (const CompareRow& r : rows) {
    slower |= r.c.verdict == Verdict::kSlower;
    configs_differ |= r.configs_differ;
    if (!a.Has("explain") || r.configs_differ) continue;
    if (r.c.verdict != Verdict::kSlower && r.c.verdict != Verdict::kFaster) {
      out << "\n" << r.config << ": " << VerdictName(r.c.verdict)
          << ": no difference to explain\n";
      continue;
    }
    const int code = ExplainDifference(a, r.explain[0], r.explain[1], r.c.verdict,
                                       r.differences, r.environment, out, err);
    unexplained |= code != kExitOk;
  }
  if (slower) return kExitRegression;
  if (unexplained) return kExitJobFailed;
  if (configs_differ) {
    err << "gpubench: not comparable: the two sides run different configs (see the verdict); "
           "compare runs of one workload, mode and parameters\n";
    return kExitUsage;
  }
  return kExitOk;
}

// A host's exit code as the status HostsAnswered sorts hosts by.
absl::Status StatusOfExit(int code) {
  switch (code) {
    case kExitOk: return absl::OkStatus();
    case kExitUnreachable: return absl::UnavailableError("unreachable");
    case kExitAuth: return absl::PermissionDeniedError("refused");
    default: return absl::InternalError("failed");
  }
}

// --repeat N (default 1): how many times each side is measured.
absl::StatusOr<int> Repeat(const Args& a) {
  int n = 1;
  if (a.Has("repeat") && (!absl::SimpleAtoi(a.Option("repeat"), &n) || n < 1 || n > 100)) {
    return absl::InvalidArgumentError("--repeat: must be a whole number from 1 to 100");
  }
  return n;
}

// compare --hosts a,b SPEC [--repeat N]: every host measures the spec N
// times, one job after another, the hosts at once; then each host is
// compared with the first, each job a repetition.
int CompareHosts(const Args& a, const CompareRule& rule, std::ostream& out, std::ostream& err) {
  Args hosts_args = a;
  hosts_args.options["host"] = a.All("hosts");
  auto daemons = ConnectAll(hosts_args, false);
  if (!daemons.ok()) return Usage(err, std::string(daemons.status().message()));
  if (daemons->size() < 2) return Usage(err, "--hosts: name at least two hosts");
  auto spec = BuildSpec(a, a.positional.empty() ? "" : a.positional[0]);
  if (!spec.ok()) return Usage(err, std::string(spec.status().message()));
  auto repeat = Repeat(a);
  if (!repeat.ok()) return Usage(err, std::string(repeat.status().message()));
  std::vector<Side> sides(daemons->size());
  std::vector<int> codes(daemons->size(), kExitOk);
  std::vector<std::string> messages(daemons->size());
  std::mutex err_mu;
  ForEachDaemon(*daemons, [&](size_t i) {
    const Daemon& d = (*daemons)[i];
    std::ostringstream log;
    sides[i].name = d.host.name;
    sides[i].daemon = &d;
    for (int rep = 0; rep < *repeat && codes[i] == kExitOk; ++rep) {
      codes[i] = MeasureOnce(d, *spec, &sides[i].runs, log);
      std::lock_guard<std::mutex> lock(err_mu);
      err << d.host.name << ": measured " << rep + 1 << " of " << *repeat << "\n";
    }
    messages[i] = log.str();
  });
  int worst = kExitOk;
  std::vector<absl::Status> status(codes.size());
  for (size_t i = 0; i < codes.size(); ++i) {
    err << messages[i];
    worst = std::max(worst, codes[i]);
    status[i] = StatusOfExit(codes[i]);
  }
  err << HostsAnswered(*daemons, status) << "\n";
  if (codes[0] != kExitOk) {
    err << "gpubench: the baseline host " << sides[0].name << " gave no results\n";
    return codes[0];
  }
  std::vector<CompareRow> rows;
  for (size_t i = 1; i < sides.size(); ++i) {
    if (codes[i] != kExitOk) continue;
    auto pairs = Pair(sides[0], sides[i], rule, Varies::kNothing);
    rows.insert(rows.end(), pairs.begin(), pairs.end());
  }
  const int code = PrintRows(rows, a, out, err);
  return code == kExitOk ? worst : code;
}

// compare RUN --history: the run against its schedule's last runs of the
// same config, each a repetition.
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
  req.set_page_size(200);
  *req.mutable_started_before() = run.start_time();  // its history: earlier runs only
  Side base;
  base.daemon = cand.daemon = &*d;
  int used = 0, unusable = 0;
  do {
    auto queried = d->Call(&v1::BenchService::Stub::QueryRuns, req);
    if (!queried.ok()) return CallFailed(d->host, queried.status(), err);
    const v1::QueryRunsResponse& resp = *queried;
    for (const v1::Run& r : resp.runs()) {
      if (r.job_id() == run.job_id() || ConfigKey(r.config()) != ConfigKey(run.config())) {
        continue;
      }
      if (used == kHistoryRuns) break;
      if (!NotABaselineBecause(r).empty()) {
        ++unusable;
        continue;
      }
      ++used;
      base.runs.push_back(r);
    }
    req.set_page_token(resp.next_page_token());
  } while (used < kHistoryRuns && !req.page_token().empty());
  if (used == 0 && unusable > 0) {
    err << "gpubench: schedule " << job.job().schedule_id() << " has " << unusable
        << (unusable == 1 ? " earlier run of " : " earlier runs of ")
        << DescribeConfig(run.config()) << ", " << (unusable == 1 ? "" : "all ")
        << "left out as contended or throttled (see show): no baseline\n";
    return kExitJobFailed;
  }
  if (used == 0) {
    err << "gpubench: schedule " << job.job().schedule_id() << " has no earlier run of "
        << DescribeConfig(run.config()) << "\n";
    return kExitJobFailed;
  }
  base.name = absl::StrCat("last ", used, " runs");
  if (unusable > 0) {
    absl::StrAppend(&base.name, " (", unusable, " contended or throttled left out)");
  }
  cand.name = run.run_id();
  return PrintRows(Pair(base, cand, rule, Varies::kNothing), a, out, err);
}

}  // namespace

int MeasureOnce(const Daemon& d, const v1::JobSpec& spec, std::vector<v1::Run>* runs_out,
                std::ostream& log) {
  v1::SubmitJobRequest submit;
  *submit.mutable_spec() = spec;
  auto call = d.Call(&v1::BenchService::Stub::SubmitJob, submit);
  if (!call.ok()) return CallFailed(d.host, call.status(), log);
  return GatherJob(d, call->job().job_id(), runs_out, log);
}

int GatherJob(const Daemon& d, const std::string& job_id, std::vector<v1::Run>* runs_out,
              std::ostream& log) {
  if (auto s = FollowJob(d, job_id, /*show_progress=*/false, log); !s.ok()) {
    return CallFailed(d.host, s, log);
  }
  std::vector<v1::Run> runs;
  if (auto s = ListAllRuns(d, job_id, /*include_samples=*/false, &runs); !s.ok()) {
    return CallFailed(d.host, s, log);
  }
  int code = runs.empty() ? kExitJobFailed : kExitOk;
  for (const v1::Run& r : runs) {
    if (r.state() != v1::RUN_STATE_SUCCEEDED) {
      log << "gpubench: " << d.host.name << ": job " << job_id << " run " << r.index() << " "
          << Short(v1::RunState_descriptor(), r.state()) << ": " << Printable(r.error()) << "\n";
      code = kExitJobFailed;
    }
    runs_out->push_back(r);
  }
  return code;
}

// compare A B --repeat N: A and B are jobs (their specs) or spec files,
// measured N times each on one host, alternating A B A B, so that whatever
// drifts on the host meanwhile hits both sides alike.
int CompareRepeated(const Args& a, const CompareRule& rule, int repeat, std::ostream& out,
                    std::ostream& err) {
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  v1::JobSpec specs[2];
  Side sides[2];
  for (int i = 0; i < 2; ++i) {
    const std::string& id = a.positional[i];
    sides[i].name = id;
    sides[i].daemon = &*d;
    if (std::ifstream(id).good()) {
      auto spec = BuildSpec(a, id);
      if (!spec.ok()) return Usage(err, std::string(spec.status().message()));
      specs[i] = std::move(*spec);
      continue;
    }
    if (id.empty() || id[0] != 'j') {
      return Usage(err, absl::StrCat("compare --repeat: ", id,
                                     " is neither a job id nor a spec file"));
    }
    v1::GetJobRequest req;
    req.set_job_id(id);
    auto job = d->Call(&v1::BenchService::Stub::GetJob, req);
    if (!job.ok()) return CallFailed(d->host, job.status(), err);
    specs[i] = job->job().spec();
    if (auto s = ApplySpecFlags(a.spec_flags, &specs[i]); !s.ok()) {
      return Usage(err, std::string(s.message()));
    }
  }
  // Two specs of one config each that do different work would give a row
  // with no verdict after all the measuring: refuse before it.
  auto runs_a = ExpandSweep(specs[0]), runs_b = ExpandSweep(specs[1]);
  if (runs_a.ok() && runs_b.ok() && runs_a->size() == 1 && runs_b->size() == 1) {
    const std::string differences =
        ConfigDifferences(runs_a->front(), runs_b->front(), /*work_only=*/true);
    if (!differences.empty()) {
      return Usage(err, absl::StrCat("compare: A and B do different work (", differences,
                                     "): no verdict compares them"));
    }
  }
  for (int rep = 0; rep < repeat; ++rep) {
    for (int i = 0; i < 2; ++i) {
      // --explain: the last repetition of each side has a profiled window
      // (after its measured one, which it leaves alone).
      if (rep == repeat - 1 && a.Has("explain")) specs[i].mutable_profiling()->set_enabled(true);
      std::ostringstream log;
      const int code = MeasureOnce(*d, specs[i], &sides[i].runs, log);
      err << log.str();
      if (code != kExitOk) return code;
      err << "gpubench: " << "AB"[i] << " measured " << rep + 1 << " of " << repeat << "\n";
    }
  }
  return PrintRows(Pair(sides[0], sides[1], rule, Varies::kHowItRuns), a, out, err);
}

int CompareCommand(const Args& a, std::ostream& out, std::ostream& err) {
  auto rule = Rule(a);
  if (!rule.ok()) return Usage(err, std::string(rule.status().message()));
  auto repeat = Repeat(a);
  if (!repeat.ok()) return Usage(err, std::string(repeat.status().message()));
  if (a.Has("explain") && a.format != Format::kTable && a.format != Format::kMarkdown) {
    return Usage(err, "compare --explain prints tables: --output table or markdown");
  }
  if (a.Has("hosts")) return CompareHosts(a, *rule, out, err);
  if (!a.spec_flags.empty() && !a.Has("repeat")) {
    return Usage(err, "compare: spec flags go with --hosts or --repeat (unknown option --" +
                          a.spec_flags.begin()->first + ")");
  }
  if (a.Has("history")) {
    if (a.positional.size() != 1) return Usage(err, "compare RUN --history takes one run id");
    return CompareHistory(a, *rule, out, err);
  }
  if (a.positional.size() != 2) {
    return Usage(err, "compare takes two job or run ids, --hosts a,b SPEC, or RUN --history");
  }
  if (a.Has("repeat")) return CompareRepeated(a, *rule, *repeat, out, err);
  // With two --host flags, A comes from the first and B from the second.
  auto daemons = ConnectAll(a, false);
  if (!daemons.ok()) return Usage(err, std::string(daemons.status().message()));
  Side sides[2];
  for (int i = 0; i < 2; ++i) {
    const Daemon& d = (*daemons)[std::min<size_t>(i, daemons->size() - 1)];
    sides[i].daemon = &d;
    if (auto s = FetchSide(d, a.positional[i], &sides[i]); !s.ok()) {
      return CallFailed(d.host, s, err);
    }
  }
  return PrintRows(Pair(sides[0], sides[1], *rule, Varies::kHowItRuns), a, out, err);
}

}  // namespace gpubench::client
