#include "worker/engine/attention.h"

#include <ATen/Context.h>
#include <torch/torch.h>

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "worker/engine/compat.h"
#include "worker/engine/model_parts.h"

namespace gpubench::engine {
namespace {

#if GPUBENCH_TORCH_AT_LEAST(2, 0)
// SDPA's switches as the process started: what auto restores.
struct Switches {
  bool flash, efficient, math, cudnn;
};

Switches Defaults() {
  static const Switches defaults = [] {
    auto& ctx = at::globalContext();
    Switches s{ctx.userEnabledFlashSDP(), ctx.userEnabledMemEfficientSDP(),
               ctx.userEnabledMathSDP(), false};
#if GPUBENCH_TORCH_AT_LEAST(2, 3)
    s.cudnn = ctx.userEnabledCuDNNSDP();
#endif
    return s;
  }();
  return defaults;
}
#endif

}  // namespace

absl::Status SelectAttention(Attention a) {
#if GPUBENCH_TORCH_AT_LEAST(2, 0)
  Switches s = Defaults();
  if (a != Attention::kAuto && a != Attention::kUnspecified) {
    s = {a == Attention::kFlash, a == Attention::kEfficient, a == Attention::kMath,
         a == Attention::kCudnn};
  }
#if !GPUBENCH_TORCH_AT_LEAST(2, 3)
  if (a == Attention::kCudnn) {
    return absl::FailedPreconditionError(
        absl::StrCat("attention cudnn: LibTorch ", TORCH_VERSION, " has no cuDNN attention"));
  }
#endif
  auto& ctx = at::globalContext();
  ctx.setSDPUseFlash(s.flash);
  ctx.setSDPUseMemEfficient(s.efficient);
  ctx.setSDPUseMath(s.math);
#if GPUBENCH_TORCH_AT_LEAST(2, 3)
  ctx.setSDPUseCuDNN(s.cudnn);
#endif
  return absl::OkStatus();
#else
  if (a == Attention::kAuto || a == Attention::kUnspecified || a == Attention::kMath) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("attention ", AttentionName(a), ": LibTorch ", TORCH_VERSION,
                   " has no scaled_dot_product_attention (2.0 on), only the math formula"));
#endif
}

NoCudnnAttention::NoCudnnAttention(Attention a) {
#if GPUBENCH_TORCH_AT_LEAST(2, 3)
  auto& ctx = at::globalContext();
  if ((a == Attention::kAuto || a == Attention::kUnspecified) && ctx.userEnabledCuDNNSDP()) {
    ctx.setSDPUseCuDNN(false);
    restore_ = true;
  }
#else
  (void)a;
#endif
}

NoCudnnAttention::~NoCudnnAttention() {
#if GPUBENCH_TORCH_AT_LEAST(2, 3)
  if (restore_) at::globalContext().setSDPUseCuDNN(true);
#endif
}

std::string AttentionKernel(const torch::Tensor& q, const torch::Tensor& k,
                            const torch::Tensor& v, bool causal, const torch::Tensor& mask,
                            bool grouped) {
#if GPUBENCH_TORCH_AT_LEAST(2, 0)
  const std::optional<torch::Tensor> m =
      mask.defined() ? std::optional<torch::Tensor>(mask) : std::nullopt;
#if GPUBENCH_TORCH_AT_LEAST(2, 5)
  const int64_t choice = at::_fused_sdp_choice(q, k, v, m, 0.0, causal, std::nullopt, grouped);
#else
  if (grouped) return "none";
  const int64_t choice = at::_fused_sdp_choice(q, k, v, m, 0.0, causal);
#endif
  switch (choice) {
    case 0: return "math";
    case 1: return "flash";
    case 2: return "efficient";
    case 3: return "cudnn";
    case -1: return "none";
    default: return absl::StrCat("backend ", choice);
  }
#else
  (void)q, (void)k, (void)v, (void)causal, (void)mask;
  return grouped ? "none" : "math (LibTorch 1.13 has no SDPA)";
#endif
}

}  // namespace gpubench::engine
