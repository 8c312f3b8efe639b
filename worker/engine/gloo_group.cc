// Gloo through c10d, for ddp and collective on the CPU (built where LibTorch
// links the system's Gloo, whose headers this file needs: GPUBENCH_GLOO).
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "worker/engine/distributed.h"

namespace gpubench::engine::dist {
namespace {

class GlooGroup : public Communicator {
 public:
  GlooGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
            const std::string& address)
      : world_size_(world_size) {
    auto options = c10d::ProcessGroupGloo::Options::create();
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(address));
    pg_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
  }

  std::function<void()> StartAllReduce(torch::Tensor& t) override {
    std::vector<at::Tensor> tensors{t};
    auto work = pg_->allreduce(tensors);
    return [work] { work->wait(); };
  }
  void AllReduce(torch::Tensor& t) override { StartAllReduce(t)(); }
  void AllGather(torch::Tensor& out, torch::Tensor& in) override {
    // Gloo of this age has no flat all-gather: one output view per rank.
    std::vector<std::vector<at::Tensor>> outputs{out.chunk(world_size_)};
    std::vector<at::Tensor> inputs{in};
    pg_->allgather(outputs, inputs)->wait();
  }
  void ReduceScatter(torch::Tensor&, torch::Tensor&) override {
    TORCH_CHECK(false, "reduce_scatter: this build's Gloo has none; run it on cuda (NCCL)");
  }
  void Broadcast(torch::Tensor& t) override {
    std::vector<at::Tensor> tensors{t};
    pg_->broadcast(tensors)->wait();
  }

 private:
  const int world_size_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> NewGlooGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
    const std::string& address) {
  return std::make_unique<GlooGroup>(store, rank, world_size, address);
}

}  // namespace gpubench::engine::dist
