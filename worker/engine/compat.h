// The one place that knows LibTorch 1.13 from 2.x (see docs/libtorch.md).
#ifndef GPUBENCH_WORKER_ENGINE_COMPAT_H_
#define GPUBENCH_WORKER_ENGINE_COMPAT_H_

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#define GPUBENCH_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||           \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if GPUBENCH_TORCH_AT_LEAST(2, 1)
#include <ATen/detail/MPSHooksInterface.h>
#include <torch/mps.h>
#endif

// c10::Allocator::allocate is const in 1.13 and not in 2.x, where
// copy_data is also to be defined (2.3 on; 1.13 and 2.11 are the two
// built here).
#if GPUBENCH_TORCH_AT_LEAST(2, 3)
#define GPUBENCH_ALLOCATE_CONST
#else
#define GPUBENCH_ALLOCATE_CONST const
#endif

namespace gpubench::engine::compat {

// Turns autocast on or off for one device type with the given dtype.
inline void SetAutocast(c10::DeviceType device, bool enabled,
                        at::ScalarType dtype) {
#if GPUBENCH_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(device, enabled);
  if (enabled) at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CPU) {
    at::autocast::set_cpu_enabled(enabled);
    if (enabled) at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    at::autocast::set_enabled(enabled);
    if (enabled) at::autocast::set_autocast_gpu_dtype(dtype);
  }
#endif
}

// Waits for queued MPS work. LibTorch before 2.1 has no C++ entry point for
// it; MPS builds (macOS wheels) are all newer, and 1.13 here is Linux-only.
inline void MpsSynchronize() {
#if GPUBENCH_TORCH_AT_LEAST(2, 1)
  torch::mps::synchronize();
#endif
}

// MPS memory the allocator holds for tensors, and what the driver holds in
// all; 0 where LibTorch has no MPS hooks for it (before 2.1).
inline void MpsMemory(int64_t* allocated_bytes, int64_t* driver_bytes) {
#if GPUBENCH_TORCH_AT_LEAST(2, 1)
  *allocated_bytes = static_cast<int64_t>(at::detail::getMPSHooks().getCurrentAllocatedMemory());
  *driver_bytes = static_cast<int64_t>(at::detail::getMPSHooks().getDriverAllocatedMemory());
#else
  *allocated_bytes = 0;
  *driver_bytes = 0;
#endif
}

}  // namespace gpubench::engine::compat

#endif  // GPUBENCH_WORKER_ENGINE_COMPAT_H_
