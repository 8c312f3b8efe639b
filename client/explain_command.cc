// gpubench explain RUN|FILE.json: where a profiled window's device time
// went (report/trace_breakdown.h), from a run's stored trace read a chunk
// at a time as it arrives, or from a trace file on this machine.
#include <algorithm>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/json_writer.h"
#include "client/output.h"
#include "report/trace_breakdown.h"

namespace gpubench::client {
namespace {

constexpr int kTopKernels = 10;

std::string Us(double us) { return absl::StrFormat("%.0f", us); }
std::string Pct(const report::Breakdown& b, double us) {
  return absl::StrFormat("%.1f", b.Pct(us));
}

void PrintText(const report::Breakdown& b, const std::string& sentence, std::ostream& out) {
  out << "span " << Us(b.span_us) << " us, from the first device event to the last ("
      << b.device_events << " events on device streams; HTA's temporal breakdown)\n";
  Table shares{{"share", "us", "% of span"}, {}};
  const std::pair<const char*, double> rows[] = {
      {"idle", b.idle_us},           {"compute", b.compute_us},
      {"communication", b.communication_us}, {"memory", b.memory_us},
      {"other", b.other_us}};
  for (const auto& [name, us] : rows) shares.rows.push_back({name, Us(us), Pct(b, us)});
  PrintTable(shares, Format::kTable, out);
  if (b.communication_total_us > 0) {
    out << "communication under compute: "
        << absl::StrFormat("%.1f%%", 100 * b.communication_overlap_us / b.communication_total_us)
        << " of " << Us(b.communication_total_us) << " us\n";
  }
  out << "\nidle per stream (the gaps between its work: host = its launch came after the "
         "previous work ended; kernel = under 30 us; other)\n";
  Table idle{{"stream", "host us", "kernel us", "other us"}, {}};
  for (const report::IdleSplit& s : b.idle) {
    idle.rows.push_back({absl::StrCat(s.stream), Us(s.host_wait_us), Us(s.kernel_wait_us),
                         Us(s.other_us)});
  }
  PrintTable(idle, Format::kTable, out);
  out << "\nlaunches: " << b.kernels << " kernels, " << b.short_kernels << " under 10 us; "
      << b.launches << " matched to their runtime call, median launch delay "
      << absl::StrFormat("%.1f", b.median_launch_delay_us) << " us; " << b.graph_launched
      << " events from CUDA graph launches\n\n";
  Table top{{"kernel", "count", "total us", "mean us", "% of span"}, {}};
  for (const report::KernelRow& k : b.top) {
    top.rows.push_back({report::ShortKernelName(k.name), absl::StrCat(k.count), Us(k.total_us),
                        absl::StrFormat("%.2f", k.total_us / k.count), Pct(b, k.total_us)});
  }
  PrintTable(top, Format::kTable, out);
  out << "\n" << sentence << "\n";
}

// The breakdown's keys into json's open object.
void PrintJson(const report::Breakdown& b, const std::string& sentence, JsonWriter& json) {
  json.Key("span_us").Number(b.span_us).Key("idle_us").Number(b.idle_us);
  json.Key("compute_us").Number(b.compute_us).Key("non_compute_us").Number(b.non_compute_us);
  json.Key("communication_us").Number(b.communication_us).Key("memory_us").Number(b.memory_us);
  json.Key("other_us").Number(b.other_us);
  json.Key("communication_total_us").Number(b.communication_total_us);
  json.Key("communication_overlap_us").Number(b.communication_overlap_us);
  json.Key("idle_pct").Number(b.Pct(b.idle_us)).Key("compute_pct").Number(b.Pct(b.compute_us));
  json.Key("non_compute_pct").Number(b.Pct(b.non_compute_us));
  json.Key("idle").Array();
  for (const report::IdleSplit& s : b.idle) {
    json.Object().Key("stream").Int(s.stream).Key("host_wait_us").Number(s.host_wait_us);
    json.Key("kernel_wait_us").Number(s.kernel_wait_us).Key("other_us").Number(s.other_us).End();
  }
  json.End();
  json.Key("kernels").Int(b.kernels).Key("short_kernels").Int(b.short_kernels);
  json.Key("launches").Int(b.launches).Key("graph_launched").Int(b.graph_launched);
  json.Key("median_launch_delay_us").Number(b.median_launch_delay_us);
  json.Key("top").Array();
  for (const report::KernelRow& k : b.top) {
    json.Object().Key("name").String(k.name).Key("count").Int(k.count);
    json.Key("total_us").Number(k.total_us).End();
  }
  json.End();
  json.Key("verdict").String(sentence);
}

}  // namespace

absl::Status FetchTraceEvents(const Daemon& d, const std::string& run_id, int rank,
                              report::TraceEvents* out) {
  report::TraceReader reader;
  absl::Status parsed;
  const TraceArrival got = StreamTrace(d, run_id, rank, [&](std::string_view chunk) {
    if (parsed.ok()) parsed = reader.Feed(chunk);
  });
  if (!got.status.ok()) {
    return absl::Status(FromGrpc(got.status).code(),
                        absl::StrCat(d.host.name, ": ", got.status.error_message()));
  }
  if (!got.intact()) {
    return absl::DataLossError(absl::StrCat("trace of ", run_id, " arrived damaged (", got.bytes,
                                            " of ", got.info.size_bytes(), " bytes, sha256 ",
                                            got.sha256, ")"));
  }
  if (parsed.ok()) parsed = reader.Finish();
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(run_id, "'s trace: ", parsed.message()));
  }
  *out = std::move(reader.events());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<report::RankBreakdown>> RankBreakdowns(const Daemon& d,
                                                                  const v1::Run& run,
                                                                  int top_n) {
  std::vector<report::RankBreakdown> ranks;
  for (int rank : run.result().profile().traced_ranks()) {
    report::TraceEvents events;
    if (auto s = FetchTraceEvents(d, run.run_id(), rank, &events); !s.ok()) {
      if (absl::IsNotFound(s)) continue;  // retention dropped it
      return s;
    }
    ranks.push_back({rank, report::BreakDown(std::move(events), top_n)});
  }
  return ranks;
}

