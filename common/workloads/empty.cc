// empty: an iteration that does nothing, the harness's own overhead.
#include "common/workloads/builtin.h"

namespace gpubench::workloads {

WorkloadInfo Empty() {
  WorkloadInfo w;
  w.id = WorkloadId::kEmpty;
  w.name = "empty";
  w.batched = false;
  w.summary = "an iteration with no work: what the harness itself costs per iteration";
  return w;
}

}  // namespace gpubench::workloads
