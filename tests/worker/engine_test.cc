// Every workload through the engine's RunOne, in process, on the CPU: one
// short train run and one short infer run each, with the figures a user reads.
#include "worker/engine/engine.h"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/version.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/workload_registry.h"
#include "tests/support/planned_config.h"
#include "worker/engine/config.h"
#include "worker/engine/models.h"

namespace gpubench::engine {
namespace {

MeasureConfig Short() {
  MeasureConfig m;
  m.warmup_iterations = 2;
  m.min_iterations = 6;
  m.min_time_ms = 0;
  m.max_time_ms = 20000;
  m.window_iterations = 3;
  m.max_iterations = 12;
  return m;
}

// A small TorchScript module written by LibTorch itself, so the test needs no
// Python: y = relu(x @ w1) @ w2 over 16 features, 4 classes.
std::string WriteTorchScript() {
  torch::jit::Module m("tiny");
  torch::manual_seed(1);
  m.register_parameter("w1", (torch::randn({16, 32}) * 0.3).requires_grad_(),
                       /*is_buffer=*/false);
  m.register_parameter("w2", (torch::randn({32, 4}) * 0.3).requires_grad_(),
                       /*is_buffer=*/false);
  m.define(R"(
def forward(self, x):
    return torch.relu(x @ self.w1) @ self.w2
)");
  const std::string path =
      ::testing::TempDir() + "gpubench_engine_test_tiny.pt";
  m.save(path);
  return path;
}

// Each workload at a size the 2-core CI machine runs in seconds.
RunConfig Small(const std::string& workload) {
  RunConfig c = testing_support::Planned(workload);
  c.device = "cpu";
  c.batch_size = 4;
  if (workload == "resnet18" || workload == "resnet50") {
    c.image_size = 64;
    c.num_classes = 10;
  } else if (workload == "unet") {
    c.image_size = 32;
  } else if (workload == "bilstm") {
    c.sequence_length = 4;  // 1.13 on CPU: ~25 ms per LSTM step
  } else if (workload == "cnn_lstm") {
    c.sequence_length = 4;
    c.image_size = 32;
  } else if (workload == "transformer") {
    c.sequence_length = 32;
    c.num_layers = 2;
    c.hidden_size = 64;
    c.num_heads = 4;
    c.vocab_size = 500;
  } else if (workload == "gpt" || workload == "llama") {
    c.sequence_length = 16;
    c.num_layers = 2;
    c.hidden_size = 64;
    c.num_heads = 4;
    c.num_kv_heads = 2;
    c.ffn_hidden_size = 96;
    c.vocab_size = 100;
    c.prompt_length = 8;
    c.new_tokens = 4;
  } else if (workload == "matmul") {
    c.matmul_m = c.matmul_n = c.matmul_k = 128;
  } else if (workload == "attention") {
    c.sequence_length = 64;
    c.hidden_size = 64;
    c.num_heads = 4;
  } else if (workload == "copy") {
    c.copy_bytes = 1 << 20;
  }
  return c;
}

// A torchscript run of m, saved as gpubench_engine_<name>.pt in the test's
// temporary folder.
RunConfig Scripted(const torch::jit::Module& m, const std::string& name,
                   std::vector<TensorSpec> inputs) {
  const std::string path = ::testing::TempDir() + "gpubench_engine_" + name + ".pt";
  m.save(path);
  RunConfig config = Small("torchscript");
  config.model_path = path;
  config.inputs = std::move(inputs);
  return config;
}

// A language model's figures: tokens a second, and inference's time to
// first token and inter-token latencies, one first token and new_tokens - 1
// next ones a generation.
void ExpectLanguageModelFigures(const RunConfig& config, const RunOutcome& out) {
  EXPECT_FALSE(out.attention_backend.empty());
  if (config.mode == Mode::kTrain) {
    EXPECT_DOUBLE_EQ(out.tokens_per_s, out.throughput_samples_per_s * config.sequence_length);
    return;
  }
  EXPECT_EQ(out.time_to_first_token_ms.count, out.iterations);
  EXPECT_EQ(out.inter_token_latency_ms.count, out.iterations * (config.new_tokens - 1));
  EXPECT_GT(out.time_to_first_token_ms.p50, 0);
  EXPECT_NEAR(out.tokens_per_s, config.batch_size * 1000 / out.inter_token_latency_ms.mean,
              1e-6 * out.tokens_per_s);
  EXPECT_GT(out.decode_bandwidth_gb_per_s, 0);
}

class EveryWorkload : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryWorkload, TrainAndInferGiveSaneFigures) {
  RunConfig config = Small(GetParam());
  if (GetParam() == "torchscript") {
    config.model_path = WriteTorchScript();
    config.inputs.push_back({{4, 16}, DType::kFloat32});
  }
  const WorkloadInfo* info = FindWorkload(GetParam());
  const bool trains = info->batched && info->trains;
  for (Mode mode : {Mode::kTrain, Mode::kInfer}) {
    if (mode == Mode::kTrain && !trains) continue;
    config.mode = mode;
    RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
    SCOPED_TRACE(GetParam() + (mode == Mode::kTrain ? " train" : " infer"));
    ASSERT_EQ(out.status, RunStatus::kSucceeded) << out.error;
    EXPECT_EQ(out.resolved_device, "cpu");
    EXPECT_GT(out.throughput_samples_per_s, 0);
    EXPECT_GE(out.iterations, 6);
    EXPECT_EQ(out.device_ms.size(), static_cast<size_t>(out.iterations));
    const stats::Summary& l = out.latency_ms;
    EXPECT_GT(l.min, 0);
    EXPECT_LE(l.min, l.p50);
    EXPECT_LE(l.p50, l.p90);
    EXPECT_LE(l.p90, l.p95);
    EXPECT_LE(l.p95, l.p99);
    EXPECT_LE(l.p99, l.max);
    // An interval brackets the figure, or there is none (too wide to be
    // finite): never an infinite one.
    if (out.throughput_ci_high > 0) {
      EXPECT_LE(out.throughput_ci_low, out.throughput_samples_per_s);
      EXPECT_GE(out.throughput_ci_high, out.throughput_samples_per_s);
    } else {
      EXPECT_EQ(out.throughput_ci_low, 0);
    }
    EXPECT_GT(out.peak_host_rss_bytes, 0);
    // Every run says what math it ran in: on the CPU, fp32 whatever TF32 asks.
    EXPECT_EQ(out.math_mode, "fp32");
    if (GetParam() == "matmul") {
      EXPECT_DOUBLE_EQ(out.flops_per_iteration, 2.0 * 128 * 128 * 128);
      EXPECT_GT(out.achieved_tflops, 0);
    } else if (GetParam() == "copy") {
      EXPECT_GT(out.bandwidth_gb_per_s, 0);
    } else if (GetParam() == "attention") {
      // Causal: half of 4 B H T^2 D. A kernel, no parameters.
      EXPECT_DOUBLE_EQ(out.flops_per_iteration, 2.0 * 4 * 4 * 64 * 64 * 16);
      EXPECT_GT(out.achieved_tflops, 0);
      EXPECT_FALSE(out.attention_backend.empty());
      EXPECT_EQ(out.parameter_count, 0);
    } else if (GetParam() == "empty") {
      // Nothing to count: the figures are the harness's own.
      EXPECT_EQ(out.parameter_count, 0);
      EXPECT_EQ(out.flops_per_iteration, 0);
    } else {
      EXPECT_GT(out.parameter_count, 0);
    }
    const bool language_model = info->language_model;
    if (language_model) ExpectLanguageModelFigures(config, out);
    // A built-in model's FLOPs are the registry's (what `spec` estimated),
    // causal attention as its kernel ran; a language model's inference
    // reports tokens instead.
    if (IsModelWorkload(GetParam()) && !(language_model && mode == Mode::kInfer)) {
      EXPECT_DOUBLE_EQ(out.flops_per_iteration,
                       FlopsPerSample(config, out.attention_backend) * config.batch_size);
    }
    if (IsModelWorkload(GetParam())) {
      EXPECT_EQ(out.parameter_count, CostOf(config).parameters);
    }
    if (trains && mode == Mode::kTrain && GetParam() != "torchscript") {
      // Cross-entropy style losses; a TorchScript model trains on the mean
      // of its output, which may be negative.
      EXPECT_GT(out.first_loss, 0);
      EXPECT_GT(out.last_loss, 0);
    }
    if (GetParam() == "unet") {
      EXPECT_GE(out.dice, 0);
      EXPECT_LE(out.dice, 1);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cpu, EveryWorkload,
    // Every workload of the registry but the distributed ones (one rank of
    // each is in distributed_test): a new entry without an engine half fails.
    ::testing::ValuesIn([] {
      std::vector<std::string> names;
      for (const WorkloadInfo* w : Workloads()) {
        if (!w->distributed) names.push_back(w->name);
      }
      return names;
    }()));

// A training run of a few dozen steps lowers the loss from its first to its
// last iteration (labels are a fixed function of the inputs).
TEST(Engine, TrainingRunLowersTheLoss) {
  MeasureConfig m = Short();
  m.min_iterations = 40;
  m.max_iterations = 40;
  m.window_iterations = 10;
  // Both optimizers (the fused kernels where LibTorch has them, 2.4+).
  for (Optimizer optimizer : {Optimizer::kAdamW, Optimizer::kSgd}) {
    for (const char* workload : {"mlp", "simple_cnn", "transformer"}) {
      RunConfig config = Small(workload);
      config.batch_size = 16;
      config.optimizer = optimizer;
      config.learning_rate = optimizer == Optimizer::kAdamW ? 0.003 : 0.02;
      RunOutcome out = RunOne(config, m, nullptr, nullptr);
      const std::string name =
          std::string(workload) + (optimizer == Optimizer::kAdamW ? " adamw" : " sgd");
      ASSERT_EQ(out.status, RunStatus::kSucceeded) << name << ": " << out.error;
      EXPECT_LT(out.last_loss, 0.9 * out.first_loss) << name;
    }
  }
}

TEST(Engine, TrainingAModelWithoutParametersIsAClearError) {
  torch::jit::Module m("frozen");
  m.register_buffer("w", torch::randn({16, 4}));
  m.define(R"(
def forward(self, x):
    return x @ self.w
)");
  const std::string path = ::testing::TempDir() + "gpubench_engine_frozen.pt";
  m.save(path);
  RunConfig config = Small("torchscript");
  config.model_path = path;
  config.inputs.push_back({{4, 16}, DType::kFloat32});
  RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
  EXPECT_EQ(out.status, RunStatus::kFailed);
  EXPECT_NE(out.error.find("no trainable parameters"), std::string::npos)
      << out.error;
  config.mode = Mode::kInfer;
  out = RunOne(config, Short(), nullptr, nullptr);
  EXPECT_EQ(out.status, RunStatus::kSucceeded) << out.error;
}

TEST(Engine, CudaGraphOnCpuIsAClearError) {
  RunConfig config = Small("mlp");
  config.execution = Execution::kCudaGraph;
  RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
  EXPECT_EQ(out.status, RunStatus::kFailed);
  EXPECT_NE(out.error.find("cuda_graph"), std::string::npos) << out.error;
}

// A copy to a peer GPU needs a CUDA run and a GPU of that index: on the
// CPU the run fails naming the parameter (on GPUs: bench/gpu_schema_check.sh peer).
TEST(Engine, APeerCopyOffTheGpuIsAClearError) {
  RunConfig config = Small("copy");
  config.copy_direction = CopyDirection::kDeviceToDevice;
  config.peer_device = 1;
  RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
  EXPECT_EQ(out.status, RunStatus::kFailed);
  EXPECT_NE(out.error.find("params.peer_device: a copy to a peer GPU is device_to_device on a "
                           "CUDA device"),
            std::string::npos)
      << out.error;
}

// A kernel copy is the element-wise copy of int32 into float32 (no
// memcpy): it runs on the CPU too, moving copy_bytes an iteration, and is
// device_to_device only.
TEST(Engine, AKernelCopyMovesItsBytesByAnElementWiseCopy) {
  RunConfig config = Small("copy");
  config.copy_direction = CopyDirection::kDeviceToDevice;
  config.copy_bytes = 4 << 20;
  config.copy_kernel = true;
  RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
  ASSERT_EQ(out.status, RunStatus::kSucceeded) << out.error;
  EXPECT_GT(out.bandwidth_gb_per_s, 0);
  EXPECT_NEAR(out.bandwidth_gb_per_s, (4 << 20) / (out.latency_ms.p50 * 1e-3) / 1e9, 1e-6);
  for (auto [direction, bytes] : {std::pair{CopyDirection::kHostToDevice, int64_t{4} << 20},
                                 std::pair{CopyDirection::kDeviceToDevice, int64_t{6}}}) {
    config.copy_direction = direction;
    config.copy_bytes = bytes;  // 6: no whole number of 4-byte elements
    out = RunOne(config, Short(), nullptr, nullptr);
    EXPECT_EQ(out.status, RunStatus::kFailed);
    EXPECT_NE(out.error.find("params.copy_kernel: a kernel copy is device_to_device, of a "
                             "multiple of 4 bytes"),
              std::string::npos)
        << out.error;
  }
}

TEST(Engine, CancelStopsAtAnIterationBoundaryWithPartialFigures) {
  RunConfig config = Small("mlp");
  MeasureConfig m = Short();
  m.max_iterations = 1000000;
  m.min_iterations = 1000000;
  m.max_time_ms = 60000;
  std::atomic<bool> cancel{false};
  int seen = 0;
  measure::ProgressFn progress = [&](const measure::Progress&) {
    if (++seen >= 3) cancel = true;
  };
  RunOutcome out = RunOne(config, m, progress, &cancel);
  EXPECT_EQ(out.status, RunStatus::kCancelled) << out.error;
  EXPECT_LT(out.iterations, 1000000);
}

TEST(Engine, WaitingForInputIsNotDeviceTime) {
  // Inline loading at 25 ms a sample dominates a tiny mlp step: the loop is
  // starved, and the figures must say so rather than call the device busy.
  // (At 3 ms the step's share passed 0.2 with both cores busy elsewhere; at
  // 10 ms the wheel's mlp step took 12 ms beside another test.)
  RunConfig config = Small("mlp");
  config.mode = Mode::kInfer;
  config.input_source = InputSource::kHost;
  config.pipeline.loader_threads = 0;
  config.pipeline.extra_cost_us_per_sample = 25000;
  RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
  ASSERT_EQ(out.status, RunStatus::kSucceeded) << out.error;
  EXPECT_GT(out.data_wait_share, 0.8);
  EXPECT_LT(out.device_busy_share, 0.2);
  EXPECT_LE(out.data_wait_share + out.device_busy_share, 1.02);
  EXPECT_LT(out.latency_ms.p50, 0.2 * out.host_latency_ms.p50);
}

TEST(Engine, LoaderThreadOutOfMemoryFailsTheRunNotTheProcess) {
  RunConfig config = Small("mlp");
  config.mode = Mode::kInfer;
  config.input_source = InputSource::kHost;
  config.pipeline.loader_threads = 2;
  config.batch_size = 64;  // 64 x 12288 bytes
  setenv("GPUBENCH_INJECT_OOM_ABOVE_BYTES", "200000", 1);
  RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
  unsetenv("GPUBENCH_INJECT_OOM_ABOVE_BYTES");
  EXPECT_EQ(out.status, RunStatus::kOutOfMemory) << out.error;
  EXPECT_NE(out.error.find("out of memory"), std::string::npos) << out.error;
}

TEST(Engine, TorchScriptTakesSeveralInputsOfTheirDtypes) {
  // forward(x: float, ids: int64, scale: half): every input is used.
  torch::jit::Module m("multi");
  m.register_parameter("w", (torch::randn({16, 4}) * 0.3).requires_grad_(), false);
  m.define(R"(
def forward(self, x, ids, scale):
    assert ids.element_size() == 8 and not ids.is_floating_point(), "ids must be int64"
    assert scale.element_size() == 2 and scale.is_floating_point(), "scale must be float16"
    return (x @ self.w) * scale.float() + ids.float().mean(dim=1, keepdim=True)
)");
  RunConfig config = Scripted(m, "multi",
                              {{{4, 16}, DType::kFloat32},
                               {{4, 7}, DType::kInt64},
                               {{4, 4}, DType::kFloat16}});
  for (Mode mode : {Mode::kInfer, Mode::kTrain}) {
    config.mode = mode;
    RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
    EXPECT_EQ(out.status, RunStatus::kSucceeded) << out.error;
    EXPECT_GT(out.throughput_samples_per_s, 0);
  }
  // A wrong dtype reaches the model, and its own check fails the run.
  config.inputs[1].dtype = DType::kInt32;
  RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
  EXPECT_EQ(out.status, RunStatus::kFailed);
  EXPECT_NE(out.error.find("int64"), std::string::npos) << out.error;
}

// A user's model as users write them: token ids for an embedding of 10 rows
// (the default range [0, 100) fails in the lookup), and a dict of two heads.
TEST(Engine, TorchScriptTakesIntegerRangesAndGivesDictsOfOutputs) {
  torch::jit::Module m("heads");
  m.register_parameter("table", torch::randn({10, 8}).requires_grad_(), false);
  m.register_parameter("w", torch::randn({8, 3}).requires_grad_(), false);
  m.define(R"(
def forward(self, ids, offsets):
    assert int(ids.min()) >= 0 and int(ids.max()) < 10, "token id out of range"
    assert int(offsets.min()) >= -3 and int(offsets.max()) < -1, "offset out of range"
    h = torch.embedding(self.table, ids).mean(dim=1)
    return {"logits": h @ self.w, "norm": (h * h).sum(dim=1) + offsets.float().mean(dim=1),
            "ids": ids}
)");
  RunConfig config = Scripted(
      m, "heads", {{{4, 12}, DType::kInt64, 0, 10}, {{4, 5}, DType::kInt32, -3, -1}});
  for (Mode mode : {Mode::kInfer, Mode::kTrain}) {
    config.mode = mode;
    for (InputSource source : {InputSource::kDevice, InputSource::kHost}) {
      config.input_source = source;
      RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
      EXPECT_EQ(out.status, RunStatus::kSucceeded) << out.error;
      EXPECT_GT(out.throughput_samples_per_s, 0);
    }
  }
  // The default range reaches past the table's 10 rows.
  config.inputs = {{{4, 12}, DType::kInt64}, {{4, 5}, DType::kInt32, -3, -1}};
  RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
  EXPECT_EQ(out.status, RunStatus::kFailed);
  EXPECT_NE(out.error.find("token id out of range"), std::string::npos) << out.error;
}

// --check-numerics: the run's model against fp64 on the CPU. fp32 agrees to
// about 1e-7; bf16 autocast is visibly coarser and still within its
// tolerance; a training run names its first parameter's gradient.
TEST(Engine, NumericsCheckComparesTheRunWithFp64) {
  MeasureConfig m = Short();
  m.check_numerics = true;
  RunConfig config = Small("simple_cnn");
  config.batch_size = 16;
  std::map<std::pair<Mode, Precision>, NumericsOutcome> seen;
  for (Mode mode : {Mode::kInfer, Mode::kTrain}) {
    for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
      config.mode = mode;
      config.precision = precision;
      RunOutcome out = RunOne(config, m, nullptr, nullptr);
      ASSERT_EQ(out.status, RunStatus::kSucceeded) << out.error;
      ASSERT_TRUE(out.numerics.has_value());
      const NumericsOutcome& n = *out.numerics;
      EXPECT_TRUE(n.checked) << n.error;
      EXPECT_TRUE(n.passed) << n.output_rel_error << " " << n.loss_rel_error << " "
                            << n.gradient_rel_error;
      EXPECT_EQ(n.batch_size, 8);
      EXPECT_EQ(n.tolerance, NumericsTolerance(precision));
      EXPECT_FALSE(n.non_finite);
      if (mode == Mode::kTrain) {
        EXPECT_FALSE(n.gradient_parameter.empty());
        EXPECT_GT(n.gradient_rel_error, 0);
      } else {
        EXPECT_TRUE(n.gradient_parameter.empty());
      }
      seen[std::make_pair(mode, precision)] = n;
    }
  }
  for (Mode mode : {Mode::kInfer, Mode::kTrain}) {
    const double fp32 = seen[std::make_pair(mode, Precision::kFp32)].output_rel_error;
    const double bf16 = seen[std::make_pair(mode, Precision::kBf16)].output_rel_error;
    EXPECT_LT(fp32, 1e-5);
    EXPECT_GT(bf16, 10 * fp32);
  }
  // Without the option, no check runs.
  EXPECT_FALSE(RunOne(config, Short(), nullptr, nullptr).numerics.has_value());
}

// Runs config in mode with the numerics check; the run itself must succeed.
NumericsOutcome CheckedRun(RunConfig config, Mode mode) {
  config.mode = mode;
  MeasureConfig measure = Short();
  measure.check_numerics = true;
  RunOutcome out = RunOne(config, measure, nullptr, nullptr);
  EXPECT_EQ(out.status, RunStatus::kSucceeded) << out.error;
  EXPECT_TRUE(out.numerics.has_value());
  return out.numerics.value_or(NumericsOutcome{});
}

// A user model that overflows in fp32 (e^100) but not in fp64: the
// check fails it, and the run's own figures stand.
TEST(Engine, NumericsCheckFailsAnOverflowingModel) {
  torch::jit::Module m("overflow");
  m.register_parameter("w", torch::ones({16, 4}).requires_grad_(), false);
  m.define(R"(
def forward(self, x):
    return torch.exp(x @ self.w * 0.001 + 100.0)
)");
  const RunConfig config = Scripted(m, "overflow", {{{4, 16}, DType::kFloat32}});
  for (Mode mode : {Mode::kInfer, Mode::kTrain}) {
    const NumericsOutcome n = CheckedRun(config, mode);
    EXPECT_TRUE(n.checked) << n.error;
    EXPECT_TRUE(n.non_finite);
    EXPECT_FALSE(n.passed);
  }
}

// A user's scripted model with a buffer beside its parameter: its fp64
// reference converts both, and fp32 agrees with it.
TEST(Engine, NumericsCheckPassesAScriptedModelWithABuffer) {
  torch::jit::Module m("scaled");
  m.register_parameter("w", torch::randn({16, 4}).requires_grad_(), false);
  m.register_buffer("scale", torch::full({4}, 0.5));
  m.define(R"(
def forward(self, x):
    return torch.tanh(x @ self.w) * self.scale
)");
  const RunConfig config = Scripted(m, "scaled", {{{4, 16}, DType::kFloat32}});
  for (Mode mode : {Mode::kInfer, Mode::kTrain}) {
    const NumericsOutcome n = CheckedRun(config, mode);
    EXPECT_TRUE(n.checked) << n.error;
    EXPECT_TRUE(n.passed) << n.output_rel_error;
    EXPECT_LT(n.output_rel_error, 1e-6);
    EXPECT_EQ(n.gradient_parameter.empty(), mode == Mode::kInfer);
  }
}

// A user's model has no analytic FLOP count: a profiled inference run takes
// the profiler's. x @ w of [4, 16] by [16, 4] is 2 x 4 x 16 x 4 = 512 FLOPs,
// and PyTorch counts a few more for the multiply of the 16 results (32 in
// 1.13); training keeps none (the profiler does not count backward
// operators).
TEST(Engine, AProfiledUserModelCountsItsFlopsInInference) {
  torch::jit::Module m("counted");
  m.register_parameter("w", torch::randn({16, 4}).requires_grad_(), false);
  m.define(R"(
def forward(self, x):
    return (x @ self.w) * 0.5
)");
  RunConfig config = Scripted(m, "counted", {{{4, 16}, DType::kFloat32}});
  MeasureConfig measure = Short();
  measure.profile = true;
  measure.profile_iterations = 3;
  config.mode = Mode::kInfer;
  RunOutcome out = RunOne(config, measure, nullptr, nullptr);
  ASSERT_EQ(out.status, RunStatus::kSucceeded) << out.error;
  EXPECT_GE(out.flops_per_iteration, 512);
  EXPECT_LE(out.flops_per_iteration, 512 + 4 * 16);
  EXPECT_GT(out.achieved_tflops, 0);
  EXPECT_GT(out.memory_bytes_per_iteration, 0);
  EXPECT_EQ(out.profiled_iterations, 3);  // all asked for: the bound is far
  config.mode = Mode::kTrain;
  out = RunOne(config, measure, nullptr, nullptr);
  ASSERT_EQ(out.status, RunStatus::kSucceeded) << out.error;
  EXPECT_EQ(out.flops_per_iteration, 0);
  // Unprofiled, nothing is counted.
  config.mode = Mode::kInfer;
  EXPECT_EQ(RunOne(config, Short(), nullptr, nullptr).flops_per_iteration, 0);
}

// LibTorch's CPU allocator does not say "out of memory": it says "can't
// allocate memory". A model whose allocation the host refuses (here 4 PiB)
// ran out of memory, so that a batch sweep skips the larger batches.
TEST(Engine, TheCpuAllocatorsRefusalIsOutOfMemory) {
  torch::jit::Module m("greedy");
  m.define(R"(
def forward(self, x):
    big = torch.empty([1125899906842624])
    return x + big[0]
)");
  RunConfig config = Scripted(m, "greedy", {{{4, 16}, DType::kFloat32}});
  config.mode = Mode::kInfer;
  RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
  EXPECT_EQ(out.status, RunStatus::kOutOfMemory) << out.error;
  EXPECT_NE(out.error.find("allocate"), std::string::npos) << out.error;
}

// On the CPU, peak allocated is the tensors' own peak (not the process's
// RSS): an inference batch of 1,024 32x32 images holds 12 MiB more input
// than one of 64, and both hold less than the process.
TEST(Engine, CpuPeakAllocatedIsTheTensorsOwnAndGrowsWithTheBatch) {
  std::map<int, int64_t> peak;
  for (int batch : {64, 1024}) {
    RunConfig config = Small("mlp");
    config.mode = Mode::kInfer;
    config.batch_size = batch;
    RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
    ASSERT_EQ(out.status, RunStatus::kSucceeded) << out.error;
    peak[batch] = out.peak_device_allocated_bytes;
    EXPECT_GT(out.peak_device_allocated_bytes, 0);
    EXPECT_LT(out.peak_device_allocated_bytes, out.peak_host_rss_bytes);
  }
  const int64_t input_growth = int64_t{1024 - 64} * 3 * 32 * 32 * 4;
  EXPECT_GE(peak[1024] - peak[64], input_growth) << peak[64] << " then " << peak[1024];
  // A 1024 x 1024 matmul holds its two inputs and its output: 12 MiB.
  RunConfig matmul = Small("matmul");
  matmul.matmul_m = matmul.matmul_n = matmul.matmul_k = 1024;
  RunOutcome out = RunOne(matmul, Short(), nullptr, nullptr);
  ASSERT_EQ(out.status, RunStatus::kSucceeded) << out.error;
  EXPECT_GE(out.peak_device_allocated_bytes, 3 * 1024 * 1024 * 4);
  EXPECT_LT(out.peak_device_allocated_bytes, 8 * 1024 * 1024 * 4);
}

TEST(Engine, CorruptTorchScriptFileFailsTheRunWithItsError) {
  const std::string path = ::testing::TempDir() + "gpubench_engine_corrupt.pt";
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    const std::string junk(4096, 'z');
    std::fwrite(junk.data(), 1, junk.size(), f);
    std::fclose(f);
  }
  RunConfig config = Small("torchscript");
  config.mode = Mode::kInfer;
  config.model_path = path;
  config.inputs = {{{4, 16}, DType::kFloat32}};
  RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
  EXPECT_EQ(out.status, RunStatus::kFailed);
  EXPECT_FALSE(out.error.empty());
  EXPECT_EQ(out.error.find("Exception raised from"), std::string::npos) << out.error;
}

TEST(Engine, AotInductorPackagesRunWhereLibTorchHasTheLoader) {
  RunConfig config = Small("torchscript");
  config.mode = Mode::kInfer;
  config.inputs = {{{4, 16}, DType::kFloat32}};
  config.model_format = ModelFormat::kAotiPackage;
  const std::string path = ::testing::TempDir() + "gpubench_engine_tiny.pt2";
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
  // Compiled here by the matching Python torch (deploy/build.sh installs the
  // wheel for this flavour): about a minute on two cores.
  const std::string script = ::testing::TempDir() + "gpubench_make_pt2.py";
  std::FILE* f = std::fopen(script.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(R"(import sys, torch
class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 4)
    def forward(self, x):
        return torch.relu(self.fc(x))
ep = torch.export.export(Tiny().eval(), (torch.randn(4, 16),))
torch._inductor.aoti_compile_and_package(ep, package_path=sys.argv[1])
)",
             f);
  std::fclose(f);
  ASSERT_EQ(std::system(("python3 '" + script + "' '" + path + "' > /dev/null 2>&1").c_str()), 0)
      << "python3 with torch " << TORCH_VERSION << " could not compile a .pt2";
  config.model_path = path;
  RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
  EXPECT_EQ(out.status, RunStatus::kSucceeded) << out.error;
  EXPECT_GT(out.throughput_samples_per_s, 0);
  config.mode = Mode::kTrain;
  out = RunOne(config, Short(), nullptr, nullptr);
  EXPECT_EQ(out.status, RunStatus::kFailed);
  EXPECT_NE(out.error.find("inference-only"), std::string::npos) << out.error;
#else
  config.model_path = path;
  RunOutcome out = RunOne(config, Short(), nullptr, nullptr);
  EXPECT_EQ(out.status, RunStatus::kFailed);
  EXPECT_NE(out.error.find("no package loader"), std::string::npos) << out.error;
#endif
}

}  // namespace
}  // namespace gpubench::engine
