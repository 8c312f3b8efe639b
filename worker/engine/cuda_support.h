// CUDA-only services of the engine behind a torch-level interface that does
// not include c10/cuda. cuda_support.cc implements it where LibTorch has CUDA
// (GPUBENCH_CUDA); cuda_stubs.cc elsewhere, where every call fails cleanly.
// Internal to the engine. Not thread-safe unless a function says so.
#ifndef GPUBENCH_WORKER_ENGINE_CUDA_SUPPORT_H_
#define GPUBENCH_WORKER_ENGINE_CUDA_SUPPORT_H_

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/engine/types.h"

namespace gpubench::engine::cuda {

// True when this build has the CUDA implementation.
bool Built();

// Times iterations with CUDA events on the current stream.
class EventTimer {
 public:
  virtual ~EventTimer() = default;
  virtual void Begin() = 0;  // before an iteration's first kernel
  virtual void End() = 0;    // after its last kernel
  // Synchronises and appends each timed iteration's milliseconds.
  virtual void Collect(std::vector<double>* device_ms) = 0;
  // Creates events for n iterations now, outside any timed window.
  virtual void Reserve(int n) = 0;
};
std::unique_ptr<EventTimer> NewEventTimer();

// Makes device the current CUDA device of this thread, so that streams,
// events, graphs and synchronisation all use it ("cuda:N", N > 0).
void SetDevice(int device);
// Empties the caching allocator's cache (so reserved memory starts from what
// is live) and resets its peak statistics.
void ResetPeakMemory(int device);
void PeakMemory(int device, int64_t* allocated_bytes, int64_t* reserved_bytes);

// A captured CUDA graph of one step.
class Graph {
 public:
  virtual ~Graph() = default;
  virtual void Replay() = 0;
};
// Runs `step` a few times on a side stream to warm up, then captures one call
// of it into a graph. The step must use only static buffers and no host sync.
absl::StatusOr<std::unique_ptr<Graph>> CaptureGraph(
    const std::function<void()>& step);

// Copies host batches to the device on a side stream; the current stream
// waits for the copy on the device, not the host.
class CopyStream {
 public:
  virtual ~CopyStream() = default;
  virtual torch::Tensor Copy(const torch::Tensor& host, const torch::Device& to,
                             bool non_blocking) = 0;
};
std::unique_ptr<CopyStream> NewCopyStream();

// Reads device tensors to the host without stalling the current stream:
// Start queues a copy into pinned memory and records an event after it;
// Wait blocks until the oldest started copy is done and returns it. In
// the order started.
class HostReads {
 public:
  virtual ~HostReads() = default;
  virtual void Start(const torch::Tensor& device) = 0;
  virtual torch::Tensor Wait() = 0;
};
std::unique_ptr<HostReads> NewHostReads();

// Whether a kernel on device can read and write peer's memory (P2P access,
// which this enables as PyTorch's own cross-GPU copy does).
bool PeerAccess(int device, int peer);

// The device's PCI bus id ("0000:1b:00.0"), for NVML; "" if unknown.
std::string PciBusId(int device);

// The CUDA runtime LibTorch was built with ("13.0") and, where a GPU is
// visible, the cuDNN it loaded ("9.13.0"); each "" where there is none.
void Versions(std::string* runtime, std::string* cudnn);

// Adds GPUs, the CUDA runtime and cuDNN versions to *probe.
void Probe(DeviceProbe* probe);

// NVTX ranges on the calling thread, for Nsight Systems' timeline: no-ops
// unless a tool is attached (NVTX's own rule), and where this build has no
// NVTX headers. Thread-safe. Each push is matched by a pop.
bool NvtxBuilt();
void RangePush(const std::string& message);
// "message", with index as the range's payload (no string built).
void RangePushIndexed(const char* message, int64_t index);
void RangePop();

}  // namespace gpubench::engine::cuda

#endif  // GPUBENCH_WORKER_ENGINE_CUDA_SUPPORT_H_
