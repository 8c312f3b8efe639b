// qualify --pairs: an all-reduce between every two hosts, one rank on each
// daemon (RunHostPair), in rounds of disjoint pairs (a daemon runs one pair
// at a time on its --pair-address).
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
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

// A side whose other side will not come: its rank would wait at the store.
void CancelSide(const Daemon& d, const std::string& job_id) {
  v1::CancelJobRequest cancel;
  cancel.set_job_id(job_id);
  (void)d.Call(&Stub::CancelJob, cancel);
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
  const v1::JobSpec& spec = opened->job().spec();
  pair.device = spec.sweep().device_size() > 0 ? spec.sweep().device(0) : spec.base().device();
  v1::RunHostPairRequest join;
  join.set_side(v1::RunHostPairRequest::SIDE_JOIN);
  join.set_store_address(opened->store_address());
  join.set_secret(opened->secret());
  join.set_peer(a.host.name);
  auto joined = b.Call(&Stub::RunHostPair, join);
  if (!joined.ok()) {
    // The opening rank would wait for it at its store.
    CancelSide(a, opened->job().job_id());
    pair.error = absl::StrCat(b.host.name, ": ", joined.status().message());
    return pair;
  }
  std::vector<v1::Run> runs, unused;
  GatherJob(a, opened->job().job_id(), &runs, log);
  OpenersFigure(runs, &pair);
  if (!pair.error.empty()) {
    // Its rank would wait for the opener's store (5 min) before failing.
    CancelSide(b, joined->job().job_id());
  }
  GatherJob(b, joined->job().job_id(), &unused, log);
  return pair;
}

// A round-robin of n hosts (the circle method): n - 1 rounds (n rounded up
// to even, the extra one a bye), each host in at most one pair a round,
// every two hosts paired once; the lower index of a pair opens it.
std::vector<std::vector<std::pair<size_t, size_t>>> Rounds(size_t n) {
  const size_t m = n + n % 2;
  std::vector<std::vector<std::pair<size_t, size_t>>> rounds;
  for (size_t r = 0; r + 1 < m; ++r) {
    auto& round = rounds.emplace_back();
    for (size_t k = 0; k < m / 2; ++k) {
      // Position 0 stays; the others turn one place a round.
      const size_t a = k == 0 ? 0 : 1 + (r + k - 1) % (m - 1);
      const size_t b = 1 + (r + m - 2 - k) % (m - 1);
      if (a < n && b < n) round.emplace_back(std::min(a, b), std::max(a, b));
    }
  }
  return rounds;
}

}  // namespace

std::vector<report::HostPairResult> RunHostPairs(const std::vector<Daemon>& daemons,
                                                 std::ostream& log) {
  std::map<std::pair<size_t, size_t>, report::HostPairResult> done;
  absl::Mutex mu;
  for (const auto& round : Rounds(daemons.size())) {
    ForEachIndex(round.size(), [&](size_t k) {
      const auto [i, j] = round[k];
      std::ostringstream said;
      report::HostPairResult pair = RunPair(daemons[i], daemons[j], said);
      absl::MutexLock lock(&mu);
      log << said.str();
      done[{i, j}] = std::move(pair);
    });
  }
  std::vector<report::HostPairResult> pairs;
  for (auto& [key, pair] : done) pairs.push_back(std::move(pair));
  return pairs;
}

}  // namespace gpubench::client
