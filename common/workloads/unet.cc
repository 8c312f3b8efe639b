// unet: the encoder-decoder segmentation network with skip connections.
#include "common/model_cost.h"
#include "common/workloads/builtin.h"

namespace gpubench::workloads {
namespace {

// conv-BN-ReLU twice: its parameters, and its MACs at side size.
int64_t DoubleConvParams(int64_t in, int64_t out) {
  return cost::ConvParams(in, out, 3, false) + cost::ConvParams(out, out, 3, false) +
         2 * cost::NormParams(out);
}
double DoubleConvMacs(int64_t in, int64_t out, int64_t size) {
  return cost::ConvMacs(in, out, 3, size) + cost::ConvMacs(out, out, 3, size);
}

// milesial/Pytorch-UNet, bilinear=false: widths 64 to 1024 down, 2x2
// stride-2 transposed convs up, a 1x1 conv to the classes.
ModelCost UNetCost(const ModelShape& s) {
  const int64_t widths[] = {64, 128, 256, 512, 1024};
  int64_t sizes[5] = {s.image_size};
  for (int i = 1; i < 5; ++i) sizes[i] = sizes[i - 1] / 2;
  cost::Work work;
  // The first conv reads the images: no input gradient.
  work.Weights(cost::ConvMacs(3, widths[0], 3, sizes[0]), /*input_gradient=*/false);
  work.Weights(cost::ConvMacs(widths[0], widths[0], 3, sizes[0]));
  int64_t params = DoubleConvParams(3, widths[0]);
  for (int i = 1; i < 5; ++i) {
    work.Weights(DoubleConvMacs(widths[i - 1], widths[i], sizes[i]));
    params += DoubleConvParams(widths[i - 1], widths[i]);
  }
  for (int i = 4; i > 0; --i) {
    // A 2x2 stride-2 transposed conv: every input pixel feeds 4 outputs.
    work.Weights(4.0 * widths[i] * (widths[i] / 2) * sizes[i] * sizes[i]);
    params += cost::ConvParams(widths[i], widths[i] / 2, 2, true);
    work.Weights(DoubleConvMacs(widths[i], widths[i - 1], sizes[i - 1]));
    params += DoubleConvParams(widths[i], widths[i - 1]);
  }
  work.Weights(cost::ConvMacs(widths[0], s.num_classes, 1, s.image_size));
  params += cost::ConvParams(widths[0], s.num_classes, 1, true);
  return work.Cost(params);
}

}  // namespace

WorkloadInfo UNet() {
  WorkloadInfo w;
  w.id = WorkloadId::kUnet;
  w.name = "unet";
  w.summary = "U-Net segmentation (milesial/Pytorch-UNet), per-pixel classes";
  w.architecture = "4 downsampling double 3x3 conv blocks (64 to 1024 channels), 4 upsampling "
                   "ones with 2x2 transposed convs and skip connections, 1x1 conv to the classes";
  w.cost = UNetCost;
  w.model = w.compiles = w.checks_numerics = true;
  w.sample = SampleShape::kImage;
  w.min_image_size = 16;  // four 2x2 pools leave a pixel
  w.defaults.image_size = 128;
  w.defaults.num_classes = 3;
  return w;
}

}  // namespace gpubench::workloads
