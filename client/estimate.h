// What each run of a spec will cost, before it runs (`gpubench spec`): a
// built-in model's parameters, its FLOPs per step, and the memory of its
// weights, gradients and optimizer state; a kernel's work per step. From the
// workload registry's architectures alone (common/workload_registry.h), not
// from a measurement.
#ifndef GPUBENCH_CLIENT_ESTIMATE_H_
#define GPUBENCH_CLIENT_ESTIMATE_H_

#include <string>
#include <vector>

#include "client/output.h"
#include "gpubench/v1/spec.pb.h"

namespace gpubench::client {

// "11.7M", "0.03M", "25.6M".
std::string Millions(int64_t count);

// "3.64 GFLOP", "312.5 MFLOP", "1.10 TFLOP".
std::string FlopCount(double flops);

// A row per run (defaults filled, as ExpandSweep gives them): "#", "config",
// "parameters", "forward a sample", "work a step", "model state". A step
// trains at about 3x the forward's FLOPs (forward, and backward's two
// products); a ddp step is each rank's. Model state is the fp32 weights (half
// precision for a compiled fp16/bf16 model), plus in training their
// gradients and the optimizer's state (SGD's momentum, AdamW's two moments).
// "-" where the figure does not apply.
Table EstimateTable(const std::vector<v1::RunConfig>& runs);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_ESTIMATE_H_
