// compare --explain: why one side's time per sample differs from the
// other's, from each side's latest run's profiled window (profiled again,
// one run of its config, where it has none): what differs in the configs
// and environments, the operators' and kernels' calls and times before and
// after sorted by their share of the difference (report/profile_diff.h),
// and where the device's time went on each side (report/trace_breakdown.h).
#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/compare.h"
#include "common/contention.h"
#include "common/printable.h"
#include "report/profile_diff.h"
#include "report/trace_breakdown.h"

namespace gpubench::client {
namespace {

constexpr int kDiffRows = 12;

bool HasProfile(const v1::Run& run) {
  return !run.result().profile().top_operators().empty() &&
         run.result().profiled_iterations() > 0;
}

// A side's run with a profile: the one given, or a new run of its config
// with a profiled window.
absl::StatusOr<v1::Run> Profiled(const ExplainedSide& side, std::ostream& err) {
  const v1::Run& run = *side.run;
  if (HasProfile(run)) return run;
  v1::GetJobRequest req;
  req.set_job_id(run.job_id());
  auto job = side.daemon->Call(&v1::BenchService::Stub::GetJob, req);
  if (!job.ok()) return job.status();
  v1::JobSpec spec = job->job().spec();
  spec.clear_sweep();
  *spec.mutable_base() = run.config();
  spec.mutable_profiling()->set_enabled(true);
  err << "gpubench: " << run.run_id() << " has no profile: measuring its config again with "
      << "a profiled window\n";
  std::vector<v1::Run> runs;
  std::ostringstream log;
  if (MeasureOnce(*side.daemon, spec, &runs, log) != kExitOk || runs.empty()) {
    return absl::InternalError(
        absl::StrCat("profiling ", run.run_id(), "'s config again failed: ", log.str()));
  }
  if (!HasProfile(runs.back())) {
    return absl::NotFoundError(
        absl::StrCat(runs.back().run_id(), " has no profile either: ",
                     runs.back().result().profile().error()));
  }
  return runs.back();
}

std::string Signed(double us) { return absl::StrFormat("%+.2f", us); }
std::string Percent(double share) { return absl::StrFormat("%.1f%%", 100 * share); }

// The diff's rows; each one's share is of span_delta where given (the
// span's difference, µs a sample), else of the rows' own difference.
void PrintDiff(const report::ProfileDiff& diff, const std::string& what, const Args& a,
               std::ostream& out, double span_delta = 0) {
  Table t{{what, "A calls/step", "A us/call", "B calls/step", "B us/call", "delta us/sample",
           span_delta != 0 ? "share of span delta" : "share of delta"},
          {}};
  const size_t n = std::min<size_t>(diff.rows.size(), kDiffRows);
  const std::vector<std::string> names = report::ShortNames(diff.rows, n);
  bool unknown = false;
  for (size_t i = 0; i < n; ++i) {
    unknown |= !diff.rows[i].known;
    const report::DiffCells c = report::CellsOf(diff.rows[i], span_delta);
    t.rows.push_back({names[i], c.a_calls, c.a_us, c.b_calls, c.b_us, c.delta, c.share});
  }
  PrintTable(t, a.format, out);
  out << "  in all: " << absl::StrFormat("%.2f", diff.a_us_per_sample) << " us a sample in A, "
      << absl::StrFormat("%.2f", diff.b_us_per_sample) << " in B ("
      << Signed(diff.b_us_per_sample - diff.a_us_per_sample) << ")";
  if (unknown) out << "; - : a name the side's top-N table left out, so its delta is unknown (?)";
  if (diff.cancels && span_delta == 0) {
    out << "; the rows' changes cancel out (" << absl::StrFormat("%.2f", diff.moved_us_per_sample)
        << " us a sample moved in all): no share of their net";
  }
  out << "\n";
}

// The biggest row of a diff, in words (report::DescribeChange).
std::string Biggest(const report::ProfileDiff& diff) {
  if (diff.rows.empty() || !diff.rows[0].known) return "";
  const report::DiffRow& r = diff.rows[0];
  return report::DescribeChange(r.name, r.delta_us_per_sample, r.share);
}

// Both breakdowns in µs a sample with the difference, and in % of each
// span; returns the biggest change: "idle -372.90 us a sample, 99.8% of the
// span's difference".
std::string PrintBreakdowns(const report::Breakdown (&b)[2], const double (&samples)[2],
                            const Args& a, std::ostream& out) {
  out << "where the device's time went, us a sample (HTA's temporal breakdown of the profiled "
         "span)\n";
  Table t{{"share", "A us/sample", "B us/sample", "delta", "share of delta", "A %", "B %"}, {}};
  const std::pair<const char*, double report::Breakdown::*> rows[] = {
      {"idle", &report::Breakdown::idle_us},
      {"compute", &report::Breakdown::compute_us},
      {"communication", &report::Breakdown::communication_us},
      {"memory", &report::Breakdown::memory_us},
      {"other", &report::Breakdown::other_us},
      {"span", &report::Breakdown::span_us}};
  const double span_delta = b[1].span_us / samples[1] - b[0].span_us / samples[0];
  std::string biggest;
  double most = -1;
  for (const auto& [name, field] : rows) {
    const double us[2] = {b[0].*field / samples[0], b[1].*field / samples[1]};
    const double delta = us[1] - us[0];
    const double share = span_delta != 0 ? delta / span_delta : 0;
    t.rows.push_back({name, absl::StrFormat("%.2f", us[0]), absl::StrFormat("%.2f", us[1]),
                      Signed(delta), span_delta != 0 ? Percent(share) : "-",
                      absl::StrFormat("%.1f", b[0].Pct(b[0].*field)),
                      absl::StrFormat("%.1f", b[1].Pct(b[1].*field))});
    if (field != &report::Breakdown::span_us && std::abs(delta) > most) {
      most = std::abs(delta);
      biggest = absl::StrCat(name, " ", Signed(delta), " us a sample",
                             span_delta != 0 ? ", " + Percent(share) + " of the span's difference"
                                             : "");
    }
  }
  PrintTable(t, a.format, out);
  out << "A: " << Printable(report::BiggestShare(b[0]))
      << "\nB: " << Printable(report::BiggestShare(b[1])) << "\n";
  return biggest;
}

// Each side's breakdown per rank, where both are distributed runs with a
// trace of every rank they share: every rank's work and time in
// communication a sample side by side, each side's slowest rank named (report::
// DescribeSlowest), every kernel of each rank's breakdown kept in ranks;
// returns the rank to diff: B's slowest, 0 where it has none or A lacks
// that rank. Per-rank figures are a sample of the rank's
// (report::WindowOf).
absl::StatusOr<int> PrintRanks(const Args& a, const ExplainedSide* const (&sides)[2],
                               const v1::Run (&runs)[2], const double (&samples)[2],
                               std::vector<report::RankBreakdown> (&ranks)[2],
                               std::ostream& tables) {
  const auto& traced = runs[1].result().profile().traced_ranks();
  if (runs[0].result().profile().traced_ranks_size() < 2 || traced.size() < 2) return 0;
  for (int i = 0; i < 2; ++i) {
    auto all = RankBreakdowns(*sides[i]->daemon, runs[i], INT_MAX);
    if (!all.ok()) return all.status();
    if (all->size() < 2) return 0;
    ranks[i] = std::move(*all);
  }
  tables << "ranks, us a sample (each rank's own trace)\n";
  Table t{{"rank", "A work", "B work", "delta", "A in communication", "B in communication"}, {}};
  for (const report::RankBreakdown& b : ranks[1]) {
    const auto a_side = std::find_if(ranks[0].begin(), ranks[0].end(),
                                     [&](const report::RankBreakdown& r) { return r.rank == b.rank; });
    if (a_side == ranks[0].end()) continue;
    const double work[2] = {a_side->b.WorkUs() / samples[0], b.b.WorkUs() / samples[1]};
    t.rows.push_back({absl::StrCat(b.rank), absl::StrFormat("%.2f", work[0]),
                      absl::StrFormat("%.2f", work[1]), Signed(work[1] - work[0]),
                      absl::StrFormat("%.2f", a_side->b.communication_total_us / samples[0]),
                      absl::StrFormat("%.2f", b.b.communication_total_us / samples[1])});
  }
  PrintTable(t, a.format, tables);
  tables << "A: " << report::DescribeSlowest(ranks[0]) << "\nB: "
         << report::DescribeSlowest(ranks[1]) << "\n\n";
  // B's slowest, where A has that rank too (A may run on fewer).
  const size_t slowest = report::SlowestRank(ranks[1]);
  if (slowest == ranks[1].size()) return 0;
  const int rank = ranks[1][slowest].rank;
  const bool in_a = std::any_of(ranks[0].begin(), ranks[0].end(),
                                [&](const report::RankBreakdown& r) { return r.rank == rank; });
  return in_a ? rank : 0;
}

// The operators that launched the kernels, by their device time, where
// both profiles have them (rank 0's for distributed runs); shares of
// span_delta where given (the traced span's difference, µs a sample: a
// graph's replay in B for eager operators in A cancels out in the rows'
// own).
void PrintOperators(const v1::Run (&runs)[2], const Args& a, std::ostream& tables,
                    double span_delta = 0) {
  const report::ProfiledWindow windows[2] = {report::WindowOf(runs[0], true),
                                             report::WindowOf(runs[1], true)};
  if (windows[0].rows.empty() || windows[1].rows.empty()) return;
  tables << "\noperators by their kernels' device time (the profiles"
         << (runs[1].config().world_size() > 1 ? ", rank 0's" : "") << ")\n";
  PrintDiff(report::DiffWindows(windows[0], windows[1]), "operator", a, tables, span_delta);
}

// Every kernel and copy from both sides' traces (of B's slowest rank, for
// distributed runs), and where their spans went, into tables; the biggest
// change, and rank 0's span's difference (µs a sample) in span_delta where
// it is the rank diffed.
absl::StatusOr<std::string> FromTraces(const Args& a, const ExplainedSide* const (&sides)[2],
                                       const v1::Run (&runs)[2],
                                       report::ProfiledWindow (&windows)[2],
                                       std::ostream& tables, double* span_delta) {
  const double samples[2] = {windows[0].Samples(), windows[1].Samples()};
  std::vector<report::RankBreakdown> ranks[2];
  const absl::StatusOr<int> rank = PrintRanks(a, sides, runs, samples, ranks, tables);
  if (!rank.ok()) return rank.status();
  if (*rank != 0) tables << "rank " << *rank << ", B's slowest, on both sides:\n";
  report::Breakdown b[2];
  for (int i = 0; i < 2; ++i) {
    // The rank's breakdown as PrintRanks read it, else its trace now.
    const auto read = std::find_if(ranks[i].begin(), ranks[i].end(),
                                   [&](const report::RankBreakdown& r) { return r.rank == *rank; });
    if (read != ranks[i].end()) {
      b[i] = std::move(read->b);
    } else {
      report::TraceEvents events;
      if (auto s = FetchTraceEvents(*sides[i]->daemon, runs[i].run_id(), *rank, &events);
          !s.ok()) {
        return s;
      }
      b[i] = report::BreakDown(std::move(events), INT_MAX);
    }
    windows[i].rows = b[i].top;
    windows[i].complete = true;
  }
  std::string biggest = PrintBreakdowns(b, samples, a, tables);
  tables << "\nkernels and copies on the device (from the traces)\n";
  const double delta = b[1].span_us / samples[1] - b[0].span_us / samples[0];
  if (*rank == 0) *span_delta = delta;  // the profiles' operators are rank 0's
  PrintDiff(report::DiffWindows(windows[0], windows[1]), "kernel", a, tables, delta);
  if (*rank != 0) biggest = absl::StrCat("on rank ", *rank, ", the slowest: ", biggest);
  return biggest;
}

// A profiled window measured beside other work holds that work's time.
void PrintNotes(const v1::Run (&runs)[2], std::ostream& out) {
  for (int i = 0; i < 2; ++i) {
    const std::string why = NotABaselineBecause(runs[i]);
    if (!why.empty()) {
      out << "note: " << (i == 0 ? "A" : "B") << "'s profiled run " << runs[i].run_id()
          << " was " << Printable(why) << ": its times are not only its own\n";
    }
  }
}

}  // namespace

int ExplainDifference(const Args& a, const ExplainedSide& base, const ExplainedSide& cand,
                      Verdict verdict, const std::string& differences,
                      const std::string& environment, std::ostream& out, std::ostream& err) {
  auto ms = [](double samples_per_s) {
    return samples_per_s > 0 ? absl::StrFormat("%.4g", 1e3 / samples_per_s) : std::string("-");
  };
  out << "\nwhy " << cand.name << " is " << VerdictName(verdict) << " than " << base.name
      << " (A " << base.run->run_id() << ", B " << cand.run->run_id() << "): "
      << ms(cand.samples_per_s) << " against " << ms(base.samples_per_s)
      << " ms a sample (medians)"
      << "\n  config: " << (differences.empty() ? "the same" : Printable(differences))
      << "\n  environment: " << (environment.empty() ? "the same" : Printable(environment))
      << "\n";
  v1::Run runs[2];
  const ExplainedSide* const sides[2] = {&base, &cand};
  for (int i = 0; i < 2; ++i) {
    auto run = Profiled(*sides[i], err);
    if (!run.ok()) {
      err << "gpubench: cannot explain: " << sides[i]->daemon->host.name << ": "
          << Printable(std::string(run.status().message())) << "\n";
      return kExitJobFailed;
    }
    runs[i] = std::move(*run);
  }
  report::ProfiledWindow windows[2] = {report::WindowOf(runs[0]),
                                       report::WindowOf(runs[1])};
  if (!(windows[0].samples_per_step > 0) || !(windows[1].samples_per_step > 0)) {
    err << "gpubench: cannot explain: a side's run has no samples a step (no throughput)\n";
    return kExitJobFailed;
  }
  const v1::ProfileSummary* profiles[2] = {&runs[0].result().profile(),
                                           &runs[1].result().profile()};
  std::ostringstream tables;
  tables << "profiled: A " << runs[0].run_id() << " " << windows[0].steps << " steps of "
         << windows[0].samples_per_step << " samples, B " << runs[1].run_id() << " "
         << windows[1].steps << " steps of " << windows[1].samples_per_step << "\n";
  auto timed = [](const v1::ProfileSummary* p) {
    return p->device_times() ? "kernels on the device" : "CPU operators";
  };
  if (profiles[0]->device_times() != profiles[1]->device_times()) {
    // A CPU run against a GPU run: CPU operators' times against kernels'.
    out << "  biggest change: - (A's profile times " << timed(profiles[0]) << ", B's "
        << timed(profiles[1]) << ": their tables do not compare)\n"
        << tables.str();
    return kExitOk;
  }
  const bool device = profiles[0]->device_times();
  std::string biggest;
  // gpubench's traces have no ProfilerStep, so BreakDown keeps every
  // profiled step's work, which Samples() counts.
  if (device && profiles[0]->has_trace() && profiles[1]->has_trace()) {
    double span_delta = 0;
    auto traced = FromTraces(a, sides, runs, windows, tables, &span_delta);
    if (!traced.ok()) {
      err << "gpubench: cannot explain: " << Printable(std::string(traced.status().message()))
          << "\n";
      return kExitJobFailed;
    }
    biggest = *traced;
    PrintOperators(runs, a, tables, span_delta);
  } else {
    // The profiles' top tables: kernels by device time, or CPU operators
    // by self time.
    const report::ProfileDiff diff = report::DiffWindows(windows[0], windows[1]);
    biggest = Biggest(diff);
    tables << (device ? "kernels by device time" : "operators by CPU self time")
           << " (the profiles' top tables)\n";
    PrintDiff(diff, device ? "kernel" : "operator", a, tables);
    if (device) PrintOperators(runs, a, tables);
  }
  out << "  biggest change: " << (biggest.empty() ? "-" : Printable(biggest)) << "\n"
      << tables.str();
  PrintNotes(runs, out);
  return kExitOk;
}

}  // namespace gpubench::client
