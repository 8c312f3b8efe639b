// What probe, fleet and qualify share: each host's probe runs, gathered from
// every host of the fleet at once. Internal to client/.
#ifndef GPUBENCH_CLIENT_PROBE_HOSTS_H_
#define GPUBENCH_CLIENT_PROBE_HOSTS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/cli_internal.h"
#include "gpubench/v1/result.pb.h"
#include "report/qualify.h"

namespace gpubench::client {

// What one host gave: its CPU's model (the SKU of CPU runs), its probe
// runs, and whether it answered.
struct HostRuns {
  std::string cpu_model;
  std::vector<std::string> devices;  // "cuda:0"..., or "cpu" on a host without GPUs
  std::vector<v1::Run> runs;
  absl::Status status;
};

// Every probe run of one host since `since`, newest first, as ranking reads
// it (the figures, config, fingerprint, contention and throttling): at most
// 10 pages of 1000 a probe; a page of more than it asked for is refused.
absl::Status ProbeRuns(const Daemon& d, const google::protobuf::Timestamp& since,
                       std::vector<v1::Run>* runs);

// Asks every host for its host info, then calls gather with the index of
// each that answered; gather fills its HostRuns' runs and may set its status.
std::vector<HostRuns> EachHost(
    const std::vector<Daemon>& daemons,
    const std::function<void(size_t, const v1::HostInfo&, HostRuns*)>& gather);

// qualify --pairs (qualify_pairs.cc): an all-reduce between every two
// daemons, one rank on each, in turn; each pair's opening rank's figure or
// why it has none.
std::vector<report::HostPairResult> RunHostPairs(const std::vector<Daemon>& daemons,
                                                 std::ostream& log);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_PROBE_HOSTS_H_
