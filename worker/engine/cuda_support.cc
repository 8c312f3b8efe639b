// Compiled only when LibTorch has CUDA (GPUBENCH_CUDA).
#include "worker/engine/cuda_support.h"

#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/cuda/PeerToPeerAccess.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <deque>
#include <utility>
#include <vector>

#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>  // header-only: loads the tool's library when one is attached
#define GPUBENCH_NVTX 1
#endif

#include "absl/strings/str_cat.h"

namespace gpubench::engine::cuda {
namespace {

class CudaEventTimer : public EventTimer {
 public:
  void Begin() override {
    Slot& slot = NextSlot();
    slot.begin.record();
  }
  void End() override {
    slots_[used_ - 1]->end.record();
  }
  void Reserve(int n) override {
    while (slots_.size() < static_cast<size_t>(n)) slots_.push_back(std::make_unique<Slot>());
    // CUDAEvent creates its cudaEvent on first record: record each once.
    for (auto& slot : slots_) {
      slot->begin.record();
      slot->end.record();
    }
    torch::cuda::synchronize();
  }
  void Collect(std::vector<double>* device_ms) override {
    for (size_t i = 0; i < used_; ++i) {
      slots_[i]->end.synchronize();
      device_ms->push_back(slots_[i]->begin.elapsed_time(slots_[i]->end));
    }
    used_ = 0;
  }

 private:
  struct Slot {
    // Default flags disable timing; ask for timing events.
    at::cuda::CUDAEvent begin{cudaEventDefault};
    at::cuda::CUDAEvent end{cudaEventDefault};
  };
  // Slots are reused across windows, so events are created only while the
  // first window grows the pool, never inside later timed windows.
  Slot& NextSlot() {
    if (used_ == slots_.size()) slots_.push_back(std::make_unique<Slot>());
    return *slots_[used_++];
  }
  std::vector<std::unique_ptr<Slot>> slots_;
  size_t used_ = 0;
};

class CudaGraph : public Graph {
 public:
  void Replay() override { graph_.replay(); }
  at::cuda::CUDAGraph graph_;
};

class SideCopyStream : public CopyStream {
 public:
  torch::Tensor Copy(const torch::Tensor& host, const torch::Device& to,
                     bool non_blocking) override {
    auto current = c10::cuda::getCurrentCUDAStream(to.index());
    if (!side_) side_ = c10::cuda::getStreamFromPool(false, to.index());
    torch::Tensor out;
    {
      // Allocated on the side stream, which writes it: a block of the
      // current stream's pool may still be read by its queued kernels (the
      // host runs steps ahead), and a copy there would overwrite them.
      c10::cuda::CUDAStreamGuard guard(*side_);
      out = torch::empty(host.sizes(), host.options().device(to));
      out.copy_(host, non_blocking);
    }
    // One event, re-recorded each copy: the wait captures its state now.
    done_.record(*side_);
    done_.block(current);
    // The current stream reads it: its block returns to the side stream's
    // pool only once the current stream's work queued before the free is done.
    out.record_stream(current);
    return out;
  }

 private:
  c10::optional<c10::cuda::CUDAStream> side_;
  at::cuda::CUDAEvent done_;
};

}  // namespace

bool Built() { return true; }

std::unique_ptr<EventTimer> NewEventTimer() {
  return std::make_unique<CudaEventTimer>();
}

void SetDevice(int device) { c10::cuda::set_device(static_cast<c10::DeviceIndex>(device)); }

void ResetPeakMemory(int device) {
  torch::cuda::synchronize(device);
  c10::cuda::CUDACachingAllocator::emptyCache();
  c10::cuda::CUDACachingAllocator::resetPeakStats(device);
}

void PeakMemory(int device, int64_t* allocated, int64_t* reserved) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
  // Index 0 is the aggregate over pool types (StatType::AGGREGATE).
  *allocated = stats.allocated_bytes[0].peak;
  *reserved = stats.reserved_bytes[0].peak;
}

