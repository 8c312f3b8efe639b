// Builds without CUDA in LibTorch: the engine never reaches these with a CUDA
// device, because torch::cuda::is_available() is false there.
#include "worker/engine/cuda_support.h"

namespace gpubench::engine::cuda {

bool Built() { return false; }
std::unique_ptr<EventTimer> NewEventTimer() { return nullptr; }
void SetDevice(int) {}
void ResetPeakMemory(int) {}
void PeakMemory(int, int64_t* allocated, int64_t* reserved) {
  *allocated = 0;
  *reserved = 0;
}
absl::StatusOr<std::unique_ptr<Graph>> CaptureGraph(
    const std::function<void()>&) {
  return absl::FailedPreconditionError(
      "CUDA graphs need a LibTorch built with CUDA");
}
std::unique_ptr<CopyStream> NewCopyStream() { return nullptr; }
std::unique_ptr<HostReads> NewHostReads() { return nullptr; }
bool PeerAccess(int, int) { return false; }
std::string PciBusId(int) { return ""; }
void Versions(std::string*, std::string*) {}
void Probe(DeviceProbe*) {}
bool NvtxBuilt() { return false; }
void RangePush(const std::string&) {}
void RangePushIndexed(const char*, int64_t) {}
void RangePop() {}

}  // namespace gpubench::engine::cuda
