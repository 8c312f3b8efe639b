// unet: the encoder-decoder segmentation network with skip connections.
#include "common/workloads/builtin.h"

namespace gpubench::workloads {

WorkloadInfo UNet() {
  WorkloadInfo w;
  w.name = "unet";
  w.summary = "U-Net segmentation (31M parameters), per-pixel classes";
  w.model = w.compiles = w.checks_numerics = true;
  w.sample = SampleShape::kImage;
  w.min_image_size = 16;  // four 2x2 pools leave a pixel
  w.params = {"image_size", "num_classes"};
  w.defaults.image_size = 128;
  w.defaults.num_classes = 3;
  return w;
}

}  // namespace gpubench::workloads
