// ddp: a built-in model trained data-parallel over world_size ranks.
#include "common/workloads/builtin.h"

namespace gpubench::workloads {

WorkloadInfo Ddp() {
  WorkloadInfo w;
  w.id = WorkloadId::kDdp;
  w.name = "ddp";
  w.summary = "ddp_model trained data-parallel over world_size ranks, gradients all-reduced in "
              "buckets while backward runs (as DistributedDataParallel)";
  w.distributed = true;
  w.infers = w.graphs = w.host_input = w.on_mps = false;
  // The model's own parameters apply too (its entry, through ModelWorkload).
  return w;
}

}  // namespace gpubench::workloads
