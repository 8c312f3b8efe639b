// The image models: mlp, simple_cnn, resnet18/50 and unet.
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/model_cost.h"
#include "common/workload_registry.h"
#include "worker/engine/model_parts.h"

namespace gpubench::engine {
namespace {

class Mlp : public ImageClassifier {
 public:
  Mlp(int64_t image_size, const std::vector<int64_t>& hidden,
      int64_t num_classes)
      : ImageClassifier(image_size, num_classes) {
    int64_t in = 3 * image_size * image_size;
    for (size_t i = 0; i < hidden.size(); ++i) {
      layers_.push_back(register_module(absl::StrCat("fc", i),
                                        torch::nn::Linear(in, hidden[i])));
      in = hidden[i];
    }
    out_ = register_module("out", torch::nn::Linear(in, num_classes));
  }

  torch::Tensor Forward(const torch::Tensor& input) override {
    torch::Tensor x = input.flatten(1);
    for (torch::nn::Linear& layer : layers_) x = torch::relu(layer(x));
    return out_(x);
  }

 private:
  std::vector<torch::nn::Linear> layers_;
  torch::nn::Linear out_{nullptr};
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
        fc2_(register_module("fc2", torch::nn::Linear(128, num_classes))) {}

  torch::Tensor Forward(const torch::Tensor& input) override {
    torch::Tensor x = torch::max_pool2d(torch::relu(conv1_(input)), {2, 2});
    x = torch::max_pool2d(torch::relu(conv2_(x)), {2, 2});
    return fc2_(torch::relu(fc1_(x.flatten(1))));
  }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::Conv2d conv2_;
  torch::nn::Linear fc1_;
  torch::nn::Linear fc2_;
};

// torchvision's resnet18 / resnet50, module names included.
class ResNet : public ImageClassifier {
 public:
  ResNet(int64_t image_size, int64_t num_classes, bool bottleneck,
         const std::vector<int64_t>& blocks_per_stage)
      : ImageClassifier(image_size, num_classes),
        conv1_(register_module("conv1", Conv(3, 64, 7, 2, 3, false))),
        bn1_(register_module("bn1", torch::nn::BatchNorm2d(64))) {
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
        in = planes * ResidualBlock::Expansion(bottleneck);
      }
    }
    fc_ = register_module("fc", torch::nn::Linear(in, num_classes));

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

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  std::vector<std::shared_ptr<ResidualBlock>> blocks_;
  torch::nn::Linear fc_{nullptr};
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

 private:
  const int64_t image_size_;
  const int64_t num_classes_;
  FixedProjection projection_;
  std::vector<std::shared_ptr<DoubleConv>> downs_;  // inc, down1..down4
  std::vector<std::shared_ptr<UpBlock>> ups_;       // up1..up4
  torch::nn::Conv2d outc_{nullptr};
};

}  // namespace

ModelOrError NewMlp(const RunConfig& c) {
  const std::vector<int64_t> hidden = cost::MlpHiddenWidths(c.model_size);
  if (hidden.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.base.params.model_size: must be small, medium or large, got \"", c.model_size,
        "\""));
  }
  return std::make_shared<Mlp>(c.image_size, hidden, c.num_classes);
}

ModelOrError NewSimpleCnn(const RunConfig& c) {
  return std::make_shared<SimpleCnn>(c.image_size, c.num_classes);
}

ModelOrError NewResNet(const RunConfig& c) {
  if (IsWorkload(c.workload, WorkloadId::kResnet18)) {
    return std::make_shared<ResNet>(c.image_size, c.num_classes, false,
                                    std::vector<int64_t>{2, 2, 2, 2});
  }
  return std::make_shared<ResNet>(c.image_size, c.num_classes, true,
                                  std::vector<int64_t>{3, 4, 6, 3});
}

ModelOrError NewUNet(const RunConfig& c) {
  return std::make_shared<UNet>(c.image_size, c.num_classes);
}

}  // namespace gpubench::engine
