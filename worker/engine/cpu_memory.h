// The bytes in LibTorch's CPU tensors, as torch.cuda.max_memory_allocated
// gives them for a GPU: LibTorch's CPU allocator keeps no count, so a
// counting allocator stands in front of it.
#ifndef GPUBENCH_WORKER_ENGINE_CPU_MEMORY_H_
#define GPUBENCH_WORKER_ENGINE_CPU_MEMORY_H_

#include <cstdint>

namespace gpubench::engine::cpu_memory {

// Makes the counting allocator LibTorch's CPU allocator, once per process
// (later calls do nothing). Tensors allocated before keep their own deleter
// and are not counted.
void Install();

// Starts a new peak at the bytes allocated now.
void ResetPeak();

// The most bytes held in CPU tensors at once, by every thread, since
// ResetPeak; 0 before Install.
int64_t PeakBytes();

// The bytes held in CPU tensors now (counted ones).
int64_t AllocatedBytes();

}  // namespace gpubench::engine::cpu_memory

#endif  // GPUBENCH_WORKER_ENGINE_CPU_MEMORY_H_
