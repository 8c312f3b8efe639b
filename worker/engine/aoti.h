// AOTInductor's package loader where this LibTorch has one (2.6+):
// GPUBENCH_HAS_AOTI says whether it does. Includes LibTorch.
#ifndef GPUBENCH_WORKER_ENGINE_AOTI_H_
#define GPUBENCH_WORKER_ENGINE_AOTI_H_

#include "worker/engine/compat.h"

#if GPUBENCH_TORCH_AT_LEAST(2, 6) && \
    __has_include(<torch/csrc/inductor/aoti_package/model_package_loader.h>)
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#define GPUBENCH_HAS_AOTI 1
#else
#define GPUBENCH_HAS_AOTI 0
#endif

#endif  // GPUBENCH_WORKER_ENGINE_AOTI_H_
