// simple_cnn: two convolutions with 2x2 pools and a linear classifier.
#include "common/model_cost.h"
#include "common/workloads/builtin.h"

namespace gpubench::workloads {
namespace {

ModelCost SimpleCnnCost(const ModelShape& s) {
  const int64_t half = s.image_size / 2, quarter = half / 2;
  cost::Work work;
  work.Weights(cost::ConvMacs(3, 32, 3, s.image_size), /*input_gradient=*/false);
  work.Weights(cost::ConvMacs(32, 64, 3, half));
  work.Weights(64.0 * quarter * quarter * 128);
  work.Weights(128.0 * s.num_classes);
  return work.Cost(cost::ConvParams(3, 32, 3, true) + cost::ConvParams(32, 64, 3, true) +
                   cost::LinearParams(64 * quarter * quarter, 128) +
                   cost::LinearParams(128, s.num_classes));
}

}  // namespace

WorkloadInfo SimpleCnn() {
  WorkloadInfo w;
  w.id = WorkloadId::kSimpleCnn;
  w.name = "simple_cnn";
  w.summary = "two convolutions, two 2x2 max pools and a classifier (a notebook's first CNN)";
  w.architecture = "3x3 conv (32) and 2x2 max pool, 3x3 conv (64) and 2x2 max pool, linear (128), "
                   "linear classifier";
  w.cost = SimpleCnnCost;
  w.model = w.compiles = w.checks_numerics = true;
  w.sample = SampleShape::kImage;
  w.min_image_size = 4;  // two 2x2 pools leave a pixel
  w.defaults.model_size = "small";  // unread; kept so that stored configs keep their keys
  w.defaults.image_size = 32;
  w.defaults.num_classes = 10;
  return w;
}

}  // namespace gpubench::workloads
