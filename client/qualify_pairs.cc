// qualify --pairs: an all-reduce between every two hosts, one rank on each
// daemon (RunHostPair), the pairs in turn, since a daemon runs one pair at
// a time on its --pair-address.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli_internal.h"
#include "client/probe_hosts.h"
#include "common/printable.h"
#include "report/fleet_rank.h"

namespace gpubench::client {
namespace {

using Stub = v1::BenchService::Stub;

// The figure of the opening rank's run, or why there is none.
void OpenersFigure(const std::vector<v1::Run>& runs, report::HostPairResult* pair) {
  for (const v1::Run& run : runs) {
    pair->device = run.config().device();
    if (run.state() != v1::RUN_STATE_SUCCEEDED) {
      pair->error = absl::StrCat(pair->a, "'s rank: ", Printable(run.error()));
      continue;
    }
    pair->value = report::ProbeFigure(*report::ProbeNamed(report::kHostPairProbe), run);
    pair->run_id = run.run_id();
    pair->error.clear();
    return;
  }
  if (pair->error.empty()) pair->error = absl::StrCat(pair->a, "'s rank stored no run");
}

report::HostPairResult RunPair(const Daemon& a, const Daemon& b, std::ostream& log) {
  report::HostPairResult pair;
  pair.a = a.host.name;
  pair.b = b.host.name;
  v1::RunHostPairRequest open;
  open.set_side(v1::RunHostPairRequest::SIDE_OPEN);
  open.set_peer(b.host.name);
  auto opened = a.Call(&Stub::RunHostPair, open);
  if (!opened.ok()) {
    pair.error = absl::StrCat(a.host.name, ": ", opened.status().message());
    return pair;
  }
  v1::RunHostPairRequest join;
  join.set_side(v1::RunHostPairRequest::SIDE_JOIN);
  join.set_store_address(opened->store_address());
  join.set_secret(opened->secret());
  join.set_peer(a.host.name);
  auto joined = b.Call(&Stub::RunHostPair, join);
  if (!joined.ok()) {
    // The opening rank would wait for it at its store.
    v1::CancelJobRequest cancel;
    cancel.set_job_id(opened->job().job_id());
    (void)a.Call(&Stub::CancelJob, cancel);
    pair.error = absl::StrCat(b.host.name, ": ", joined.status().message());
    return pair;
  }
  std::vector<v1::Run> runs, unused;
  GatherJob(a, opened->job().job_id(), &runs, log);
  GatherJob(b, joined->job().job_id(), &unused, log);
  OpenersFigure(runs, &pair);
  return pair;
}

}  // namespace

std::vector<report::HostPairResult> RunHostPairs(const std::vector<Daemon>& daemons,
                                                 std::ostream& log) {
  std::vector<report::HostPairResult> pairs;
  for (size_t i = 0; i < daemons.size(); ++i) {
    for (size_t j = i + 1; j < daemons.size(); ++j) {
      pairs.push_back(RunPair(daemons[i], daemons[j], log));
    }
  }
  return pairs;
}

}  // namespace gpubench::client
