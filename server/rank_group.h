// The workers of one distributed run group (ddp, collective): one
// gpubench-worker per rank, started and reaped together, seen by the job
// runner as one Worker. Rank 0 starts first and opens the rendezvous store;
// the others start with its port once it reports it. The runner reads rank
// 0's events; the other ranks' are drained and dropped, but a rank that
// fails (its run fails, or it exits before rank 0 is done) stops the whole
// group, so no rank waits for ever in a collective, and Wait() then names
// the rank and how it ended.
#ifndef GPUBENCH_SERVER_RANK_GROUP_H_
#define GPUBENCH_SERVER_RANK_GROUP_H_

#include <memory>

#include "absl/status/statusor.h"
#include "gpubench/v1/worker.pb.h"
#include "worker/process.h"

namespace gpubench::server {

// Starts request.rank().world_size() workers through launcher, each with
// request and its own rank (request.rank() names the devices; its rank is
// set here). Fails, with every started rank killed and reaped, when a worker
// cannot start or rank 0 ends before it reports its store.
// The returned Worker follows worker::Worker's threading rules.
absl::StatusOr<std::unique_ptr<worker::Worker>> StartRankGroup(worker::WorkerLauncher* launcher,
                                                               const v1::WorkerRequest& request);

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_RANK_GROUP_H_
