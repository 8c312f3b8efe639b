#include <torch/torch.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <memory>
#include <vector>

#include "worker/engine/inject.h"
#include "worker/engine/workload.h"

namespace gpubench::engine {
namespace {

// C = A x B; reports TFLOP/s. fp8: e4m3 operands with per-tensor scales
// through _scaled_mm (B column-major, as cuBLASLt wants it), a bf16 C.
class MatmulWorkload : public Workload {
 public:
  MatmulWorkload(const RunConfig& c, torch::Device device) : Workload(device), c_(c) {
    if (c.precision == Precision::kFp8) {
      InitFp8();
      return;
    }
    const torch::ScalarType dtype = OperandType(c.precision);
    const int64_t bytes = (c.matmul_m * c.matmul_k + c.matmul_k * c.matmul_n +
                           c.matmul_m * c.matmul_n) *
                          torch::elementSize(dtype);
    MaybeInjectOom(bytes);
    auto options = torch::TensorOptions().device(device).dtype(dtype);
    // Random operands: zeros would run faster than real data.
    a_ = torch::randn({c.matmul_m, c.matmul_k}, options);
    b_ = torch::randn({c.matmul_k, c.matmul_n}, options);
    out_ = torch::empty({c.matmul_m, c.matmul_n}, options);
  }
  int64_t samples_per_iteration() const override { return 1; }
  void Report(RunOutcome* out) override {
    out->flops_per_iteration =
        2.0 * c_.matmul_m * c_.matmul_n * static_cast<double>(c_.matmul_k);
  }

 protected:
  void Compute() override {
#if GPUBENCH_TORCH_AT_LEAST(2, 1)
    if (c_.precision == Precision::kFp8) {
      out_ = at::_scaled_mm(a_, b_, scale_a_, scale_b_, std::nullopt, std::nullopt,
                            torch::kBFloat16);
      return;
    }
#endif
    torch::matmul_out(out_, a_, b_);
  }

 private:
  void InitFp8() {
#if GPUBENCH_TORCH_AT_LEAST(2, 1)
    MaybeInjectOom(c_.matmul_m * c_.matmul_k + c_.matmul_k * c_.matmul_n +
                   2 * c_.matmul_m * c_.matmul_n);
    auto options = torch::TensorOptions().device(device_);
    a_ = torch::randn({c_.matmul_m, c_.matmul_k}, options).to(torch::kFloat8_e4m3fn);
    b_ = torch::randn({c_.matmul_n, c_.matmul_k}, options).to(torch::kFloat8_e4m3fn).t();
    scale_a_ = torch::ones({}, options.dtype(torch::kFloat32));
    scale_b_ = torch::ones({}, options.dtype(torch::kFloat32));
#else
    throw std::runtime_error("precision fp8: LibTorch " TORCH_VERSION
                             " has no float8 (2.1 on, with _scaled_mm)");
#endif
  }

  const RunConfig c_;
  torch::Tensor a_, b_, out_, scale_a_, scale_b_;
};

}  // namespace

WorkloadOrError NewMatmulWorkload(const RunConfig& c, torch::Device device,
                                 const MeasureConfig& /*m*/) {
  return std::make_unique<MatmulWorkload>(c, device);
}

}  // namespace gpubench::engine
