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

namespace gpubench::engine {
namespace {

// ---------------------------------------------------------------------------
// Version compatibility.

// Self-attention of q, k, v [B, heads, T, head_dim]. The one place that knows
// which LibTorch has fused attention: 2.x dispatches to flash or
// memory-efficient kernels, which is what users of 2.x run; 1.13 has no
// at::scaled_dot_product_attention, so it gets the textbook formula.
inline torch::Tensor Attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, bool causal) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{},
                                          /*dropout_p=*/0.0, causal);
#else
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
  return torch::matmul(torch::softmax(scores, -1), v);
#endif
}

// ---------------------------------------------------------------------------
// Fixed label functions.

// splitmix64: the same numbers on every platform and LibTorch version, unlike
// torch's generators or the std:: distributions, so the labels of a config
// never change between builds, and drawing them leaves torch's global seed
// (which initialises the weights) untouched.
uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A [rows, cols] float matrix, uniform in [-1, 1), on the CPU.
torch::Tensor FixedUniform(int64_t rows, int64_t cols, uint64_t seed) {
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
torch::Tensor ColourWheel(int64_t num_classes) {
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
torch::Tensor ProjectArgmax(const torch::Tensor& features,
                            const torch::Tensor& projection) {
  return (features.unsqueeze(2) * projection.unsqueeze(0)).sum(1).argmax(1);
}

// Labels of float [B, 3, H, W] images: a random linear function of a 3x4x4
// thumbnail. Linear in the pixels, so every image model (even the mlp) can
// learn it; centring removes the overall brightness, which would otherwise
// push most images into the same class.
torch::Tensor ImageLabels(const torch::Tensor& images,
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
torch::Tensor CountLabels(const torch::Tensor& tokens, int64_t num_classes) {
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
// FLOP counting. MACs, doubled by the models.

int64_t ConvOutSize(int64_t in, int64_t kernel, int64_t stride,
                    int64_t padding) {
  return (in + 2 * padding - kernel) / stride + 1;
}

double ConvMacs(int64_t in_channels, int64_t out_channels, int64_t kernel,
                int64_t out_size) {
  return static_cast<double>(in_channels) * out_channels * kernel * kernel *
         out_size * out_size;
}

// Per time step of one direction of one LSTM layer: four gates, each a matmul
// of the input and one of the hidden state.
double LstmStepMacs(int64_t input_size, int64_t hidden_size) {
  return 4.0 * hidden_size * (input_size + hidden_size);
}

// ---------------------------------------------------------------------------
// Layers.

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel, int64_t stride,
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

  static double Macs(int64_t in, int64_t out, int64_t size) {
    return ConvMacs(in, out, 3, size) + ConvMacs(out, out, 3, size);
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

  // MACs for an input of side in_size; *out_size receives the output side.
  static double Macs(int64_t in, int64_t planes, int64_t stride,
                     bool bottleneck, int64_t in_size, int64_t* out_size) {
    const int64_t out = planes * Expansion(bottleneck);
    const int64_t size = ConvOutSize(in_size, 3, stride, 1);
    double macs;
    if (bottleneck) {
      macs = ConvMacs(in, planes, 1, in_size) +
             ConvMacs(planes, planes, 3, size) + ConvMacs(planes, out, 1, size);
    } else {
      macs = ConvMacs(in, planes, 3, size) + ConvMacs(planes, planes, 3, size);
    }
    if (stride != 1 || in != out) macs += ConvMacs(in, out, 1, size);
    *out_size = size;
    return macs;
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
    torch::Tensor qkv = qkv_(ln1_(x))
                            .view({batch, time, 3, heads_, hidden / heads_})
                            .permute({2, 0, 3, 1, 4});
    torch::Tensor attended = Attention(qkv[0], qkv[1], qkv[2], causal_)
                                 .transpose(1, 2)
                                 .reshape({batch, time, hidden});
    torch::Tensor y = x + proj_(attended);
    return y + fc2_(torch::gelu(fc1_(ln2_(y))));
  }

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

class Mlp : public ImageClassifier {
 public:
  Mlp(int64_t image_size, const std::vector<int64_t>& hidden,
      int64_t num_classes)
      : ImageClassifier(image_size, num_classes) {
    int64_t in = 3 * image_size * image_size;
    for (size_t i = 0; i < hidden.size(); ++i) {
      layers_.push_back(register_module(absl::StrCat("fc", i),
                                        torch::nn::Linear(in, hidden[i])));
      macs_ += static_cast<double>(in) * hidden[i];
      in = hidden[i];
    }
    out_ = register_module("out", torch::nn::Linear(in, num_classes));
    macs_ += static_cast<double>(in) * num_classes;
  }

  torch::Tensor Forward(const torch::Tensor& input) override {
    torch::Tensor x = input.flatten(1);
    for (torch::nn::Linear& layer : layers_) x = torch::relu(layer(x));
    return out_(x);
  }
  double ForwardFlopsPerSample() const override { return 2 * macs_; }

 private:
  std::vector<torch::nn::Linear> layers_;
  torch::nn::Linear out_{nullptr};
  double macs_ = 0;
};

class SimpleCnn : public ImageClassifier {
 public:
  SimpleCnn(int64_t image_size, int64_t num_classes)
      : ImageClassifier(image_size, num_classes),
        conv1_(register_module("conv1", Conv(3, 32, 3, 1, 1, true))),
        conv2_(register_module("conv2", Conv(32, 64, 3, 1, 1, true))),
        fc1_(register_module(
            "fc1",
            torch::nn::Linear(64 * (image_size / 4) * (image_size / 4), 128))),
        fc2_(register_module("fc2", torch::nn::Linear(128, num_classes))) {
    const int64_t half = image_size / 2;
    const int64_t quarter = half / 2;
    macs_ = ConvMacs(3, 32, 3, image_size) + ConvMacs(32, 64, 3, half) +
            64.0 * quarter * quarter * 128 + 128.0 * num_classes;
  }

  torch::Tensor Forward(const torch::Tensor& input) override {
    torch::Tensor x = torch::max_pool2d(torch::relu(conv1_(input)), {2, 2});
    x = torch::max_pool2d(torch::relu(conv2_(x)), {2, 2});
    return fc2_(torch::relu(fc1_(x.flatten(1))));
  }
  double ForwardFlopsPerSample() const override { return 2 * macs_; }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::Conv2d conv2_;
  torch::nn::Linear fc1_;
  torch::nn::Linear fc2_;
  double macs_ = 0;
};

// torchvision's resnet18 / resnet50, module names included.
class ResNet : public ImageClassifier {
 public:
  ResNet(int64_t image_size, int64_t num_classes, bool bottleneck,
         const std::vector<int64_t>& blocks_per_stage)
      : ImageClassifier(image_size, num_classes),
        conv1_(register_module("conv1", Conv(3, 64, 7, 2, 3, false))),
        bn1_(register_module("bn1", torch::nn::BatchNorm2d(64))) {
    int64_t size = ConvOutSize(image_size, 7, 2, 3);
    macs_ = ConvMacs(3, 64, 7, size);
    size = ConvOutSize(size, 3, 2, 1);  // max pool
    int64_t in = 64;
    for (size_t stage = 0; stage < blocks_per_stage.size(); ++stage) {
      const int64_t planes = int64_t{64} << stage;
      auto list = register_module(absl::StrCat("layer", stage + 1),
                                  torch::nn::ModuleList());
      for (int64_t i = 0; i < blocks_per_stage[stage]; ++i) {
        const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
        auto block =
            std::make_shared<ResidualBlock>(in, planes, stride, bottleneck);
        list->push_back(block);
        blocks_.push_back(block);
        macs_ +=
            ResidualBlock::Macs(in, planes, stride, bottleneck, size, &size);
        in = planes * ResidualBlock::Expansion(bottleneck);
      }
    }
    fc_ = register_module("fc", torch::nn::Linear(in, num_classes));
    macs_ += static_cast<double>(in) * num_classes;

    // torchvision's initialisation; BatchNorm already starts at weight 1,
    // bias 0, and the fc keeps the default Linear init, as in torchvision.
    for (const auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut,
                                         torch::kReLU);
      }
    }
  }

  torch::Tensor Forward(const torch::Tensor& input) override {
    torch::Tensor x = torch::relu(bn1_(conv1_(input)));
    x = torch::max_pool2d(x, {3, 3}, {2, 2}, {1, 1});
    for (const auto& block : blocks_) x = block->Forward(x);
    return fc_(torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1));
  }
  double ForwardFlopsPerSample() const override { return 2 * macs_; }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  std::vector<std::shared_ptr<ResidualBlock>> blocks_;
  torch::nn::Linear fc_{nullptr};
  double macs_ = 0;
};

// One decoder step of the UNet: upsample, concatenate the skip, DoubleConv.
class UpBlock : public torch::nn::Module {
 public:
  UpBlock(int64_t in, int64_t out)
      : up_(register_module(
            "up",
            torch::nn::ConvTranspose2d(
                torch::nn::ConvTranspose2dOptions(in, in / 2, 2).stride(2)))),
        conv_(register_module("conv", std::make_shared<DoubleConv>(in, out))) {}

  torch::Tensor Forward(const torch::Tensor& below, const torch::Tensor& skip) {
    torch::Tensor x = up_(below);
    // Sides that are not multiples of 16 lose a pixel to a max pool on the way
    // down; pad back to the skip's size as milesial's UNet does.
    const int64_t dy = skip.size(2) - x.size(2);
    const int64_t dx = skip.size(3) - x.size(3);
    if (dx != 0 || dy != 0) {
      x = torch::constant_pad_nd(x, {dx / 2, dx - dx / 2, dy / 2, dy - dy / 2});
    }
    return conv_->Forward(torch::cat({skip, x}, 1));
  }

 private:
  torch::nn::ConvTranspose2d up_;
  std::shared_ptr<DoubleConv> conv_;
};

// milesial/Pytorch-UNet with bilinear=false: segments [B, 3, S, S] images into
// per-pixel classes [B, C, S, S].
class UNet : public BenchModel {
 public:
  UNet(int64_t image_size, int64_t num_classes)
      : image_size_(image_size),
        num_classes_(num_classes),
        projection_(ColourWheel(num_classes)) {
    const int64_t widths[] = {64, 128, 256, 512, 1024};
    downs_.push_back(
        register_module("inc", std::make_shared<DoubleConv>(3, widths[0])));
    for (int i = 1; i < 5; ++i) {
      downs_.push_back(register_module(
          absl::StrCat("down", i),
          std::make_shared<DoubleConv>(widths[i - 1], widths[i])));
    }
    for (int i = 4; i > 0; --i) {
      ups_.push_back(
          register_module(absl::StrCat("up", 5 - i),
                          std::make_shared<UpBlock>(widths[i], widths[i - 1])));
    }
    outc_ =
        register_module("outc", Conv(widths[0], num_classes, 1, 1, 0, true));

    int64_t sizes[5] = {image_size};
    for (int i = 1; i < 5; ++i) sizes[i] = sizes[i - 1] / 2;
    macs_ = DoubleConv::Macs(3, widths[0], sizes[0]);
    for (int i = 1; i < 5; ++i) {
      macs_ += DoubleConv::Macs(widths[i - 1], widths[i], sizes[i]);
    }
    for (int i = 4; i > 0; --i) {
      // A 2x2 stride-2 transposed conv: every input pixel feeds 4 outputs.
      macs_ += 4.0 * widths[i] * (widths[i] / 2) * sizes[i] * sizes[i];
      macs_ += DoubleConv::Macs(widths[i], widths[i - 1], sizes[i - 1]);
    }
    macs_ += ConvMacs(widths[0], num_classes, 1, image_size);
  }

  torch::Tensor Forward(const torch::Tensor& input) override {
    std::vector<torch::Tensor> skips;
    torch::Tensor x = downs_[0]->Forward(input);
    for (size_t i = 1; i < downs_.size(); ++i) {
      skips.push_back(x);
      x = downs_[i]->Forward(torch::max_pool2d(x, {2, 2}));
    }
    for (size_t i = 0; i < ups_.size(); ++i) {
      x = ups_[i]->Forward(x, skips[skips.size() - 1 - i]);
    }
    return outc_(x);
  }

  // Each pixel's class is its sector of the colour wheel (for three classes:
  // its brightest channel), which a per-pixel model can learn.
  torch::Tensor Labels(const torch::Tensor& input) override {
    torch::NoGradGuard no_grad;
    torch::Tensor pixels = input.to(torch::kFloat);
    const torch::Tensor& w = projection_.On(input.device());
    // Elementwise, not a matmul, for the autocast reason of ProjectArgmax.
    torch::Tensor logits;
    for (int64_t channel = 0; channel < 3; ++channel) {
      torch::Tensor term = pixels.select(1, channel).unsqueeze(1) *
                           w[channel].view({1, num_classes_, 1, 1});
      logits = logits.defined() ? logits + term : term;
    }
    return logits.argmax(1);
  }

  // Mean Dice over the classes present in the prediction or the labels.
  double Metric(const torch::Tensor& output,
                const torch::Tensor& labels) override {
    torch::NoGradGuard no_grad;
    // One confusion matrix and one copy to the host, rather than a sync per
    // class.
    torch::Tensor confusion =
        torch::bincount((output.argmax(1) * num_classes_ + labels).flatten(),
                        /*weights=*/{}, num_classes_ * num_classes_)
            .view({num_classes_, num_classes_})
            .to(torch::kCPU, torch::kDouble);
    auto counts = confusion.accessor<double, 2>();
    double dice_sum = 0;
    int64_t present = 0;
    for (int64_t c = 0; c < num_classes_; ++c) {
      double predicted = 0;
      double actual = 0;
      for (int64_t other = 0; other < num_classes_; ++other) {
        predicted += counts[c][other];
        actual += counts[other][c];
      }
      if (predicted + actual == 0) continue;
      dice_sum += 2 * counts[c][c] / (predicted + actual);
      ++present;
    }
    return present == 0 ? 1.0 : dice_sum / present;
  }

  std::vector<int64_t> sample_shape() const override {
    return {3, image_size_, image_size_};
  }
  InputKind input_kind() const override { return InputKind::kImage; }
  double ForwardFlopsPerSample() const override { return 2 * macs_; }

 private:
  const int64_t image_size_;
  const int64_t num_classes_;
  FixedProjection projection_;
  std::vector<std::shared_ptr<DoubleConv>> downs_;  // inc, down1..down4
  std::vector<std::shared_ptr<UpBlock>> ups_;       // up1..up4
  torch::nn::Conv2d outc_{nullptr};
  double macs_ = 0;
};

class BiLstm : public BenchModel {
 public:
  static constexpr int64_t kEmbedding = 128;
  static constexpr int64_t kHidden = 256;
  static constexpr int64_t kLayers = 2;

  BiLstm(int64_t sequence_length, int64_t vocab_size, int64_t num_classes)
      : sequence_length_(sequence_length),
        vocab_size_(vocab_size),
        num_classes_(num_classes),
        embedding_(register_module(
            "embedding", torch::nn::Embedding(vocab_size, kEmbedding))),
        lstm_(register_module(
            "lstm", torch::nn::LSTM(torch::nn::LSTMOptions(kEmbedding, kHidden)
                                        .num_layers(kLayers)
                                        .bidirectional(true)
                                        .batch_first(true)))),
        fc_(register_module("fc",
                            torch::nn::Linear(2 * kHidden, num_classes))) {}

  torch::Tensor Forward(const torch::Tensor& input) override {
    // h_n is [layers * 2, B, hidden], forward then backward per layer: the
    // last two are the top layer's final states, after the whole sequence in
    // each direction.
    torch::Tensor final_states =
        std::get<0>(std::get<1>(lstm_->forward(embedding_(input))));
    return fc_(torch::cat({final_states[-2], final_states[-1]}, 1));
  }

  // The first token modulo the classes. The backward direction reads it last,
  // so the task is quickly learnt; a rule counting tokens over the sequence
  // barely learnt in a few hundred SGD steps at lr 0.01.
  torch::Tensor Labels(const torch::Tensor& input) override {
    torch::NoGradGuard no_grad;
    return input.select(1, 0).remainder(num_classes_);
  }
  std::vector<int64_t> sample_shape() const override {
    return {sequence_length_};
  }
  InputKind input_kind() const override { return InputKind::kTokens; }
  int64_t vocab_size() const override { return vocab_size_; }
  double ForwardFlopsPerSample() const override {
    const double macs = 2.0 * sequence_length_ *
                            (LstmStepMacs(kEmbedding, kHidden) +
                             LstmStepMacs(2 * kHidden, kHidden)) +
                        2.0 * kHidden * num_classes_;
    return 2 * macs;
  }

 private:
  const int64_t sequence_length_;
  const int64_t vocab_size_;
  const int64_t num_classes_;
  torch::nn::Embedding embedding_;
  torch::nn::LSTM lstm_;
  torch::nn::Linear fc_;
};

// A per-frame CNN feeding an LSTM: classifies [B, T, 3, S, S] clips.
class CnnLstm : public BenchModel {
 public:
  static constexpr int64_t kWidths[] = {3, 32, 64, 128};
  static constexpr int64_t kHidden = 256;

  CnnLstm(int64_t sequence_length, int64_t image_size, int64_t num_classes)
      : sequence_length_(sequence_length),
        image_size_(image_size),
        num_classes_(num_classes),
        projection_(ColourWheel(num_classes)) {
    for (int i = 0; i < 3; ++i) {
      convs_.push_back(
          register_module(absl::StrCat("conv", i + 1),
                          Conv(kWidths[i], kWidths[i + 1], 3, 2, 1, false)));
      bns_.push_back(register_module(absl::StrCat("bn", i + 1),
                                     torch::nn::BatchNorm2d(kWidths[i + 1])));
    }
    lstm_ = register_module(
        "lstm",
        torch::nn::LSTM(
            torch::nn::LSTMOptions(kWidths[3], kHidden).batch_first(true)));
    fc_ = register_module("fc", torch::nn::Linear(kHidden, num_classes));
  }

  torch::Tensor Forward(const torch::Tensor& input) override {
    const int64_t batch = input.size(0);
    const int64_t time = input.size(1);
    torch::Tensor x = input.flatten(0, 1);  // frames as one big batch
    for (size_t i = 0; i < convs_.size(); ++i) {
      x = torch::relu(bns_[i](convs_[i](x)));
    }
    x = x.mean({2, 3}).view({batch, time, kWidths[3]});
    torch::Tensor outputs = std::get<0>(lstm_->forward(x));
    return fc_(outputs.select(1, time - 1));
  }

  // The clip's mean colour's sector of the colour wheel: the frame CNN's
  // global pooling keeps the colour, and the LSTM has to average it over
  // time. On noise the mean varies little, so this learns slowly with plain
  // SGD; AdamW learns it within a few hundred steps.
  torch::Tensor Labels(const torch::Tensor& input) override {
    torch::NoGradGuard no_grad;
    torch::Tensor colour = input.to(torch::kFloat).mean({1, 3, 4});  // [B, 3]
    return ProjectArgmax(colour, projection_.On(input.device()));
  }

  std::vector<int64_t> sample_shape() const override {
    return {sequence_length_, 3, image_size_, image_size_};
  }
  InputKind input_kind() const override { return InputKind::kFrames; }
  double ForwardFlopsPerSample() const override {
    double frame_macs = 0;
    int64_t size = image_size_;
    for (int i = 0; i < 3; ++i) {
      size = ConvOutSize(size, 3, 2, 1);
      frame_macs += ConvMacs(kWidths[i], kWidths[i + 1], 3, size);
    }
    const double macs =
        sequence_length_ * (frame_macs + LstmStepMacs(kWidths[3], kHidden)) +
        static_cast<double>(kHidden) * num_classes_;
    return 2 * macs;
  }

 private:
  const int64_t sequence_length_;
  const int64_t image_size_;
  const int64_t num_classes_;
  FixedProjection projection_;
  std::vector<torch::nn::Conv2d> convs_;
  std::vector<torch::nn::BatchNorm2d> bns_;
  torch::nn::LSTM lstm_{nullptr};
  torch::nn::Linear fc_{nullptr};
};

// GPT-style pre-LN stack. Encoder: mean-pooled classifier over the sequence.
// Decoder: causal language model.
class Transformer : public BenchModel {
 public:
  Transformer(int64_t sequence_length, int64_t num_layers, int64_t hidden,
              int64_t heads, bool decoder, int64_t vocab_size,
              int64_t num_classes)
      : sequence_length_(sequence_length),
        num_layers_(num_layers),
        hidden_(hidden),
        decoder_(decoder),
        vocab_size_(vocab_size),
        num_classes_(num_classes),
        embedding_(register_module("embedding",
                                   torch::nn::Embedding(vocab_size, hidden))),
        // GPT-2's 0.02 scale, so positions do not drown the tokens.
        positions_(register_parameter(
            "positions", torch::randn({sequence_length, hidden}) * 0.02)) {
    for (int64_t i = 0; i < num_layers; ++i) {
      blocks_.push_back(register_module(
          absl::StrCat("block", i),
          std::make_shared<TransformerBlock>(hidden, heads, decoder)));
    }
    final_norm_ = register_module(
        "final_norm",
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
    head_ = register_module(
        "head", torch::nn::Linear(hidden, decoder ? vocab_size : num_classes));
  }

  torch::Tensor Forward(const torch::Tensor& input) override {
    const int64_t time = input.size(1);
    torch::Tensor x = embedding_(input) + positions_.slice(0, 0, time);
    for (const auto& block : blocks_) x = block->Forward(x);
    x = final_norm_(x);
    return decoder_ ? head_(x) : head_(x.mean(1));
  }

  torch::Tensor Loss(const torch::Tensor& output,
                     const torch::Tensor& labels) override {
    if (!decoder_) return BenchModel::Loss(output, labels);
    return torch::nn::functional::cross_entropy(
        output.reshape({-1, output.size(-1)}), labels.reshape({-1}));
  }

  // Decoder: each position's target is its token plus one, a mapping the LM
  // head can learn. Encoder: see CountLabels.
  torch::Tensor Labels(const torch::Tensor& input) override {
    torch::NoGradGuard no_grad;
    if (decoder_) return (input + 1).remainder(vocab_size_);
    return CountLabels(input, num_classes_);
  }

  std::vector<int64_t> sample_shape() const override {
    return {sequence_length_};
  }
  InputKind input_kind() const override { return InputKind::kTokens; }
  int64_t vocab_size() const override { return vocab_size_; }
  double ForwardFlopsPerSample() const override {
    const double t = static_cast<double>(sequence_length_);
    const double h = static_cast<double>(hidden_);
    // Per token and layer: qkv 3h^2, out projection h^2, MLP 8h^2, and the
    // two attention matmuls (QK^T and AV) over all T positions. The causal
    // mask's skipped half is counted too, as is usual for MFU figures.
    const double per_layer = t * (12 * h * h + 2 * t * h);
    const double head = decoder_ ? t * h * vocab_size_ : h * num_classes_;
    return 2 * (num_layers_ * per_layer + head);
  }

 private:
  const int64_t sequence_length_;
  const int64_t num_layers_;
  const int64_t hidden_;
  const bool decoder_;
  const int64_t vocab_size_;
  const int64_t num_classes_;
  torch::nn::Embedding embedding_;
  torch::Tensor positions_;
  std::vector<std::shared_ptr<TransformerBlock>> blocks_;
  torch::nn::LayerNorm final_norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};

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
    return std::make_shared<Mlp>(c.image_size, hidden, c.num_classes);
  }
  if (w == "simple_cnn") {
    // Two 2x2 max pools must leave at least one pixel.
    status = CheckAtLeast("image_size", c.image_size, 4, w);
    if (!status.ok()) return status;
    return std::make_shared<SimpleCnn>(c.image_size, c.num_classes);
  }
  if (w == "resnet18" || w == "resnet50") {
    status = CheckAtLeast("image_size", c.image_size, 1, w);
    if (!status.ok()) return status;
    return w == "resnet18"
               ? std::make_shared<ResNet>(c.image_size, c.num_classes, false,
                                          std::vector<int64_t>{2, 2, 2, 2})
               : std::make_shared<ResNet>(c.image_size, c.num_classes, true,
                                          std::vector<int64_t>{3, 4, 6, 3});
  }
  if (w == "unet") {
    // Four 2x2 max pools must leave at least one pixel.
    status = CheckAtLeast("image_size", c.image_size, 16, w);
    if (!status.ok()) return status;
    return std::make_shared<UNet>(c.image_size, c.num_classes);
  }
  status = CheckAtLeast("sequence_length", c.sequence_length, 1, w);
  if (!status.ok()) return status;
  if (w == "cnn_lstm") {
    status = CheckAtLeast("image_size", c.image_size, 1, w);
    if (!status.ok()) return status;
    return std::make_shared<CnnLstm>(c.sequence_length, c.image_size,
                                     c.num_classes);
  }
  status = CheckAtLeast("vocab_size", c.vocab_size, 1, w);
  if (!status.ok()) return status;
  if (w == "bilstm") {
    return std::make_shared<BiLstm>(c.sequence_length, c.vocab_size,
                                    c.num_classes);
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
  return std::make_shared<Transformer>(c.sequence_length, c.num_layers,
                                       c.hidden_size, c.num_heads, c.decoder,
                                       c.vocab_size, c.num_classes);
}

}  // namespace gpubench::engine