absl::StatusOr<std::unique_ptr<Graph>> CaptureGraph(
    const std::function<void()>& step) {
  auto graph = std::make_unique<CudaGraph>();
  auto side = c10::cuda::getStreamFromPool();
  torch::cuda::synchronize();
  {
    c10::cuda::CUDAStreamGuard guard(side);
    // Warm-up on the capture stream: cuDNN autotune, allocator pools.
    for (int i = 0; i < 3; ++i) step();
    side.synchronize();
    const bool cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    graph->graph_.capture_begin();
    step();
    graph->graph_.capture_end();
    at::autocast::set_autocast_cache_enabled(cache);
  }
  torch::cuda::synchronize();
  return graph;
}

std::unique_ptr<CopyStream> NewCopyStream() {
  return std::make_unique<SideCopyStream>();
}

namespace {

class PinnedHostReads : public HostReads {
 public:
  void Start(const torch::Tensor& device) override {
    Read read;
    // Pinned blocks come from LibTorch's caching host allocator, which
    // keeps one until the copy into it is done; the events are reused.
    read.host =
        torch::empty(device.sizes(), device.options().device(torch::kCPU).pinned_memory(true));
    read.host.copy_(device, /*non_blocking=*/true);
    if (!spare_.empty()) {
      read.done = std::move(spare_.back());
      spare_.pop_back();
    }
    read.done.record(c10::cuda::getCurrentCUDAStream(device.device().index()));
    reads_.push_back(std::move(read));
  }
  torch::Tensor Wait() override {
    Read read = std::move(reads_.front());
    reads_.pop_front();
    read.done.synchronize();
    spare_.push_back(std::move(read.done));
    return read.host;
  }

 private:
  struct Read {
    torch::Tensor host;
    at::cuda::CUDAEvent done;
  };
  std::deque<Read> reads_;
  std::vector<at::cuda::CUDAEvent> spare_;
};

}  // namespace

std::unique_ptr<HostReads> NewHostReads() { return std::make_unique<PinnedHostReads>(); }

bool PeerAccess(int device, int peer) {
  return at::cuda::get_p2p_access(static_cast<c10::DeviceIndex>(device),
                                  static_cast<c10::DeviceIndex>(peer));
}

std::string PciBusId(int device) {
  char id[32] = {};
  if (cudaDeviceGetPCIBusId(id, sizeof(id), device) != cudaSuccess) return "";
  return id;
}

void Versions(std::string* runtime, std::string* cudnn) {
  *runtime = absl::StrCat(CUDART_VERSION / 1000, ".", (CUDART_VERSION % 1000) / 10);
  if (!torch::cuda::is_available()) return;
  // cuDNN 9 counts major * 10000 + minor * 100 + patch; 8 and before
  // major * 1000 + minor * 100 + patch (8907 is 8.9.7).
  const long v = at::detail::getCUDAHooks().versionCuDNN();
  if (v >= 10000) {
    *cudnn = absl::StrCat(v / 10000, ".", (v / 100) % 100, ".", v % 100);
  } else if (v > 0) {
    *cudnn = absl::StrCat(v / 1000, ".", (v / 100) % 10, ".", v % 100);
  }
}

void Probe(DeviceProbe* probe) {
  probe->cuda_built = true;
  Versions(&probe->cuda_version, &probe->cudnn_version);
  if (!torch::cuda::is_available()) return;
  for (int i = 0; i < static_cast<int>(torch::cuda::device_count()); ++i) {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(i);
    DeviceProbe::Gpu gpu;
    gpu.index = i;
    gpu.name = p->name;
    gpu.memory_bytes = static_cast<int64_t>(p->totalGlobalMem);
    gpu.compute_capability = absl::StrCat(p->major, ".", p->minor);
    gpu.multiprocessor_count = p->multiProcessorCount;
    gpu.pci_bus_id = PciBusId(i);
    probe->gpus.push_back(gpu);
  }
}

#ifdef GPUBENCH_NVTX
bool NvtxBuilt() { return true; }
void RangePush(const std::string& message) { nvtxRangePushA(message.c_str()); }
void RangePushIndexed(const char* message, int64_t index) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
  a.payload.llValue = index;
  nvtxRangePushEx(&a);
}
void RangePop() { nvtxRangePop(); }
#else
bool NvtxBuilt() { return false; }
void RangePush(const std::string&) {}
void RangePushIndexed(const char*, int64_t) {}
void RangePop() {}
#endif

}  // namespace gpubench::engine::cuda
