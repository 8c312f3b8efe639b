#include <torch/torch.h>

#include <memory>

#include "worker/engine/inject.h"
#include "worker/engine/model_parts.h"
#include "worker/engine/workload.h"

namespace gpubench::engine {
namespace {

// Causal self-attention over random q, k, v [batch, heads, sequence,
// head size] in the precision's type, through SDPA (the run's attention
// kernel). FLOPs: the two products QK^T and PV, 4 B H T^2 D, half of them
// under the causal mask.
class AttentionWorkload : public Workload {
 public:
  AttentionWorkload(const RunConfig& c, torch::Device device) : Workload(device), c_(c) {
    const int64_t b = c.batch_size, h = c.num_heads, t = c.sequence_length;
    const int64_t d = c.hidden_size / c.num_heads;
    const torch::ScalarType dtype = OperandType(c.precision);
    MaybeInjectOom(4 * b * h * t * d * torch::elementSize(dtype));
    auto options = torch::TensorOptions().device(device).dtype(dtype);
    q_ = torch::randn({b, h, t, d}, options);
    k_ = torch::randn({b, h, t, d}, options);
    v_ = torch::randn({b, h, t, d}, options);
    kernel_ = AttentionKernel(q_, k_, v_, /*causal=*/true, {});
    if (kernel_ == "none") {
      throw std::runtime_error("attention: the kernel asked for cannot run these shapes "
                               "(LibTorch's warnings say why)");
    }
  }
  int64_t samples_per_iteration() const override { return c_.batch_size; }
  void Report(RunOutcome* out) override {
    const double t = c_.sequence_length;
    out->flops_per_iteration = 2.0 * c_.batch_size * c_.num_heads * t * t *
                               (c_.hidden_size / c_.num_heads);
    out->attention_backend = kernel_;
  }

 protected:
  void Compute() override {
    torch::InferenceMode guard;
    out_ = Sdpa(q_, k_, v_, /*causal=*/true);
  }

 private:
  const RunConfig c_;
  torch::Tensor q_, k_, v_, out_;
  std::string kernel_;
};

}  // namespace

WorkloadOrError NewAttentionWorkload(const RunConfig& c, torch::Device device,
                                     const MeasureConfig& /*m*/) {
  if (c.num_heads < 1 || c.hidden_size % c.num_heads != 0) {
    return absl::InvalidArgumentError("attention: hidden_size must split into num_heads");
  }
  return std::make_unique<AttentionWorkload>(c, device);
}

}  // namespace gpubench::engine
