// Distributed runs (ddp, collective) on LibTorch's c10d: the rendezvous
// store, the process group of this worker's rank, and its collectives.
// One group per process: a worker serves the ranks of one run group, all of
// its points on the same devices. Internal to the engine; not thread-safe
// (the run's thread only).
#ifndef GPUBENCH_WORKER_ENGINE_DISTRIBUTED_H_
#define GPUBENCH_WORKER_ENGINE_DISTRIBUTED_H_

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "worker/engine/config.h"

namespace gpubench::engine::dist {

// A process group's collectives. Each blocking one is issued and waited
// for: on CUDA (NCCL) it runs on the current stream, as Python's
// async_op=False does (no side stream, no events), with no host sync; on the
// CPU (Gloo) it has finished on return. Errors throw (c10::Error), as every
// LibTorch call does.
class Communicator {
 public:
  virtual ~Communicator() = default;
  // Starts the sum over the ranks, in place, and returns what waits for it
  // (on CUDA: NCCL's own stream, which the current stream then waits for,
  // so that it overlaps what the current stream runs meanwhile). May be
  // called from autograd's threads; every rank must start its all-reduces
  // in the same order.
  virtual std::function<void()> StartAllReduce(torch::Tensor& t) = 0;
  // Sum over the ranks, in place.
  virtual void AllReduce(torch::Tensor& t) = 0;
  // out holds world_size × in, in rank order.
  virtual void AllGather(torch::Tensor& out, torch::Tensor& in) = 0;
  // The sum of every rank's in, each rank keeping its 1/world_size in out.
  virtual void ReduceScatter(torch::Tensor& out, torch::Tensor& in) = 0;
  // Rank 0's t to every rank.
  virtual void Broadcast(torch::Tensor& t) = 0;
  // Ends the group's communicators and threads, once every rank is done
  // with it (NCCL's watchdog must not outlive the CUDA driver at exit).
  virtual void Shutdown() {}
};

// The group of c's rank (c.rank of c.world_size) on device, created on the
// first call (NCCL on CUDA, Gloo on the CPU where this build has it) and
// kept for the process's life. FailedPrecondition when a later run asks for
// another group, or rank 0 opened no store; Unimplemented for a backend this
// build lacks.
absl::StatusOr<Communicator*> GroupFor(const RunConfig& c, const torch::Device& device);

// True when `value` is true on any rank (one small all-reduce, read on the
// host).
bool AnyRank(Communicator* comm, bool value, const torch::Device& device);

// The backends (nccl_group.cc where LibTorch has CUDA and NCCL's header is
// found, gloo_group.cc where LibTorch uses the system's Gloo); elsewhere they
// return Unimplemented.
absl::StatusOr<std::unique_ptr<Communicator>> NewNcclGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size);
// Gloo's connections bind address (127.0.0.1 but for a pair across hosts).
absl::StatusOr<std::unique_ptr<Communicator>> NewGlooGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
    const std::string& address);

}  // namespace gpubench::engine::dist

#endif  // GPUBENCH_WORKER_ENGINE_DISTRIBUTED_H_
