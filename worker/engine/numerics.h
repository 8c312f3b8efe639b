// --check-numerics: a run's model against itself in fp64 on the CPU.
// Internal to the engine.
#ifndef GPUBENCH_WORKER_ENGINE_NUMERICS_H_
#define GPUBENCH_WORKER_ENGINE_NUMERICS_H_

#include <torch/torch.h>

#include "worker/engine/config.h"
#include "worker/engine/types.h"

namespace gpubench::engine {

// The model of run c (a fresh copy, seeded as every run is) on device in
// the run's precision and memory format, against a second copy in fp64 on
// the CPU: one forward pass on the same input, and in training the loss and
// the first parameter's gradient. At most 8 samples: the reference runs on
// the CPU in fp64.
NumericsOutcome CheckNumerics(const RunConfig& c, const torch::Device& device);

}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_NUMERICS_H_
