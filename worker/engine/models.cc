#include "worker/engine/models.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/workload_defaults.h"  // IsModelWorkload
#include "worker/engine/config.h"
#include "worker/engine/model_parts.h"

namespace gpubench::engine {
namespace {

// ---------------------------------------------------------------------------
// Validation.

absl::Status CheckAtLeast(const char* field, int64_t value, int64_t min,
                          const std::string& workload) {
  if (value >= min) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("spec.base.params.", field, ": must be at least ", min,
                   " for ", workload, ", got ", value));
}

}  // namespace

torch::Tensor BenchModel::Loss(const torch::Tensor& output,
                               const torch::Tensor& labels) {
  // Also covers unet: cross_entropy takes [B, C, H, W] against [B, H, W].
  return torch::nn::functional::cross_entropy(output, labels);
}

int64_t BenchModel::ParameterCount() const { return CountParameters(*this); }

int64_t CountParameters(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const torch::Tensor& parameter : module.parameters()) {
    if (parameter.requires_grad()) count += parameter.numel();
  }
  return count;
}

absl::StatusOr<std::shared_ptr<BenchModel>> CreateModel(
    const RunConfig& config) {
  RunConfig c = config;
  ApplyWorkloadDefaults(&c);
  const std::string& w = c.workload;
  if (!IsModelWorkload(w)) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.base.workload: not a built-in model: \"", w, "\""));
  }
  // Every model has classes; image and sequence sizes where they apply.
  absl::Status status = CheckAtLeast("num_classes", c.num_classes, 1, w);
  if (!status.ok()) return status;

  if (w == "mlp") {
    std::vector<int64_t> hidden;
    if (c.model_size == "small") {
      hidden = {10};
    } else if (c.model_size == "medium") {
      hidden = {128, 128};
    } else if (c.model_size == "large") {
      hidden = {2048, 192};
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.base.params.model_size: must be small, medium or large, got \"",
          c.model_size, "\""));
    }
    status = CheckAtLeast("image_size", c.image_size, 1, w);
    if (!status.ok()) return status;
    return NewMlp(c.image_size, hidden, c.num_classes);
  }
  if (w == "simple_cnn") {
    // Two 2x2 max pools must leave at least one pixel.
    status = CheckAtLeast("image_size", c.image_size, 4, w);
    if (!status.ok()) return status;
    return NewSimpleCnn(c.image_size, c.num_classes);
  }
  if (w == "resnet18" || w == "resnet50") {
    status = CheckAtLeast("image_size", c.image_size, 1, w);
    if (!status.ok()) return status;
    return w == "resnet18"
               ? NewResNet(c.image_size, c.num_classes, false, {2, 2, 2, 2})
               : NewResNet(c.image_size, c.num_classes, true, {3, 4, 6, 3});
  }
  if (w == "unet") {
    // Four 2x2 max pools must leave at least one pixel.
    status = CheckAtLeast("image_size", c.image_size, 16, w);
    if (!status.ok()) return status;
    return NewUNet(c.image_size, c.num_classes);
  }
  status = CheckAtLeast("sequence_length", c.sequence_length, 1, w);
  if (!status.ok()) return status;
  if (w == "cnn_lstm") {
    status = CheckAtLeast("image_size", c.image_size, 1, w);
    if (!status.ok()) return status;
    return NewCnnLstm(c.sequence_length, c.image_size, c.num_classes);
  }
  status = CheckAtLeast("vocab_size", c.vocab_size, 1, w);
  if (!status.ok()) return status;
  if (w == "bilstm") {
    return NewBiLstm(c.sequence_length, c.vocab_size, c.num_classes);
  }
  // transformer
  status = CheckAtLeast("num_layers", c.num_layers, 1, w);
  if (status.ok()) status = CheckAtLeast("num_heads", c.num_heads, 1, w);
  if (status.ok()) status = CheckAtLeast("hidden_size", c.hidden_size, 1, w);
  if (!status.ok()) return status;
  if (c.hidden_size % c.num_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.base.params.hidden_size: must be a multiple of num_heads (",
        c.num_heads, "), got ", c.hidden_size));
  }
  return NewTransformer(c.sequence_length, c.num_layers, c.hidden_size, c.num_heads,
                        c.decoder, c.vocab_size, c.num_classes);
}

}  // namespace gpubench::engine
