// resnet18 and resnet50: torchvision's ResNets (basic and bottleneck blocks).
#include "common/workloads/builtin.h"

namespace gpubench::workloads {
namespace {

WorkloadInfo ResNet(const char* name, const char* summary) {
  WorkloadInfo w;
  w.name = name;
  w.summary = summary;
  w.model = w.compiles = w.checks_numerics = true;
  w.sample = SampleShape::kImage;
  w.params = {"image_size", "num_classes"};
  w.defaults.image_size = 224;
  w.defaults.num_classes = 1000;
  return w;
}

}  // namespace

WorkloadInfo ResNet18() {
  return ResNet("resnet18", "ResNet-18 as torchvision builds it (11.7M parameters at 1,000 classes)");
}

WorkloadInfo ResNet50() {
  return ResNet("resnet50", "ResNet-50 as torchvision builds it (25.6M parameters at 1,000 classes)");
}

}  // namespace gpubench::workloads
