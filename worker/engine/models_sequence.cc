// The sequence models: bilstm, cnn_lstm and transformer.
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "worker/engine/model_parts.h"

namespace gpubench::engine {
namespace {

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
    return Apply(head_, decoder_ ? x : x.mean(1));
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
  std::string CausalAttentionKernel() const override {
    return blocks_.empty() ? "" : blocks_[0]->kernel;
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

}  // namespace

ModelOrError NewBiLstm(const RunConfig& c) {
  return std::make_shared<BiLstm>(c.sequence_length, c.vocab_size, c.num_classes);
}

ModelOrError NewCnnLstm(const RunConfig& c) {
  return std::make_shared<CnnLstm>(c.sequence_length, c.image_size, c.num_classes);
}

ModelOrError NewTransformer(const RunConfig& c) {
  for (const auto& [field, value] : {std::pair<const char*, int>{"num_layers", c.num_layers},
                                     {"num_heads", c.num_heads},
                                     {"hidden_size", c.hidden_size}}) {
    if (value < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.base.params.", field, ": must be at least 1 for transformer, got ", value));
    }
  }
  if (c.hidden_size % c.num_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.base.params.hidden_size: must be a multiple of num_heads (", c.num_heads,
        "), got ", c.hidden_size));
  }
  return std::make_shared<Transformer>(c.sequence_length, c.num_layers, c.hidden_size,
                                       c.num_heads, c.decoder, c.vocab_size, c.num_classes);
}

}  // namespace gpubench::engine
