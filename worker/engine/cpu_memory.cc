#include "worker/engine/cpu_memory.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "worker/engine/compat.h"

namespace gpubench::engine::cpu_memory {
namespace {

// The sizes of the blocks now held, and their sum and peak. One mutex: an
// allocation costs a map insert, as LibTorch's own profiled reporter does.
struct Counts {
  std::mutex mu;
  std::unordered_map<void*, size_t> sizes;
  int64_t allocated = 0;
  int64_t peak = 0;
};

Counts& counts() {
  static Counts* c = new Counts;  // outlives every tensor freed at exit
  return *c;
}

void Free(void* data) {
  if (data == nullptr) return;
  c10::profiledCPUMemoryReporter().Delete(data);
  {
    Counts& c = counts();
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.sizes.find(data);
    if (it != c.sizes.end()) {
      c.allocated -= static_cast<int64_t>(it->second);
      c.sizes.erase(it);
    }
  }
  c10::free_cpu(data);
}

// LibTorch's default CPU allocator (aligned alloc_cpu, the profiler's
// memory events) with a count of what it holds.
class CountingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) GPUBENCH_ALLOCATE_CONST override {
    void* data = c10::alloc_cpu(n);  // nullptr for 0 bytes; throws when out of memory
    if (data != nullptr) {
      Counts& c = counts();
      std::lock_guard<std::mutex> lock(c.mu);
      c.sizes[data] = n;
      c.allocated += static_cast<int64_t>(n);
      c.peak = std::max(c.peak, c.allocated);
    }
    c10::profiledCPUMemoryReporter().New(data, n);
    return {data, data, &Free, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &Free; }

#if GPUBENCH_TORCH_AT_LEAST(2, 3)
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#endif
};

}  // namespace

void Install() {
  static CountingAllocator* allocator = [] {
    auto* a = new CountingAllocator;
    c10::SetCPUAllocator(a);
    return a;
  }();
  (void)allocator;
}

void ResetPeak() {
  Counts& c = counts();
  std::lock_guard<std::mutex> lock(c.mu);
  c.peak = c.allocated;
}

int64_t PeakBytes() {
  Counts& c = counts();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.peak;
}

int64_t AllocatedBytes() {
  Counts& c = counts();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.allocated;
}

}  // namespace gpubench::engine::cpu_memory
