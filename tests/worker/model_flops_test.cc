// Each built-in model's FLOPs (the registry's cost, common/workloads/NAME.cc)
// against LibTorch's own FLOP counter: the profiler with with_flops over one
// forward pass without gradients, and over one training step's forward,
// loss and backward, on the CPU at small sizes. The two must agree within 5%.
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/support/planned_config.h"
#include "worker/engine/attention.h"
#include "worker/engine/config.h"
#include "worker/engine/models.h"

namespace gpubench::engine {
namespace {

int64_t Product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// What LibTorch's counter gives for the matrix work of f: its matrix
// products and 2-D convolutions (the elementwise adds and multiplies it also
// counts are left out, as the formulas leave them out), and, from the
// recorded shapes, what that counter leaves at zero in both LibTorch 1.13
// and 2.11:
// - a convolution's backward: its weight's gradient, and its input's unless
//   the input is the images (3 channels: no gradient wanted);
// - a transposed convolution's forward.
// A multiply-add is 2 FLOPs, as the counter has it.
double CountedFlops(const std::function<void()>& f) {
  namespace prof = torch::profiler::impl;
  prof::ProfilerConfig config(prof::ProfilerState::KINETO, /*report_input_shapes=*/true,
                              /*profile_memory=*/false, /*with_stack=*/false,
                              /*with_flops=*/true);
  const std::set<prof::ActivityType> activities = {prof::ActivityType::CPU};
  torch::autograd::profiler::prepareProfiler(config, activities);
  torch::autograd::profiler::enableProfiler(config, activities);
  f();
  const auto result = torch::autograd::profiler::disableProfiler();
  double flops = 0;
  for (const auto& e : result->events()) {
    const std::string name = e.name();
    if (name == "aten::mm" || name == "aten::addmm" || name == "aten::bmm" ||
        name == "aten::baddbmm" || name == "aten::conv2d") {
      flops += static_cast<double>(e.flops());
      continue;
    }
    if (!e.hasShapes()) continue;
    const auto shapes = e.shapes();
    if (name == "aten::conv_transpose2d") {
      // input [N, in, H, W], weight [in, out, k, k]: each input pixel
      // feeds out x k x k outputs.
      const auto& input = shapes[0];
      const auto& weight = shapes[1];
      flops += 2.0 * Product(input) * weight[1] * weight[2] * weight[3];
    } else if (name == "aten::convolution_backward") {
      // grad_output, input, weight. A transposed convolution's weight is
      // [in, out, k, k], a convolution's [out, in, k, k].
      const auto& grad_out = shapes[0];
      const auto& input = shapes[1];
      const auto& weight = shapes[2];
      const bool transposed = weight[0] != grad_out[1];
      const double macs = transposed ? 1.0 * Product(input) * weight[1] * weight[2] * weight[3]
                                     : 1.0 * Product(grad_out) * weight[1] * weight[2] *
                                           weight[3];
      const bool images = input[1] == 3;
      flops += 2 * macs * (images ? 1 : 2);
    }
  }
  return flops;
}

struct Case {
  RunConfig config;
  std::string label;
};

std::vector<Case> Cases() {
  using testing_support::Planned;
  std::vector<Case> cases;
  auto add = [&](RunConfig c, const std::string& label) {
    c.batch_size = 2;
    cases.push_back({c, label});
  };
  for (const char* size : {"small", "large"}) {
    RunConfig mlp = Planned("mlp");
    mlp.model_size = size;
    add(mlp, std::string("mlp ") + size);
  }
  add(Planned("simple_cnn"), "simple_cnn");
  for (const char* name : {"resnet18", "resnet50", "unet"}) {
    RunConfig c = Planned(name);
    c.image_size = 32;
    add(c, name);
  }
  RunConfig bilstm = Planned("bilstm");
  bilstm.sequence_length = 16;
  add(bilstm, "bilstm");
  RunConfig cnn_lstm = Planned("cnn_lstm");
  cnn_lstm.sequence_length = 4;
  cnn_lstm.image_size = 32;
  add(cnn_lstm, "cnn_lstm");
  RunConfig encoder = Planned("transformer");
  encoder.num_layers = 2;
  encoder.hidden_size = 64;
  encoder.num_heads = 4;
  encoder.sequence_length = 16;
  encoder.vocab_size = 100;
  add(encoder, "transformer encoder");
  RunConfig decoder = encoder;
  decoder.decoder = true;
  add(decoder, "transformer decoder");
  for (const char* name : {"gpt", "llama"}) {
    RunConfig lm = Planned(name);
    lm.model_size = "custom";
    lm.num_layers = 2;
    lm.hidden_size = 64;
    lm.num_heads = 4;
    lm.num_kv_heads = 2;
    lm.ffn_hidden_size = 96;
    lm.vocab_size = 100;
    lm.sequence_length = 24;
    add(lm, name);
  }
  return cases;
}

torch::Tensor Batch(const BenchModel& model, int64_t batch) {
  std::vector<int64_t> shape = {batch};
  for (int64_t d : model.sample_shape()) shape.push_back(d);
  if (model.input_kind() == InputKind::kTokens) {
    return torch::randint(model.token_low(), model.vocab_size(), shape, torch::kLong);
  }
  return torch::randn(shape);
}

// LibTorch's own counter sees products only where they go through ATen's
// matrix operators: the LSTM through its native cell (not oneDNN's fused
// layer, whose FLOPs it does not count), attention through the math formula
// (not the fused kernels). Both are restored after.
class Flops : public ::testing::Test {
 protected:
  void SetUp() override {
    mkldnn_ = at::globalContext().userEnabledMkldnn();
    at::globalContext().setUserEnabledMkldnn(false);
    ASSERT_TRUE(SelectAttention(Attention::kMath).ok());
  }
  void TearDown() override {
    at::globalContext().setUserEnabledMkldnn(mkldnn_);
    SelectAttention(Attention::kAuto).IgnoreError();
  }
  bool mkldnn_ = true;
};

TEST_F(Flops, EveryBuiltInModelsFiguresAreWhatLibTorchsProfilerCounts) {
  torch::manual_seed(0);
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.label);
    auto built = CreateModel(c.config);
    ASSERT_TRUE(built.ok()) << built.status();
    std::shared_ptr<BenchModel> model = *built;
    const torch::Tensor x = Batch(*model, c.config.batch_size);
    const torch::Tensor y = model->Labels(x);

