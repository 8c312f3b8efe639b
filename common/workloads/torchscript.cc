// torchscript: the user's own model, TorchScript (.pt) or AOTInductor (.pt2).
#include "common/workloads/builtin.h"

namespace gpubench::workloads {

WorkloadInfo TorchScript() {
  WorkloadInfo w;
  w.id = WorkloadId::kTorchscript;
  w.name = "torchscript";
  w.summary = "your model: a TorchScript (.pt) or AOTInductor (.pt2) file, run confined, "
              "with the input shapes you give";
  w.checks_numerics = true;
  w.sample = SampleShape::kGiven;
  return w;
}

}  // namespace gpubench::workloads
