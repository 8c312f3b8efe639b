// The optimizer of a training step: SGD with momentum or AdamW, PyTorch's
// fused kernels where this LibTorch has them. Includes LibTorch.
#ifndef GPUBENCH_WORKER_ENGINE_TRAIN_OPTIMIZER_H_
#define GPUBENCH_WORKER_ENGINE_TRAIN_OPTIMIZER_H_

#include <torch/torch.h>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "worker/engine/compat.h"
#include "worker/engine/config.h"

namespace gpubench::engine {

// SGD with momentum 0.9, or AdamW (weight decay 0.01). Where this LibTorch
// has PyTorch's fused kernels for the device (2.4+, CUDA and CPU), an update
// is one kernel per parameter dtype instead of several per parameter, and
// Step(found_inf) skips it on the device when found_inf is non-zero: fp16
// loss scaling then needs no host sync, in eager mode or in a CUDA graph
// (AdamW's step counts live on the device too). Elsewhere torch::optim.
class TrainOptimizer {
 public:
  // device and found_inf serve the fused kernels (LibTorch 2.4+ only).
  TrainOptimizer(std::vector<torch::Tensor> params, const RunConfig& c,
                 [[maybe_unused]] const torch::Device& device)
      : adamw_(c.optimizer == Optimizer::kAdamW), lr_(c.learning_rate) {
#if GPUBENCH_TORCH_AT_LEAST(2, 4)
    fused_ = device.is_cuda() || device.is_cpu();
#endif
    if (!fused_) {
      if (adamw_) {
        fallback_ = std::make_unique<torch::optim::AdamW>(
            params, torch::optim::AdamWOptions(lr_).weight_decay(kWeightDecay));
      } else {
        fallback_ = std::make_unique<torch::optim::SGD>(
            params, torch::optim::SGDOptions(lr_).momentum(kMomentum));
      }
      return;
    }
    torch::NoGradGuard no_grad;
    for (auto& p : params) {
      if (!p.requires_grad()) continue;
      State s;
      s.param = p;
      s.buffer = torch::zeros_like(p, at::MemoryFormat::Preserve);
      if (adamw_) {
        s.buffer2 = torch::zeros_like(p, at::MemoryFormat::Preserve);
        s.step = torch::zeros({}, p.options().dtype(torch::kFloat32));
      }
      states_.push_back(std::move(s));
    }
  }

  // Whether Step honours found_inf on the device.
  bool fused() const { return fused_; }

  void ZeroGrad() {
    if (!fused_) return fallback_->zero_grad();
    for (auto& s : states_) s.param.mutable_grad().reset();
  }

  // Updates every parameter that has a gradient; where found_inf is defined
  // and non-zero the fused kernels leave parameters and state unchanged.
  void Step([[maybe_unused]] const torch::Tensor& found_inf) {
    if (!fused_) return (void)fallback_->step();
#if GPUBENCH_TORCH_AT_LEAST(2, 4)
    torch::NoGradGuard no_grad;
    // The kernels take one dtype per call.
    std::map<at::ScalarType, Lists> groups;
    for (auto& s : states_) {
      if (!s.param.grad().defined()) continue;
      Lists& g = groups[s.param.scalar_type()];
      g.params.push_back(s.param);
      g.grads.push_back(s.param.grad());
      g.buffers.push_back(s.buffer);
      if (adamw_) {
        g.buffers2.push_back(s.buffer2);
        g.steps.push_back(s.step);
      }
    }
    const std::optional<at::Tensor> inf =
        found_inf.defined() ? std::optional<at::Tensor>(found_inf) : std::nullopt;
    for (auto& [dtype, g] : groups) {
      if (!adamw_) {
        at::_fused_sgd_(g.params, g.grads, g.buffers, /*weight_decay=*/0, kMomentum,
                        lr_, /*dampening=*/0, /*nesterov=*/false, /*maximize=*/false,
                        /*is_first_step=*/false, std::nullopt, inf);
        continue;
      }
      at::_foreach_add_(g.steps, 1);
      at::_fused_adamw_(g.params, g.grads, g.buffers, g.buffers2, {}, g.steps, lr_,
                        0.9, 0.999, kWeightDecay, 1e-8, /*amsgrad=*/false,
                        /*maximize=*/false, std::nullopt, inf);
      if (inf) {
        // A skipped step does not count (as in torch.optim).
        at::_foreach_sub_(g.steps, std::vector<at::Tensor>(g.steps.size(),
                                                            found_inf.reshape({})));
      }
    }
#endif
  }

 private:
  static constexpr double kMomentum = 0.9;
  static constexpr double kWeightDecay = 0.01;
  struct State {
    torch::Tensor param, buffer, buffer2, step;  // buffer: momentum or exp_avg
  };
  struct Lists {
    std::vector<at::Tensor> params, grads, buffers, buffers2, steps;
  };
  const bool adamw_;
  const double lr_;
  bool fused_ = false;
  std::vector<State> states_;
  std::unique_ptr<torch::optim::Optimizer> fallback_;
};

}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_TRAIN_OPTIMIZER_H_
