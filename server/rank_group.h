// The workers of one distributed run group (ddp, collective): one
// gpubench-worker per rank, started and reaped together, seen by the job
// runner as one Worker. Rank 0 starts first and opens the rendezvous store;
// the others start with its port once it reports it. The runner reads rank
// 0's events; the other ranks' are drained and dropped but for their
// profiled windows' traces, which join rank 0's finished run (its
// RunFinished.rank_traces). A rank that fails (its run fails, or it exits
// before rank 0 is done) stops the whole group, so no rank waits for ever
// in a collective, and Wait() then names the rank and how it ended.
#ifndef GPUBENCH_SERVER_RANK_GROUP_H_
#define GPUBENCH_SERVER_RANK_GROUP_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "gpubench/v1/worker.pb.h"
#include "launcher/process.h"

namespace gpubench::server {

// Starts rank 0 through launcher with request (request.rank() names every
// rank's device); the other ranks start, with rank 0's store port, at the
// returned Worker's first Next(), so that a stop from another thread reaches
// the group from the start. That Next() fails (every started rank killed)
// when rank 0 ends before it reports its store or a rank cannot start. A
// rank whose run fails stops the group, and rank 0's run then ends with that
// run (its error naming the rank; out of memory stays out of memory). Once
// rank 0 has ended well the others get 30 s to end, then are killed. Every
// rank runs in rank 0's process group (request.process_group, or a new
// one): the returned Worker's ProcessGroup(). The returned Worker follows
// worker::Worker's threading rules; it launches through launcher, which
// must outlive it.
absl::StatusOr<std::unique_ptr<worker::Worker>> StartRankGroup(worker::WorkerLauncher* launcher,
                                                               const v1::WorkerRequest& request);

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_RANK_GROUP_H_