    model->eval();
    const double forward = CountedFlops([&] {
      torch::NoGradGuard no_grad;
      model->Forward(x);
    });
    model->train();
    const double train = CountedFlops([&] { model->Loss(model->Forward(x), y).backward(); });

    RunConfig infer = c.config;
    infer.mode = Mode::kInfer;
    RunConfig training = c.config;
    training.mode = Mode::kTrain;
    // The math formula runs attention's whole square (no causal share).
    const double expect_forward = FlopsPerSample(infer, "math") * c.config.batch_size;
    const double expect_train = FlopsPerSample(training, "math") * c.config.batch_size;
    ASSERT_GT(forward, 0);
    ASSERT_GT(train, 0);
    std::printf("%-20s forward %.4g (%.4f of the profiler's), training %.4g (%.4f)\n",
                c.label.c_str(), expect_forward, expect_forward / forward, expect_train,
                expect_train / train);
    EXPECT_NEAR(expect_forward / forward, 1.0, 0.05)
        << "formula " << expect_forward << ", profiler " << forward;
    EXPECT_NEAR(expect_train / train, 1.0, 0.05)
        << "formula " << expect_train << ", profiler " << train;
  }
}

// Where a causal kernel skips the masked blocks, attention counts about half
// of its square; the math formula and kernels not named count all of it.
TEST(CausalAttentionShare, IsHalfTheSquareForKernelsThatSkipTheMask) {
  EXPECT_EQ(CausalAttentionShare("math", 1024), 1);
  EXPECT_EQ(CausalAttentionShare("math (LibTorch 1.13 has no SDPA)", 1024), 1);
  EXPECT_EQ(CausalAttentionShare("", 1024), 1);
  EXPECT_DOUBLE_EQ(CausalAttentionShare("flash", 1024), 1025.0 / 2048);
  EXPECT_DOUBLE_EQ(CausalAttentionShare("efficient", 4), 5.0 / 8);
  EXPECT_DOUBLE_EQ(CausalAttentionShare("compiled flash", 4), 5.0 / 8);

  RunConfig gpt = testing_support::Planned("gpt");  // 124m at T 1024
  gpt.mode = Mode::kTrain;
  const ModelCost cost = CostOf(gpt);
  const double full = FlopsPerSample(gpt, "math");
  EXPECT_DOUBLE_EQ(full, cost.train_flops_per_sample);
  // Three times the forward square (forward and two gradients), about half
  // of it skipped.
  EXPECT_NEAR(full - FlopsPerSample(gpt, "flash"),
              3 * cost.attention_flops_per_sample * (1023.0 / 2048), 1);
}

// The large MLP's training step is its forward's products three times less
// the first layer's input gradient (the images need none): about 2.06x, as
// the profiler reading had it, not 3x.
TEST(ModelCost, TheFirstLayerPassesNoGradientToTheImages) {
  RunConfig mlp = testing_support::Planned("mlp");
  mlp.model_size = "large";
  const ModelCost cost = CostOf(mlp);
  EXPECT_NEAR(cost.train_flops_per_sample / cost.forward_flops_per_sample, 2.06, 0.01);
}

}  // namespace
}  // namespace gpubench::engine
