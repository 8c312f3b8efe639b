// The built-in models. Internal to the engine: includes LibTorch, so only the
// engine's own translation units may include it.
#ifndef GPUBENCH_WORKER_ENGINE_MODELS_H_
#define GPUBENCH_WORKER_ENGINE_MODELS_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/workload_registry.h"
#include "worker/engine/config.h"

namespace gpubench::engine {

// What kind of tensor a model eats, which decides how the host pipeline
// produces samples and whether channels_last applies.
enum class InputKind {
  kImage,   // float [B, 3, H, W]; host pipeline: uint8 image, crop, flip, normalise
  kTokens,  // int64 [B, T] in [0, vocab)
  kFrames,  // float [B, T, 3, H, W]
};

// A built-in neural network with a synthetic, learnable task.
// Not thread-safe: one run owns one model.
class BenchModel : public torch::nn::Module {
 public:
  ~BenchModel() override = default;

  // Runs the model on a batch of inputs shaped as sample_shape() with a
  // leading batch dimension.
  virtual torch::Tensor Forward(const torch::Tensor& input) = 0;

  // The training loss of Forward's output against Labels(input).
  // Default: cross-entropy over the last dimension of a [B, C] output.
  virtual torch::Tensor Loss(const torch::Tensor& output,
                             const torch::Tensor& labels);

  // Labels for a batch: a fixed, deterministic function of the input (the same
  // for every call and every run with the same config), so that a training
  // run's loss falls. Runs on the input's device, under no-grad.
  virtual torch::Tensor Labels(const torch::Tensor& input) = 0;

  // Shape of one sample, without the batch dimension.
  virtual std::vector<int64_t> sample_shape() const = 0;

  virtual InputKind input_kind() const = 0;

  // kTokens models: token ids lie in [token_low(), vocab_size()).
  virtual int64_t vocab_size() const { return 0; }
  virtual int64_t token_low() const { return 0; }

  // Trainable parameters (CountParameters of this module, unless the
  // weights live elsewhere).
  virtual int64_t ParameterCount() const;

  // Makes this copy the fp64 reference of a numerics check: weights,
  // buffers and floating-point inputs in fp64.
  virtual void ToFp64Reference() { to(torch::kFloat64); }

  // The kernel of the last causal attention over a whole sequence that ran
  // ("flash", "math"...; AttentionKernel's names); "" for a model without
  // causal attention, or before it ran.
  virtual std::string CausalAttentionKernel() const { return ""; }

  // Extra figure reported for the last batch, e.g. Dice for unet; negative
  // when the model has none.
  virtual double Metric(const torch::Tensor& /*output*/,
                        const torch::Tensor& /*labels*/) {
    return -1;
  }
};

// The cost of the built-in model c runs (ddp: its ddp_model), from the
// workload registry: parameters, forward and training FLOPs per sample. All
// zero for a workload that is not a built-in model.
ModelCost CostOf(const RunConfig& c);

// Of causal attention's full square over t positions, the share that
// `kernel` computes: all of it for the math formula (it masks after
// multiplying) and for a kernel not known; about (t+1)/2t for the flash,
// memory-efficient and cuDNN kernels, which skip the blocks above the
// diagonal.
double CausalAttentionShare(const std::string& kernel, int64_t t);

// The FLOPs per sample that c's built-in model runs, in c's mode: CostOf's,
// its causal attention counted as causal_kernel ran it.
double FlopsPerSample(const RunConfig& c, const std::string& causal_kernel);

// Builds the model named by config.workload ("mlp", "simple_cnn", "resnet18",
// "resnet50", "unet", "bilstm", "cnn_lstm", "transformer") with its
// parameters from config (model_size, image_size, num_classes,
// sequence_length, num_layers, hidden_size, num_heads, decoder, vocab_size).
// Weights are initialised from torch's current seed, on the CPU in fp32.
// Returns InvalidArgument naming the field for an unknown workload or size.
absl::StatusOr<std::shared_ptr<BenchModel>> CreateModel(const RunConfig& config);

// Number of trainable parameters.
int64_t CountParameters(const torch::nn::Module& module);

}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_MODELS_H_
