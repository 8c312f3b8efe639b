#include "client/estimate.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/spec.h"
#include "common/workload_registry.h"
#include "report/facets.h"
#include "report/format.h"

namespace gpubench::client {
namespace {

// Bytes a parameter holds for the run: its weight, and in training its
// gradient and optimizer state.
int64_t BytesPerParameter(const v1::RunConfig& c) {
  const bool compiled_half =
      (c.execution() == v1::EXECUTION_AOT || c.execution() == v1::EXECUTION_AOT_CUDA_GRAPH) &&
      (c.precision() == v1::PRECISION_FP16 || c.precision() == v1::PRECISION_BF16);
  if (c.mode() != v1::MODE_TRAIN) return compiled_half ? 2 : 4;
  return c.optimizer() == v1::OPTIMIZER_ADAMW ? 16 : 12;  // weight, gradient, state
}

// A kernel's work a step: matmul's FLOPs, copy's bytes; "-" for the others.
std::string KernelWork(const v1::RunConfig& c) {
  const v1::WorkloadParams& p = c.params();
  if (IsWorkload(c.workload(), WorkloadId::kMatmul)) {
    return FlopCount(2.0 * p.matmul_m() * p.matmul_n() * p.matmul_k());
  }
  if (IsWorkload(c.workload(), WorkloadId::kCopy)) return absl::StrCat(report::Bytes(p.copy_bytes()), " copied");
  return "-";
}

}  // namespace

std::string Millions(int64_t count) {
  return count >= 100e6 ? absl::StrFormat("%.0fM", count / 1e6)
         : count >= 1e6 ? absl::StrFormat("%.1fM", count / 1e6)
                        : absl::StrFormat("%.2fM", count / 1e6);
}

std::string FlopCount(double flops) {
  if (flops >= 1e12) return absl::StrFormat("%.2f TFLOP", flops / 1e12);
  if (flops >= 1e9) return absl::StrFormat("%.2f GFLOP", flops / 1e9);
  if (flops >= 1e6) return absl::StrFormat("%.1f MFLOP", flops / 1e6);
  return absl::StrFormat("%.1f kFLOP", flops / 1e3);
}

Table EstimateTable(const std::vector<v1::RunConfig>& runs) {
  Table t;
  t.header = {"#", "config", "parameters", "forward a sample", "work a step", "model state"};
  for (size_t i = 0; i < runs.size(); ++i) {
    const v1::RunConfig& c = runs[i];
    const ModelCost cost = CostOf(c);
    std::vector<std::string> row = {absl::StrCat(i), report::DescribeConfig(c)};
    if (cost.parameters > 0) {
      const double forward = cost.forward_flops_per_sample;
      const double step = c.batch_size() * (c.mode() != v1::MODE_TRAIN
                                                ? forward
                                                : cost.train_flops_per_sample);
      row.insert(row.end(),
                 {Millions(cost.parameters), FlopCount(forward), FlopCount(step),
                  report::Bytes(cost.parameters * BytesPerParameter(c))});
    } else {
      row.insert(row.end(), {"-", "-", KernelWork(c), "-"});
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace gpubench::client
