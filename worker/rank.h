// A worker's rank of a distributed run (ddp, collective), as the daemon gave
// it (v1::RankAssignment): its check, rank 0's rendezvous store, and the
// engine's settings of the rank, a pair across hosts' proof among them.
#ifndef GPUBENCH_WORKER_RANK_H_
#define GPUBENCH_WORKER_RANK_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpubench/v1/worker.pb.h"
#include "worker/engine/config.h"

namespace gpubench::worker {

// InvalidArgument unless 0 <= rank < world_size with a device per rank.
absl::Status CheckRank(const v1::RankAssignment& rank);

// Rank 0's rendezvous store (engine::OpenRendezvous): on loopback at a
// port the system picks, or for a pair across hosts at its store_address.
// Its port.
absl::StatusOr<int> OpenStore(const v1::RankAssignment& rank);

// The rank's engine settings: rank, world size, store, device; for a pair
// across hosts, the store's host, the collective's address and the proof
// by the pair's secret (an HMAC-SHA256).
void SetRank(const v1::RankAssignment& rank, engine::RunConfig* config);

}  // namespace gpubench::worker

#endif  // GPUBENCH_WORKER_RANK_H_
