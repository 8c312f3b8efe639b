// mlp: a multilayer perceptron over flattened images.
#include "common/workloads/builtin.h"

namespace gpubench::workloads {

WorkloadInfo Mlp() {
  WorkloadInfo w;
  w.name = "mlp";
  w.summary = "multilayer perceptron on flattened images; model_size small, medium or large "
              "(about 0.03M, 0.41M, 6.7M parameters)";
  w.model = w.compiles = w.checks_numerics = true;
  w.sample = SampleShape::kImage;
  w.params = {"model_size", "image_size", "num_classes"};
  w.defaults.model_size = "small";
  w.defaults.image_size = 32;
  w.defaults.num_classes = 10;
  return w;
}

}  // namespace gpubench::workloads
