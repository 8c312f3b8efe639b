// matmul: one GEMM, C = A·B, the roofline's compute peak.
#include "common/workloads/builtin.h"

namespace gpubench::workloads {

WorkloadInfo Matmul() {
  WorkloadInfo w;
  w.id = WorkloadId::kMatmul;
  w.name = "matmul";
  w.batched = false;
  w.summary = "one matrix product M×K by K×N in the run's precision: achieved TFLOP/s";
  w.defaults.matmul_size = 4096;
  return w;
}

}  // namespace gpubench::workloads