namespace {

// Every rank's shares side by side, then the slowest named.
void PrintRanks(const std::vector<report::RankBreakdown>& ranks, std::ostream& out) {
  out << "\nranks (each rank's own trace of the same profiled steps)\n";
  Table t{{"rank", "span us", "work us", "in communication us", "of it under compute %",
           "idle us"},
          {}};
  for (const report::RankBreakdown& r : ranks) {
    const report::Breakdown& b = r.b;
    t.rows.push_back({absl::StrCat(r.rank), Us(b.span_us), Us(b.WorkUs()),
                      Us(b.communication_total_us),
                      b.communication_total_us > 0
                          ? absl::StrFormat("%.1f", 100 * b.communication_overlap_us /
                                                        b.communication_total_us)
                          : "-",
                      Us(b.idle_us)});
  }
  PrintTable(t, Format::kTable, out);
  out << report::DescribeSlowest(ranks) << "\n";
}

void PrintRanksJson(const std::vector<report::RankBreakdown>& ranks, JsonWriter& json) {
  json.Key("ranks").Array();
  for (const report::RankBreakdown& r : ranks) {
    json.Object().Key("rank").Int(r.rank).Key("span_us").Number(r.b.span_us);
    json.Key("work_us").Number(r.b.WorkUs()).Key("communication_us").Number(r.b.communication_us);
    json.Key("communication_total_us").Number(r.b.communication_total_us);
    json.Key("communication_overlap_us").Number(r.b.communication_overlap_us);
    json.Key("idle_us").Number(r.b.idle_us).End();
  }
  json.End();
  const size_t slowest = report::SlowestRank(ranks);
  json.Key("slowest_rank");
  if (slowest < ranks.size()) {
    json.Int(ranks[slowest].rank);
  } else {
    json.Null();
  }
}

// The operators that launched the kernels, by their device time (the run's
// profile: ProfileSummary.device_operators), where it has them.
void PrintOperators(const v1::ProfileSummary& p, std::ostream& out) {
  if (p.device_operators().empty()) return;
  out << "\noperators by their kernels' device time (the run's profile; share of its "
         "kernels' time)\n";
  PrintTable(OperatorTable(p.device_operators(), "device us", /*with_category=*/false),
             Format::kTable, out);
}

void PrintOperatorsJson(const v1::ProfileSummary& p, JsonWriter& json) {
  if (p.device_operators().empty()) return;
  json.Key("operators").Array();
  for (const v1::OperatorStat& op : p.device_operators()) {
    json.Object().Key("name").String(op.name()).Key("calls").Int(op.count());
    json.Key("device_us").Number(op.self_time_us()).Key("share").Number(op.share()).End();
  }
  json.End();
}

}  // namespace

