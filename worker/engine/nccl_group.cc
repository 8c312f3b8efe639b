// NCCL through c10d (built where LibTorch has CUDA and NCCL's header is
// found: GPUBENCH_NCCL).
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "worker/engine/distributed.h"

namespace gpubench::engine::dist {
namespace {

// A blocking collective on the current stream (LibTorch 2.7+:
// c10d's asyncOp = false, what Python's async_op=False sets): no side
// stream and no events between it and the work around it. Older LibTorch
// has no such option and runs every collective on NCCL's stream.
template <typename Options>
auto Blocking(Options options, int) -> decltype(options.asyncOp = false, Options()) {
  options.asyncOp = false;
  return options;
}
template <typename Options>
Options Blocking(Options options, long) {
  return options;
}

// A blocking collective may hand back no work at all (LibTorch 2.11 with
// asyncOp = false: it ran on the current stream); Python checks the same.
template <typename WorkPtr>
void Wait(const WorkPtr& work) {
  if (work) work->wait();
}

class NcclGroup : public Communicator {
 public:
  NcclGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size)
      : pg_(c10::make_intrusive<c10d::ProcessGroupNCCL>(
            store, rank, world_size, c10d::ProcessGroupNCCL::Options::create())) {}

  std::function<void()> StartAllReduce(torch::Tensor& t) override {
    std::vector<at::Tensor> tensors{t};
    auto work = pg_->allreduce(tensors);
    return [work] { work->wait(); };
  }
  void AllReduce(torch::Tensor& t) override {
    std::vector<at::Tensor> tensors{t};
    Wait(pg_->allreduce(tensors, Blocking(c10d::AllreduceOptions(), 0)));
  }
  void AllGather(torch::Tensor& out, torch::Tensor& in) override {
    Wait(pg_->_allgather_base(out, in, Blocking(c10d::AllgatherOptions(), 0)));
  }
  void ReduceScatter(torch::Tensor& out, torch::Tensor& in) override {
    Wait(pg_->_reduce_scatter_base(out, in, Blocking(c10d::ReduceScatterOptions(), 0)));
  }
  void Broadcast(torch::Tensor& t) override {
    std::vector<at::Tensor> tensors{t};
    Wait(pg_->broadcast(tensors, Blocking(c10d::BroadcastOptions(), 0)));
  }
  void Shutdown() override { pg_->shutdown(); }

 private:
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> pg_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> NewNcclGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size) {
  return std::make_unique<NcclGroup>(store, rank, world_size);
}

}  // namespace gpubench::engine::dist
