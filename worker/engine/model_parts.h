// The built-in models' shared parts (internal to the engine): version
// compatibility, the fixed label functions, the layers and
// blocks several models use, and the factories of the model files
// (models_vision.cc, models_sequence.cc) that CreateModel calls.
#ifndef GPUBENCH_WORKER_ENGINE_MODEL_PARTS_H_
#define GPUBENCH_WORKER_ENGINE_MODEL_PARTS_H_

#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "worker/engine/models.h"

namespace gpubench::engine {

// ---------------------------------------------------------------------------
// Version compatibility.

// A Linear layer through at::linear, as Python's F.linear runs it: one
// matrix product with the bias in its epilogue. The C++ frontend's
// torch::nn::Linear, given more than two dimensions, computes matmul, then
// adds the bias in a kernel of its own (under autocast, fp32 bias into a
// bf16 product: 48 extra kernels a step in gpt 124m, 6 ms of 56 on an H100).
inline torch::Tensor Apply(const torch::nn::Linear& layer, const torch::Tensor& x) {
  return torch::linear(x, layer->weight, layer->bias);
}

// Self-attention of q, k, v [B, heads, T, head_dim], causal or under mask
// (broadcast to [B, heads, Tq, Tk]: bool, true where a query may attend, or
// added to the scores). The one place that knows which LibTorch has fused attention:
// 2.x dispatches to SDPA's kernels (flash, memory-efficient, cuDNN, math,
// as ConfigureBackends allows), which is what users of 2.x run; 1.13 has no
// at::scaled_dot_product_attention, so it gets the textbook formula.
// grouped: k and v have fewer heads, each serving heads / kv_heads queries,
// and the kernel reads them so (SDPA's enable_gqa, 2.5 on) rather than a
// copy with the heads repeated; only where AttentionKernel said it can.
inline torch::Tensor Sdpa(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, bool causal,
                               const torch::Tensor& mask = {}, bool grouped = false) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
  return at::scaled_dot_product_attention(
      q, k, v, mask.defined() ? std::optional<torch::Tensor>(mask) : std::nullopt,
      /*dropout_p=*/0.0, causal, /*scale=*/std::nullopt, grouped);
#elif TORCH_VERSION_MAJOR >= 2
  (void)grouped;
  return at::scaled_dot_product_attention(
      q, k, v, mask.defined() ? std::optional<torch::Tensor>(mask) : std::nullopt,
      /*dropout_p=*/0.0, causal);
#else
  (void)grouped;
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * scale;
  if (causal) {
    const int64_t t = q.size(-2);
    // Built per call rather than cached: the device and length can change
    // between calls, and the cost is small next to the matmuls.
    torch::Tensor future = torch::ones(
        {t, t}, torch::TensorOptions().dtype(torch::kBool).device(q.device()));
    scores = scores.masked_fill(future.triu(1),
                                -std::numeric_limits<float>::infinity());
  }
  if (mask.defined() && mask.scalar_type() == torch::kBool) {
    scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity());
  } else if (mask.defined()) {
    scores = scores + mask;
  }
  return torch::matmul(torch::softmax(scores, -1), v);
#endif
}

// The SDPA kernel LibTorch would run Sdpa's arguments on ("flash",
// "efficient", "cudnn", "math"), or "none" where the kernels allowed cannot
// run them; 1.13 names its textbook formula. grouped: asked with k and v's
// own fewer heads ("none" where this LibTorch has no grouped attention).
std::string AttentionKernel(const torch::Tensor& q, const torch::Tensor& k,
                            const torch::Tensor& v, bool causal, const torch::Tensor& mask,
                            bool grouped = false);

// ---------------------------------------------------------------------------
// Fixed label functions.

// splitmix64: the same numbers on every platform and LibTorch version, unlike
// torch's generators or the std:: distributions, so the labels of a config
// never change between builds, and drawing them leaves torch's global seed
// (which initialises the weights) untouched.
inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A [rows, cols] float matrix, uniform in [-1, 1), on the CPU.
inline torch::Tensor FixedUniform(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> values(static_cast<size_t>(rows * cols));
  uint64_t state = seed;
  for (float& value : values) {
    value = static_cast<float>(
        static_cast<double>(SplitMix64(&state) >> 40) / (1 << 24) * 2 - 1);
  }
  return torch::from_blob(values.data(), {rows, cols}, torch::kFloat).clone();
}

