// Test hook shared by the engine's files: GPUBENCH_INJECT_OOM_ABOVE_BYTES
// makes any input or operand allocation above that many bytes fail the way a
// device allocator does, so tests exercise the out-of-memory paths on a CPU.
// Internal to the engine.
#ifndef GPUBENCH_WORKER_ENGINE_INJECT_H_
#define GPUBENCH_WORKER_ENGINE_INJECT_H_

#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpubench::engine {

// Throws "out of memory (injected) ..." when bytes exceeds the limit.
// Read on every call, so that a test can set and clear it between runs in
// one process. Calls come once per operand and once per input batch built
// (every step with 0 loader threads), where a getenv is small beside
// building the batch.
inline void MaybeInjectOom(int64_t bytes) {
  const char* v = std::getenv("GPUBENCH_INJECT_OOM_ABOVE_BYTES");
  int64_t limit = -1;
  if (v != nullptr && !absl::SimpleAtoi(v, &limit)) limit = -1;
  if (limit >= 0 && bytes > limit) {
    throw std::runtime_error(absl::StrCat("out of memory (injected): tried to allocate ",
                                          bytes, " bytes, limit ", limit));
  }
}

}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_INJECT_H_
