#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "worker/engine/inject.h"
#include "worker/engine/workload.h"

namespace gpubench::engine {
namespace {

// c10d collectives on a message of collective_bytes (nccl-tests' sizes:
// all-gather's output, reduce-scatter's input); reports nccl-tests'
// algorithm and bus bandwidth. An iteration is a burst of operations back
// to back, as nccl-tests issues its iterations between two
// synchronisations: the loop's per-iteration work (events, clocks) and a
// window's synchronisation are spread over them. A sample is one operation,
// and its device time the burst's mean. On the CPU (Gloo, milliseconds an
// operation, timed by the host clock) a burst is one operation.
class CollectiveWorkload : public Workload {
 public:
  CollectiveWorkload(const RunConfig& c, torch::Device device)
      : Workload(device), c_(c), ops_(device.is_cuda() ? OpsPerIteration(c.collective_bytes) : 1) {
    const torch::ScalarType dtype = OperandType(c.precision);
    const int64_t count = c.collective_bytes / static_cast<int64_t>(torch::elementSize(dtype));
    const int64_t share = count / std::max(1, c.world_size);
    MaybeInjectOom(c.collective_bytes * 2);
    auto options = torch::TensorOptions().device(device).dtype(dtype);
    switch (c.collective_op) {
      case CollectiveOp::kAllGather:
        in_ = torch::randn({share}, options);
        out_ = torch::empty({count}, options);
        break;
      case CollectiveOp::kReduceScatter:
        in_ = torch::randn({count}, options);
        out_ = torch::empty({share}, options);
        break;
      default:
        in_ = torch::randn({count}, options);
        break;
    }
  }
  int64_t samples_per_iteration() const override { return ops_; }

  absl::Status Flush(std::vector<double>* device_ms) override {
    const size_t first = device_ms->size();
    if (auto s = Workload::Flush(device_ms); !s.ok()) return s;
    for (size_t i = first; i < device_ms->size(); ++i) (*device_ms)[i] /= ops_;
    return absl::OkStatus();
  }

  void Report(RunOutcome* out) override {
    // Operations per second: back-to-back operations over the windows'
    // time, as nccl-tests averages its iterations.
    const double k = c_.world_size;
    double factor = 1;  // broadcast
    switch (c_.collective_op) {
      case CollectiveOp::kAllGather:
      case CollectiveOp::kReduceScatter:
        factor = (k - 1) / k;
        break;
      case CollectiveOp::kBroadcast:
        break;
      default:
        factor = 2 * (k - 1) / k;
        break;
    }
    out->algorithm_bandwidth_gb_per_s = c_.collective_bytes * out->throughput_samples_per_s / 1e9;
    out->bus_bandwidth_gb_per_s = out->algorithm_bandwidth_gb_per_s * factor;
  }

 protected:
  void Compute() override {
    for (int i = 0; i < ops_; ++i) {
      switch (c_.collective_op) {
        case CollectiveOp::kAllGather:
          comm_->AllGather(out_, in_);
          break;
        case CollectiveOp::kReduceScatter:
          comm_->ReduceScatter(out_, in_);
          break;
        case CollectiveOp::kBroadcast:
          comm_->Broadcast(in_);
          break;
        default:
          comm_->AllReduce(in_);
          break;
      }
    }
  }

 private:
  // 20 operations a burst (nccl-tests' default -n) up to 12.8 MiB, fewer
  // above (256 MiB a burst), one from 256 MiB: a burst stays near a
  // millisecond or two on NVLink, and a large message is its own burst.
  static int OpsPerIteration(int64_t bytes) {
    return static_cast<int>(std::clamp<int64_t>((int64_t{256} << 20) / std::max<int64_t>(1, bytes),
                                                1, 20));
  }

  const RunConfig c_;
  const int ops_;  // operations an iteration
  torch::Tensor in_, out_;
};

}  // namespace

WorkloadOrError NewCollectiveWorkload(const RunConfig& c, torch::Device device,
                                 const MeasureConfig& /*m*/) {
  return std::make_unique<CollectiveWorkload>(c, device);
}

}  // namespace gpubench::engine