// [3, classes]: column c is the unit vector at angle pi/6 + 2 pi c / classes
// in the plane of colours whose channels sum to zero. Projecting a colour on
// it and taking the argmax splits the colour wheel into equal sectors, so noise
// gives balanced classes, a linear layer can learn the split, and the overall
// brightness (the component this plane leaves out) does not matter. The pi/6
// offset makes three classes exactly "the brightest channel".
inline torch::Tensor ColourWheel(int64_t num_classes) {
  constexpr double kPi = 3.14159265358979323846;
  const double u[3] = {1 / std::sqrt(2.0), -1 / std::sqrt(2.0), 0};
  const double v[3] = {1 / std::sqrt(6.0), 1 / std::sqrt(6.0),
                       -2 / std::sqrt(6.0)};
  torch::Tensor wheel = torch::empty({3, num_classes}, torch::kFloat);
  auto values = wheel.accessor<float, 2>();
  for (int64_t c = 0; c < num_classes; ++c) {
    const double angle = kPi / 6 + 2 * kPi * c / num_classes;
    for (int channel = 0; channel < 3; ++channel) {
      values[channel][c] = static_cast<float>(std::cos(angle) * u[channel] +
                                              std::sin(angle) * v[channel]);
    }
  }
  return wheel;
}

// A constant matrix that follows the inputs to their device. Moved lazily on
// the first batch so that construction stays on the CPU, as CreateModel
// promises, and not registered as a buffer so it is neither a parameter nor
// part of the model's state.
class FixedProjection {
 public:
  explicit FixedProjection(torch::Tensor cpu) : cpu_(std::move(cpu)) {}

  const torch::Tensor& On(const torch::Device& device) {
    if (!on_device_.defined() || on_device_.device() != device) {
      on_device_ = cpu_.to(device);
    }
    return on_device_;
  }

 private:
  const torch::Tensor cpu_;
  torch::Tensor on_device_;
};

// argmax over classes of features [B, F] times projection [F, C]. Written as
// an elementwise product and sum rather than a matmul because autocast would
// run a matmul in half precision, and the labels must not depend on the
// precision under test.
inline torch::Tensor ProjectArgmax(const torch::Tensor& features,
                            const torch::Tensor& projection) {
  return (features.unsqueeze(2) * projection.unsqueeze(0)).sum(1).argmax(1);
}

// Labels of float [B, 3, H, W] images: a random linear function of a 3x4x4
// thumbnail. Linear in the pixels, so every image model (even the mlp) can
// learn it; centring removes the overall brightness, which would otherwise
// push most images into the same class.
inline torch::Tensor ImageLabels(const torch::Tensor& images,
                          FixedProjection* projection) {
  torch::NoGradGuard no_grad;
  torch::Tensor features =
      torch::adaptive_avg_pool2d(images.to(torch::kFloat), {4, 4}).flatten(1);
  features = features - features.mean(1, /*keepdim=*/true);
  return ProjectArgmax(features, projection->On(images.device()));
}

// Labels of int64 [B, T] tokens: the most frequent residue of token % classes
// (ties to the lowest). It depends on every position, so the whole sequence
// has to be read, and every batch trains most of the embeddings: in a small
// trial with AdamW it began to learn within 300 steps, where the rule "first
// token modulo classes" had not.
inline torch::Tensor CountLabels(const torch::Tensor& tokens, int64_t num_classes) {
  torch::NoGradGuard no_grad;
  // A comparison with arange rather than one_hot, whose range check
  // synchronises with the device (and breaks CUDA graph capture) in some
  // versions.
  torch::Tensor residues = tokens.remainder(num_classes).unsqueeze(-1);
  return residues.eq(torch::arange(num_classes, tokens.options()))
      .sum(1)
      .argmax(1);
}

// ---------------------------------------------------------------------------
// Layers.

inline torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                       int64_t padding, bool bias) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(padding)
                               .bias(bias));
}

// conv-BN-ReLU twice, as in milesial/Pytorch-UNet.
class DoubleConv : public torch::nn::Module {
 public:
  DoubleConv(int64_t in, int64_t out)
      : conv1_(register_module("conv1", Conv(in, out, 3, 1, 1, false))),
        bn1_(register_module("bn1", torch::nn::BatchNorm2d(out))),
        conv2_(register_module("conv2", Conv(out, out, 3, 1, 1, false))),
        bn2_(register_module("bn2", torch::nn::BatchNorm2d(out))) {}

  torch::Tensor Forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1_(conv1_(x)));
    return torch::relu(bn2_(conv2_(y)));
  }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
};

// torchvision's BasicBlock (bottleneck=false) or Bottleneck (true, stride on
// the 3x3 conv as in torchvision, "ResNet v1.5").
class ResidualBlock : public torch::nn::Module {
 public:
  static int64_t Expansion(bool bottleneck) { return bottleneck ? 4 : 1; }

  ResidualBlock(int64_t in, int64_t planes, int64_t stride, bool bottleneck) {
    const int64_t out = planes * Expansion(bottleneck);
    if (bottleneck) {
      conv1_ = register_module("conv1", Conv(in, planes, 1, 1, 0, false));
      bn1_ = register_module("bn1", torch::nn::BatchNorm2d(planes));
      conv2_ =
          register_module("conv2", Conv(planes, planes, 3, stride, 1, false));
      bn2_ = register_module("bn2", torch::nn::BatchNorm2d(planes));
      conv3_ = register_module("conv3", Conv(planes, out, 1, 1, 0, false));
      bn3_ = register_module("bn3", torch::nn::BatchNorm2d(out));
    } else {
      conv1_ = register_module("conv1", Conv(in, planes, 3, stride, 1, false));
      bn1_ = register_module("bn1", torch::nn::BatchNorm2d(planes));
      conv2_ = register_module("conv2", Conv(planes, planes, 3, 1, 1, false));
      bn2_ = register_module("bn2", torch::nn::BatchNorm2d(planes));
    }
    if (stride != 1 || in != out) {
      downsample_ = register_module(
          "downsample",
          torch::nn::Sequential(Conv(in, out, 1, stride, 0, false),
                                torch::nn::BatchNorm2d(out)));
    }
  }

