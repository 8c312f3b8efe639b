// resnet18 and resnet50: torchvision's ResNets (basic and bottleneck blocks).
#include "common/model_cost.h"
#include "common/workloads/builtin.h"

namespace gpubench::workloads {
namespace {

// torchvision's ResNet: blocks per stage, basic (two 3x3 convs) or
// bottleneck (1x1, 3x3 with the stride, 1x1 to 4x the planes) blocks, a 1x1
// projection where the shape changes.
ModelCost ResNetCost(const ModelShape& s, bool bottleneck, const std::vector<int64_t>& blocks) {
  using cost::ConvMacs, cost::ConvParams, cost::NormParams;
  const int64_t expansion = bottleneck ? 4 : 1;
  int64_t size = cost::ConvOutSize(s.image_size, 7, 2, 3);
  cost::Work work;
  work.Weights(ConvMacs(3, 64, 7, size), /*input_gradient=*/false);
  int64_t params = ConvParams(3, 64, 7, false) + NormParams(64);
  size = cost::ConvOutSize(size, 3, 2, 1);  // max pool
  int64_t in = 64;
  for (size_t stage = 0; stage < blocks.size(); ++stage) {
    const int64_t planes = int64_t{64} << stage, out = planes * expansion;
    for (int64_t i = 0; i < blocks[stage]; ++i) {
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      const int64_t next = cost::ConvOutSize(size, 3, stride, 1);
      if (bottleneck) {
        work.Weights(ConvMacs(in, planes, 1, size) + ConvMacs(planes, planes, 3, next) +
                     ConvMacs(planes, out, 1, next));
        params += ConvParams(in, planes, 1, false) + ConvParams(planes, planes, 3, false) +
                  ConvParams(planes, out, 1, false) + 2 * NormParams(planes) + NormParams(out);
      } else {
        work.Weights(ConvMacs(in, planes, 3, next) + ConvMacs(planes, planes, 3, next));
        params += ConvParams(in, planes, 3, false) + ConvParams(planes, planes, 3, false) +
                  2 * NormParams(planes);
      }
      if (stride != 1 || in != out) {
        work.Weights(ConvMacs(in, out, 1, next));
        params += ConvParams(in, out, 1, false) + NormParams(out);
      }
      in = out;
      size = next;
    }
  }
  work.Weights(static_cast<double>(in) * s.num_classes);
  params += cost::LinearParams(in, s.num_classes);
  return work.Cost(params);
}

ModelCost ResNet18Cost(const ModelShape& s) { return ResNetCost(s, false, {2, 2, 2, 2}); }
ModelCost ResNet50Cost(const ModelShape& s) { return ResNetCost(s, true, {3, 4, 6, 3}); }

WorkloadInfo ResNet(const char* name, const char* summary) {
  WorkloadInfo w;
  w.name = name;
  w.summary = summary;
  w.model = w.compiles = w.checks_numerics = true;
  w.sample = SampleShape::kImage;
  w.defaults.image_size = 224;
  w.defaults.num_classes = 1000;
  return w;
}

}  // namespace

WorkloadInfo ResNet18() {
  WorkloadInfo w =
      ResNet("resnet18", "ResNet-18 as torchvision builds it");
  w.id = WorkloadId::kResnet18;
  w.architecture = "7x7 conv stem and max pool, 4 stages of 2 basic blocks (two 3x3 convs, "
                   "64 to 512 channels), global average pool, linear classifier";
  w.cost = ResNet18Cost;
  return w;
}

WorkloadInfo ResNet50() {
  WorkloadInfo w =
      ResNet("resnet50", "ResNet-50 as torchvision builds it");
  w.id = WorkloadId::kResnet50;
  w.architecture = "7x7 conv stem and max pool, 3-4-6-3 bottleneck blocks (1x1, 3x3, 1x1 to "
                   "256-2048 channels), global average pool, linear classifier";
  w.cost = ResNet50Cost;
  return w;
}

}  // namespace gpubench::workloads
