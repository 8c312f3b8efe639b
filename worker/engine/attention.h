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

}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_ATTENTION_H_
