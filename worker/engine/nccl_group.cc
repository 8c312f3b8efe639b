// NCCL through c10d (built where LibTorch has CUDA and NCCL's header is
// found: GPUBENCH_NCCL).
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "worker/engine/distributed.h"

namespace gpubench::engine::dist {
namespace {

class NcclGroup : public Communicator {
 public:
  NcclGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size)
      : pg_(c10::make_intrusive<c10d::ProcessGroupNCCL>(
            store, rank, world_size, c10d::ProcessGroupNCCL::Options::create())) {}

  void AllReduce(torch::Tensor& t) override {
    std::vector<at::Tensor> tensors{t};
    pg_->allreduce(tensors)->wait();
  }
  void AllGather(torch::Tensor& out, torch::Tensor& in) override {
    pg_->_allgather_base(out, in)->wait();
  }
  void ReduceScatter(torch::Tensor& out, torch::Tensor& in) override {
    pg_->_reduce_scatter_base(out, in)->wait();
  }
  void Broadcast(torch::Tensor& t) override {
    std::vector<at::Tensor> tensors{t};
    pg_->broadcast(tensors)->wait();
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
