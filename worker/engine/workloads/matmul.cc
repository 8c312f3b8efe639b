#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "worker/engine/inject.h"
#include "worker/engine/workload.h"

namespace gpubench::engine {
namespace {

// C = A x B; reports TFLOP/s.
class MatmulWorkload : public Workload {
 public:
  MatmulWorkload(const RunConfig& c, torch::Device device) : Workload(device), c_(c) {
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
  void Compute() override { torch::matmul_out(out_, a_, b_); }

 private:
  const RunConfig c_;
  torch::Tensor a_, b_, out_;
};

}  // namespace

WorkloadOrError NewMatmulWorkload(const RunConfig& c, torch::Device device,
                                 const MeasureConfig& /*m*/) {
  return std::make_unique<MatmulWorkload>(c, device);
}

}  // namespace gpubench::engine
