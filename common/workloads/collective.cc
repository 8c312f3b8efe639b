// collective: one NCCL (or Gloo) collective over world_size ranks.
#include "common/workloads/builtin.h"

namespace gpubench::workloads {

WorkloadInfo Collective() {
  WorkloadInfo w;
  w.id = WorkloadId::kCollective;
  w.name = "collective";
  w.batched = false;
  w.summary = "one collective over world_size ranks (all_reduce, all_gather, reduce_scatter, "
              "broadcast): algbw and busbw as nccl-tests counts them";
  w.distributed = true;
  w.graphs = w.on_mps = false;
  w.defaults.collective_bytes = int64_t{1} << 20;
  w.defaults.collective_op = 1;  // all-reduce
  return w;
}

}  // namespace gpubench::workloads