  torch::Tensor Forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1_(conv1_(x)));
    if (conv3_) {
      y = torch::relu(bn2_(conv2_(y)));
      y = bn3_(conv3_(y));
    } else {
      y = bn2_(conv2_(y));
    }
    return torch::relu(y + (downsample_ ? downsample_->forward(x) : x));
  }

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::BatchNorm2d bn2_{nullptr};
  torch::nn::Conv2d conv3_{nullptr};
  torch::nn::BatchNorm2d bn3_{nullptr};
  torch::nn::Sequential downsample_{nullptr};
};

// Pre-LN transformer block with fused qkv projection.
class TransformerBlock : public torch::nn::Module {
 public:
  TransformerBlock(int64_t hidden, int64_t heads, bool causal)
      : heads_(heads),
        causal_(causal),
        ln1_(register_module(
            "ln1",
            torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))),
        qkv_(register_module("qkv", torch::nn::Linear(hidden, 3 * hidden))),
        proj_(register_module("proj", torch::nn::Linear(hidden, hidden))),
        ln2_(register_module(
            "ln2",
            torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))),
        fc1_(register_module("fc1", torch::nn::Linear(hidden, 4 * hidden))),
        fc2_(register_module("fc2", torch::nn::Linear(4 * hidden, hidden))) {}

  torch::Tensor Forward(const torch::Tensor& x) {
    const int64_t batch = x.size(0);
    const int64_t time = x.size(1);
    const int64_t hidden = x.size(2);
    // [B, T, 3h] -> [3, B, heads, T, head_dim]
    torch::Tensor qkv = Apply(qkv_, ln1_(x))
                            .view({batch, time, 3, heads_, hidden / heads_})
                            .permute({2, 0, 3, 1, 4});
    if (causal_ && kernel.empty()) kernel = AttentionKernel(qkv[0], qkv[1], qkv[2], true, {});
    torch::Tensor attended = Sdpa(qkv[0], qkv[1], qkv[2], causal_)
                                 .transpose(1, 2)
                                 .reshape({batch, time, hidden});
    torch::Tensor y = x + Apply(proj_, attended);
    return y + Apply(fc2_, torch::gelu(Apply(fc1_, ln2_(y))));
  }

  // A causal block's attention kernel, from its first forward (the same
  // shapes every step); "" otherwise.
  std::string kernel;

 private:
  const int64_t heads_;
  const bool causal_;
  torch::nn::LayerNorm ln1_;
  torch::nn::Linear qkv_;
  torch::nn::Linear proj_;
  torch::nn::LayerNorm ln2_;
  torch::nn::Linear fc1_;
  torch::nn::Linear fc2_;
};

// ---------------------------------------------------------------------------
// Models.

// Shared by the image classifiers: [B, 3, S, S] in, [B, classes] out.
class ImageClassifier : public BenchModel {
 public:
  ImageClassifier(int64_t image_size, int64_t num_classes)
      : image_size_(image_size),
        projection_(FixedUniform(3 * 4 * 4, num_classes, 0x1abe15)) {}

  torch::Tensor Labels(const torch::Tensor& input) override {
    return ImageLabels(input, &projection_);
  }
  std::vector<int64_t> sample_shape() const override {
    return {3, image_size_, image_size_};
  }
  InputKind input_kind() const override { return InputKind::kImage; }

 protected:
  const int64_t image_size_;

 private:
  FixedProjection projection_;
};

// ---------------------------------------------------------------------------
// The models' engine halves, each built from a complete config (its torch-free
// half, common/workloads/NAME.cc, gave the defaults and the spec's bounds),
// listed once in CreateModel (models.cc).

using ModelOrError = absl::StatusOr<std::shared_ptr<BenchModel>>;

// models_vision.cc
ModelOrError NewMlp(const RunConfig& c);
ModelOrError NewSimpleCnn(const RunConfig& c);
ModelOrError NewResNet(const RunConfig& c);  // resnet18, resnet50
ModelOrError NewUNet(const RunConfig& c);
// models_sequence.cc
ModelOrError NewBiLstm(const RunConfig& c);
ModelOrError NewCnnLstm(const RunConfig& c);
ModelOrError NewTransformer(const RunConfig& c);
// models_lm.cc
ModelOrError NewGpt(const RunConfig& c);
ModelOrError NewLlama(const RunConfig& c);

}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_MODEL_PARTS_H_
