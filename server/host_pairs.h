// Pairs across hosts (gpubench qualify --pairs): a 2-rank all-reduce with
// rank 0 on the daemon that opens it and rank 1 on the one that joins it
// (RunHostPair). Each daemon queues its rank as a probe job of its own and
// keeps the rank's assignment, the pair's secret with it, in memory only,
// by job id, until the job ends: a pair whose daemon restarted fails rather
// than meet a stranger.
#ifndef GPUBENCH_SERVER_HOST_PAIRS_H_
#define GPUBENCH_SERVER_HOST_PAIRS_H_

#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "gpubench/v1/service.pb.h"
#include "gpubench/v1/worker.pb.h"

namespace gpubench::server {

// OK for "" (off) and "IPV4:PORT" with a port from 1 to 65535; otherwise
// InvalidArgument saying what it must be.
absl::Status CheckPairAddress(const std::string& address);

// The rank this daemon runs for request, its store and collective on
// pair_address (this daemon's --pair-address) and its device (devices[rank]
// of two); an OPEN draws the secret. FailedPrecondition without a
// pair_address; InvalidArgument naming the request's field that is wrong.
absl::StatusOr<v1::RankAssignment> PairRankOf(const v1::RunHostPairRequest& request,
                                              const std::string& pair_address,
                                              const std::string& device);

// The ranks of the pairs queued here, by job id. Thread-safe.
class HostPairs {
 public:
  void Add(const std::string& job_id, const v1::RankAssignment& rank) ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<v1::RankAssignment> Find(const std::string& job_id) const
      ABSL_LOCKS_EXCLUDED(mu_);
  void Remove(const std::string& job_id) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, v1::RankAssignment> ranks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_HOST_PAIRS_H_
