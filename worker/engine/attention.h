// Which kernel computes scaled-dot-product attention: the run's choice, set
// for the process through SDPA's switches (as torch.backends.cuda's
// enable_flash_sdp and its siblings set them), and the name of the kernel
// LibTorch picks for given arguments (model_parts.h's AttentionKernel).
#ifndef GPUBENCH_WORKER_ENGINE_ATTENTION_H_
#define GPUBENCH_WORKER_ENGINE_ATTENTION_H_

#include "absl/status/status.h"
#include "worker/engine/config.h"

namespace gpubench::engine {

// Allows only the kernel a names, or LibTorch's own defaults for auto.
// FailedPrecondition where this LibTorch has no such kernel (1.13 has no
// SDPA at all: only its textbook formula, "math").
absl::Status SelectAttention(Attention a);

// Within its scope, auto (a) may not pick cuDNN's kernel; any other choice
// is left as it is. For a serving run's prefill, whose prompts come in many
// lengths: cuDNN's SDPA builds a graph for each new shape (llama 1b,
// prompts of 256 to 4,096 tokens: TTFT p50 81 ms with it, 19.6 ms without,
// on an H200: bench/results/2026-11-29-h200-serve-attention.txt), while
// its decode step, of one shape, is the fastest there.
class NoCudnnAttention {
 public:
  explicit NoCudnnAttention(Attention a);
  ~NoCudnnAttention();
  NoCudnnAttention(const NoCudnnAttention&) = delete;
  NoCudnnAttention& operator=(const NoCudnnAttention&) = delete;

 private:
  bool restore_ = false;
};

}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_ATTENTION_H_
