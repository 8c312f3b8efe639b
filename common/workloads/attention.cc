// attention: one causal scaled-dot-product attention forward, the kernel
// that decides transformer speed, alone (the fleet probe's attention).
#include "common/workloads/builtin.h"

namespace gpubench::workloads {

WorkloadInfo Attention() {
  WorkloadInfo w;
  w.id = WorkloadId::kAttention;
  w.name = "attention";
  w.summary = "one causal attention forward (SDPA) over batch x num_heads x sequence_length, "
              "head size hidden_size / num_heads: achieved TFLOP/s";
  w.trains = false;
  w.host_input = false;
  w.attends = true;
  w.sample = SampleShape::kTokens;
  w.defaults.sequence_length = 2048;
  w.defaults.hidden_size = 2048;  // 16 heads of 128
  w.defaults.num_heads = 16;
  return w;
}

}  // namespace gpubench::workloads