int ExplainCommand(const Args& a, std::ostream& out, std::ostream& err) {
  if (a.positional.size() != 1) return Usage(err, "explain takes a run id or a trace file");
  const absl::StatusOr<int> rank = RankOption(a);
  if (!rank.ok()) return Usage(err, std::string(rank.status().message()));
  const std::string& what = a.positional[0];
  report::TraceEvents trace;
  const bool file = absl::EndsWith(what, ".json") || absl::StrContains(what, "/");
  if (file && a.Has("rank")) return Usage(err, "--rank: a trace file is one rank's already");
  absl::Status read;
  // A distributed run's every rank, where explain is not asked for one,
  // and rank 0's breakdown among them.
  std::vector<report::RankBreakdown> ranks;
  std::optional<report::Breakdown> rank_zero;
  // The run's record, unless a file or a rank was asked for: its profile's
  // operators are rank 0's.
  absl::StatusOr<v1::Run> run = absl::NotFoundError("");
  if (file) {
    read = report::ReadTraceFile(what, &trace);
  } else {
    auto d = ConnectOne(a);
    read = d.status();
    if (d.ok() && !a.Has("rank")) run = FetchRun(*d, what);
    if (run.ok() && run->result().profile().traced_ranks_size() > 1) {
      auto all = RankBreakdowns(*d, *run, kTopKernels);
      read = all.status();
      if (all.ok()) {
        for (const report::RankBreakdown& r : *all) {
          if (r.rank == *rank) rank_zero = r.b;
        }
        if (all->size() > 1) ranks = std::move(*all);
      }
    }
    // Rank 0's trace, unless it came with every rank's.
    if (read.ok() && !rank_zero) read = FetchTraceEvents(*d, what, *rank, &trace);
  }
  if (!read.ok()) {
    err << "gpubench: " << read.message() << "\n";
    return read.code() == absl::StatusCode::kNotFound ? kExitUsage : kExitJobFailed;
  }
  const report::Breakdown b =
      rank_zero ? *std::move(rank_zero) : report::BreakDown(std::move(trace), kTopKernels);
  if (b.device_events == 0 && run.ok() && !run->result().profile().device_times() &&
      !run->result().profile().top_operators().empty()) {
    return ExplainCpuRun(a, *run, out);  // a CPU run's: from its operators
  }
  if (b.device_events == 0) {
    err << "gpubench: " << what << ": no work on a device stream in the trace (" << b.seen
        << " events): a CPU run's trace has none; `gpubench explain RUN` explains a CPU run "
           "from its operators\n";
    return kExitJobFailed;
  }
  const std::string sentence = report::BiggestShare(b);
  static const v1::ProfileSummary kNone;
  const v1::ProfileSummary& profile = run.ok() ? run->result().profile() : kNone;
  if (a.format == Format::kJson) {
    JsonWriter json(out);
    json.Object();
    if (a.Has("rank") || !ranks.empty()) json.Key("rank").Int(*rank);
    PrintJson(b, sentence, json);
    PrintOperatorsJson(profile, json);
    if (!ranks.empty()) PrintRanksJson(ranks, json);
    json.End();
  } else {
    if (!ranks.empty() || a.Has("rank")) out << "rank " << *rank << ": ";
    PrintText(b, sentence, out);
    PrintOperators(profile, out);
    if (!ranks.empty()) PrintRanks(ranks, out);
  }
  return kExitOk;
}

}  // namespace gpubench::client
