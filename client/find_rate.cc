// gpubench submit --mode serve --slo ... --find max-rate: the largest
// Poisson rate whose p99s meet the SLOs, each point a serving job on one
// daemon (report/rate_search.h judges and steers).
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/output.h"
#include "common/spec.h"
#include "report/rate_search.h"

namespace gpubench::client {
namespace {

std::string Ms(double ms) { return absl::StrFormat("%.4g", ms); }

// What a search needs of its spec: one serving point, a bound to meet.
absl::Status CheckSearchable(const v1::JobSpec& spec) {
  const v1::RunConfig& base = spec.base();
  if (base.mode() != v1::MODE_SERVE) {
    return absl::InvalidArgumentError("--find max-rate: needs --mode serve");
  }
  const v1::ServeLoad& s = base.serve();
  if (s.slo_ttft_ms() <= 0 && s.slo_tpot_ms() <= 0 && s.slo_e2e_ms() <= 0) {
    return absl::InvalidArgumentError(
        "--find max-rate: needs a target to meet: --slo ttft_ms=..,tpot_ms=..");
  }
  if (s.trace_size() > 0) {
    return absl::InvalidArgumentError("--find max-rate: a trace sets its own arrivals");
  }
  if (CountSweepPoints(spec.sweep()) > 1) {
    return absl::InvalidArgumentError(
        "--find max-rate: searches one point; drop the sweep (each rate is a run)");
  }
  return absl::OkStatus();
}

}  // namespace

int FindMaxRate(const Args& a, const v1::JobSpec& spec, std::ostream& out, std::ostream& err) {
  if (a.Option("find") != "max-rate") {
    return Usage(err, absl::StrCat("--find: \"", a.Option("find"), "\": the search is max-rate"));
  }
  if (auto s = CheckSearchable(spec); !s.ok()) return Usage(err, std::string(s.message()));
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  const double start = spec.base().serve().request_rate() > 0 ? spec.base().serve().request_rate()
                                                              : 1;
  int runs_at_most = 12;
  if (a.Has("limit") && (!absl::SimpleAtoi(a.Option("limit"), &runs_at_most) || runs_at_most < 1)) {
    return Usage(err, "--limit: the most runs the search takes, at least 1");
  }
  report::RateSearch search(start, /*tolerance=*/0.1, runs_at_most);
  Table t;
  t.header = {"rate", "ttft p99 ms", "tpot p99 ms", "e2e p99 ms", "requests", "verdict", "job"};
  for (std::optional<double> rate = search.Next(); rate; rate = search.Next()) {
    v1::JobSpec point = spec;
    point.mutable_base()->mutable_serve()->set_request_rate(*rate);
    point.clear_sweep();
    std::vector<v1::Run> runs;
    std::ostringstream log;
    const int code = MeasureOnce(*d, point, &runs, log);
    // A run that failed at a rate fails the targets there (an overloaded
    // server finishes no measured request in time); one that failed at the
    // first rate, or reached no run, says the spec or the host is wrong.
    if (runs.empty() || (search.points() == 0 && runs[0].state() != v1::RUN_STATE_SUCCEEDED)) {
      err << log.str() << "gpubench: --find max-rate: the run at " << *rate
          << " requests/s was not measured; the search stops\n";
      return code == kExitOk ? kExitJobFailed : code;
    }
    std::string why;
    const bool meets = report::MeetsSlos(runs[0], &why);
    search.Add(*rate, meets);
    const v1::ServeResult& s = runs[0].result().serve();
    err << absl::StrFormat("rate %.4g requests/s: %s (%s)\n", *rate, meets ? "meets" : "fails",
                           why);
    t.rows.push_back({absl::StrFormat("%.4g", *rate), Ms(s.ttft().p99_ms()),
                      Ms(s.tpot().p99_ms()), Ms(s.e2e().p99_ms()), absl::StrCat(s.requests()),
                      meets ? "meets" : "fails", runs[0].job_id()});
  }
  PrintTable(t, a.format, out);
  if (search.best() <= 0) {
    err << "gpubench: --find max-rate: no rate down to " << t.rows.back()[0]
        << " requests/s met the targets\n";
    return kExitJobFailed;
  }
  if (a.format == Format::kTable) {
    out << absl::StrFormat("max rate meeting every target at p99: %.4g requests/s", search.best());
    if (search.failed_above() > 0) {
      out << absl::StrFormat(" (%.4g fails; %d runs)", search.failed_above(), search.points());
    } else {
      out << absl::StrFormat(" (the last tried; %d runs, more may meet them)", search.points());
    }
    out << "\n";
  }
  return kExitOk;
}

}  // namespace gpubench::client
