// mlp: a multilayer perceptron over flattened images.
#include "common/model_cost.h"
#include "common/workloads/builtin.h"

namespace gpubench {

std::vector<int64_t> cost::MlpHiddenWidths(std::string_view model_size) {
  if (model_size == "small") return {10};
  if (model_size == "medium") return {128, 128};
  if (model_size == "large") return {2048, 192};
  return {};
}

namespace workloads {
namespace {

ModelCost MlpCost(const ModelShape& s) {
  const std::vector<int64_t> hidden = cost::MlpHiddenWidths(s.model_size);
  if (hidden.empty()) return {};
  int64_t params = 0;
  cost::Work work;
  int64_t in = 3 * s.image_size * s.image_size;
  bool images = true;  // the first layer reads the images: no input gradient
  for (int64_t width : hidden) {
    params += cost::LinearParams(in, width);
    work.Weights(static_cast<double>(in) * width, /*input_gradient=*/!images);
    images = false;
    in = width;
  }
  params += cost::LinearParams(in, s.num_classes);
  work.Weights(static_cast<double>(in) * s.num_classes);
  return work.Cost(params);
}

}  // namespace

WorkloadInfo Mlp() {
  WorkloadInfo w;
  w.id = WorkloadId::kMlp;
  w.name = "mlp";
  w.summary = "multilayer perceptron on flattened images; model_size small, medium or large";
  w.architecture = "flattened pixels, ReLU linear layers of 10 (small), 128-128 (medium) or "
                   "2048-192 (large) units, linear classifier";
  w.cost = MlpCost;
  w.model = w.compiles = w.checks_numerics = true;
  w.sample = SampleShape::kImage;
  w.model_sizes = {"small", "medium", "large"};
  w.defaults.model_size = "small";
  w.defaults.image_size = 32;
  w.defaults.num_classes = 10;
  return w;
}

}  // namespace workloads
}  // namespace gpubench
