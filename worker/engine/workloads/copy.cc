#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "worker/engine/cuda_support.h"
#include "worker/engine/inject.h"
#include "worker/engine/workload.h"

namespace gpubench::engine {
namespace {

// One copy of copy_bytes per iteration; reports GB/s. Device to device
// with peer_device: from the run's GPU to that one, peer to peer; with
// copy_kernel: by PyTorch's element-wise copy kernel (int32 into float32,
// which no memcpy can do), not the copy engine.
class CopyWorkload : public Workload {
 public:
  CopyWorkload(const RunConfig& c, torch::Device device, torch::Device to)
      : Workload(device), bytes_(c.copy_bytes) {
    MaybeInjectOom(bytes_);
    const bool pinned = c.pipeline.pinned_memory && device.is_cuda();
    auto host = torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(pinned);
    auto dev = torch::TensorOptions().dtype(torch::kUInt8).device(device);
    switch (c.copy_direction) {
      case CopyDirection::kDeviceToHost:
        src_ = torch::randint(256, {bytes_}, dev);
        dst_ = torch::empty({bytes_}, host);
        break;
      case CopyDirection::kDeviceToDevice:
        if (c.copy_kernel) {
          src_ = torch::randint(1 << 20, {bytes_ / 4}, dev.dtype(torch::kInt32));
          dst_ = torch::empty({bytes_ / 4}, dev.dtype(torch::kFloat32).device(to));
        } else {
          src_ = torch::randint(256, {bytes_}, dev);
          dst_ = torch::empty({bytes_}, dev.device(to));
        }
        break;
      default:
        src_ = torch::randint(256, {bytes_}, torch::kUInt8);
        if (pinned) src_ = src_.pin_memory();
        dst_ = torch::empty({bytes_}, dev);
        break;
    }
    non_blocking_ = pinned;
  }
  int64_t samples_per_iteration() const override { return 1; }
  void Report(RunOutcome* out) override {
    if (out->latency_ms.p50 > 0) {
      out->bandwidth_gb_per_s = bytes_ / (out->latency_ms.p50 * 1e-3) / 1e9;
    }
  }

 protected:
  void Compute() override { dst_.copy_(src_, non_blocking_); }

 private:
  const int64_t bytes_;
  bool non_blocking_ = false;
  torch::Tensor src_, dst_;
};

}  // namespace

WorkloadOrError NewCopyWorkload(const RunConfig& c, torch::Device device,
                                 const MeasureConfig& /*m*/) {
  if (c.copy_kernel && (c.copy_direction != CopyDirection::kDeviceToDevice ||
                        c.copy_bytes % 4 != 0)) {
    return absl::InvalidArgumentError(
        "params.copy_kernel: a kernel copy is device_to_device, of a multiple of 4 bytes");
  }
  if (c.peer_device < 0) return std::make_unique<CopyWorkload>(c, device, device);
  if (c.copy_direction != CopyDirection::kDeviceToDevice || !device.is_cuda()) {
    return absl::InvalidArgumentError(
        "params.peer_device: a copy to a peer GPU is device_to_device on a CUDA device");
  }
  const int gpus = static_cast<int>(torch::cuda::device_count());
  if (c.peer_device >= gpus) {
    return absl::InvalidArgumentError(absl::StrCat("params.peer_device: cuda:", c.peer_device,
                                                   " is not a GPU of this host (", gpus, ")"));
  }
  // Without P2P access PyTorch would stage a kernel copy through a memcpy.
  if (c.copy_kernel && c.peer_device != device.index() &&
      !cuda::PeerAccess(device.index(), c.peer_device)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "params.copy_kernel: ", device.str(), " has no P2P access to cuda:", c.peer_device,
        ", so no kernel can copy between them"));
  }
  return std::make_unique<CopyWorkload>(c, device, torch::Device(torch::kCUDA, c.peer_device));
}

}  // namespace gpubench::engine
