// copy: one memory copy, the roofline's bandwidth peak.
#include "common/workloads/builtin.h"

namespace gpubench::workloads {

WorkloadInfo Copy() {
  WorkloadInfo w;
  w.id = WorkloadId::kCopy;
  w.name = "copy";
  w.batched = false;
  w.summary = "one copy of copy_bytes, host to device, device to host or device to device: GB/s";
  w.defaults.copy_bytes = int64_t{256} << 20;
  w.defaults.copy_direction = 1;  // host to device
  return w;
}

}  // namespace gpubench::workloads
