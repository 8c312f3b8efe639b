#include "worker/engine/models.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
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
#include "common/workload_registry.h"
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

ModelCost CostOf(const RunConfig& c) {
  const WorkloadInfo* info = FindWorkload(ModelWorkload(c.workload, c.ddp_model));
  if (info == nullptr || info->cost == nullptr) return {};
  ModelShape s;
  s.model_size = c.model_size;
  s.image_size = c.image_size;
  s.num_classes = c.num_classes;
  s.sequence_length = c.sequence_length;
  s.num_layers = c.num_layers;
  s.hidden_size = c.hidden_size;
  s.num_heads = c.num_heads;
  s.vocab_size = c.vocab_size;
  s.decoder = c.decoder;
  s.num_kv_heads = c.num_kv_heads;
  s.ffn_hidden_size = c.ffn_hidden_size;
  return info->cost(s);
}

double CausalAttentionShare(const std::string& kernel, int64_t t) {
  if (t <= 0 || kernel.find("math") != std::string::npos) return 1;
  for (const char* skipping : {"flash", "efficient", "cudnn"}) {
    if (kernel.find(skipping) != std::string::npos) return (t + 1.0) / (2.0 * t);
  }
  return 1;
}

double FlopsPerSample(const RunConfig& c, const std::string& causal_kernel) {
  const ModelCost cost = CostOf(c);
  const bool train = c.mode == Mode::kTrain;
  // A training step's attention is its forward square three times over
  // (cost::Work::Attention).
  const double attention = (train ? 3 : 1) * cost.attention_flops_per_sample;
  return (train ? cost.train_flops_per_sample : cost.forward_flops_per_sample) -
         attention * (1 - CausalAttentionShare(causal_kernel, c.sequence_length));
}

int64_t CountParameters(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const torch::Tensor& parameter : module.parameters()) {
    if (parameter.requires_grad()) count += parameter.numel();
  }
  return count;
}

absl::StatusOr<std::shared_ptr<BenchModel>> CreateModel(const RunConfig& c) {
  // One line per built-in model: the registry's id and its engine half.
  static const std::pair<WorkloadId, ModelOrError (*)(const RunConfig&)> kModels[] = {
      {WorkloadId::kMlp, NewMlp},           {WorkloadId::kSimpleCnn, NewSimpleCnn},
      {WorkloadId::kResnet18, NewResNet},   {WorkloadId::kResnet50, NewResNet},
      {WorkloadId::kUnet, NewUNet},         {WorkloadId::kBilstm, NewBiLstm},
      {WorkloadId::kCnnLstm, NewCnnLstm},   {WorkloadId::kTransformer, NewTransformer},
      {WorkloadId::kGpt, NewGpt},           {WorkloadId::kLlama, NewLlama}};
  const std::string& w = c.workload;
  const WorkloadInfo* info = FindWorkload(w);
  const auto* entry = std::find_if(std::begin(kModels), std::end(kModels), [info](const auto& m) {
    return info != nullptr && info->id == m.first;
  });
  if (info == nullptr || entry == std::end(kModels)) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.base.workload: not a built-in model: \"", w, "\""));
  }
  // What the sample's shape needs (the spec's bounds hold these for a
  // planned config; a config built in C++ gets the same message).
  const SampleShape shape = info->sample;
  const bool images = shape == SampleShape::kImage || shape == SampleShape::kFrames;
  const bool sequence = shape == SampleShape::kTokens || shape == SampleShape::kFrames;
  // A language model's classes are its vocabulary.
  absl::Status status = info->language_model ? absl::OkStatus()
                                             : CheckAtLeast("num_classes", c.num_classes, 1, w);
  if (status.ok() && images) {
    status = CheckAtLeast("image_size", c.image_size, std::max(1, info->min_image_size), w);
  }
  if (status.ok() && sequence) status = CheckAtLeast("sequence_length", c.sequence_length, 1, w);
  if (status.ok() && shape == SampleShape::kTokens) {
    status = CheckAtLeast("vocab_size", c.vocab_size, 1, w);
  }
  if (!status.ok()) return status;
  return entry->second(c);
}

}  // namespace gpubench::engine
