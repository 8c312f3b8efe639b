// simple_cnn: two convolutions with 2x2 pools and a linear classifier.
#include "common/workloads/builtin.h"

namespace gpubench::workloads {

WorkloadInfo SimpleCnn() {
  WorkloadInfo w;
  w.name = "simple_cnn";
  w.summary = "two convolutions, two 2x2 max pools and a classifier (a notebook's first CNN)";
  w.model = w.compiles = w.checks_numerics = true;
  w.sample = SampleShape::kImage;
  w.min_image_size = 4;  // two 2x2 pools leave a pixel
  w.params = {"image_size", "num_classes"};
  w.defaults.model_size = "small";  // unread; kept so that stored configs keep their keys
  w.defaults.image_size = 32;
  w.defaults.num_classes = 10;
  return w;
}

}  // namespace gpubench::workloads
