#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "worker/engine/inject.h"
#include "worker/engine/workload.h"

namespace gpubench::engine {
namespace {

// Issues nothing: its time per iteration is the harness's own cost per
// iteration (the loop, the host clock, and on CUDA the two timing events).
class EmptyWorkload : public Workload {
 public:
  explicit EmptyWorkload(torch::Device device) : Workload(device) {}
  int64_t samples_per_iteration() const override { return 1; }

 protected:
  void Compute() override {}
};

}  // namespace

WorkloadOrError NewEmptyWorkload(const RunConfig& /*c*/, torch::Device device,
                                 const MeasureConfig& /*m*/) {
  return std::make_unique<EmptyWorkload>(device);
}

}  // namespace gpubench::engine
