// Compiled execution (execution aot): the Python twins of the built-in models
// against the C++ engine's, and the package cache's key. The compiled run
// itself is tested end to end in cli_test (CliDaemon.Compiled...).
#include "worker/aot.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_join.h"
#include "tests/support/command.h"
#include "tests/support/planned_config.h"
#include "worker/engine/engine.h"

namespace gpubench::worker {
namespace {

engine::RunConfig Config(const std::string& workload) {
  engine::RunConfig c = testing_support::Planned(workload);
  c.mode = engine::Mode::kInfer;
  c.execution = engine::Execution::kAot;
  c.batch_size = 8;
  return c;
}

TEST(Aot, CacheKeyChangesWithWhatChangesTheCompiledCode) {
  const engine::RunConfig base = Config("resnet50");
  const std::string key = AotCacheKey(base, "cuda sm_90 torch 2.11.0", "twin");
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(AotCacheKey(base, "cuda sm_90 torch 2.11.0", "twin"), key);
  std::set<std::string> keys = {key};
  auto differs = [&](const engine::RunConfig& c, const std::string& target,
                     const std::string& digest) {
    return keys.insert(AotCacheKey(c, target, digest)).second;
  };
  engine::RunConfig c = base;
  c.batch_size = 16;
  EXPECT_TRUE(differs(c, "cuda sm_90 torch 2.11.0", "twin")) << "batch";
  c = base;
  c.precision = engine::Precision::kFp16;
  EXPECT_TRUE(differs(c, "cuda sm_90 torch 2.11.0", "twin")) << "precision";
  c = base;
  c.channels_last = true;
  EXPECT_TRUE(differs(c, "cuda sm_90 torch 2.11.0", "twin")) << "channels_last";
  c = base;
  c.image_size = 228;
  EXPECT_TRUE(differs(c, "cuda sm_90 torch 2.11.0", "twin")) << "image_size";
  c = base;
  c.num_classes = 10;
  EXPECT_TRUE(differs(c, "cuda sm_90 torch 2.11.0", "twin")) << "num_classes";
  // A language model's package is compiled for its generation and its
  // attention backend too.
  const engine::RunConfig llama = Config("llama");
  EXPECT_TRUE(differs(llama, "cuda sm_90 torch 2.11.0", "twin")) << "llama";
  const std::pair<const char*, void (*)(engine::RunConfig*)> kGeneration[] = {
      {"prompt_length", [](engine::RunConfig* l) { l->prompt_length += 1; }},
      {"new_tokens", [](engine::RunConfig* l) { l->new_tokens += 1; }},
      {"num_kv_heads", [](engine::RunConfig* l) { l->num_kv_heads = 4; }},
      {"ffn_hidden_size", [](engine::RunConfig* l) { l->ffn_hidden_size = 4096; }},
      {"attention", [](engine::RunConfig* l) { l->attention = engine::Attention::kMath; }},
      // A serving run's package: its own models, its cache of the longest
      // prompt and output.
      {"serving's longest prompt",
       [](engine::RunConfig* l) {
         l->mode = engine::Mode::kServe;
         l->input_len_max = 600;
       }},
      {"serving's longest output", [](engine::RunConfig* l) {
         l->mode = engine::Mode::kServe;
         l->output_len += 7;
       }}};
  for (const auto& [name, change] : kGeneration) {
    c = llama;
    change(&c);
    EXPECT_TRUE(differs(c, "cuda sm_90 torch 2.11.0", "twin")) << name;
  }
  EXPECT_TRUE(differs(base, "cuda sm_80 torch 2.11.0", "twin")) << "architecture";
  EXPECT_TRUE(differs(base, "cuda sm_90 torch 2.12.0", "twin")) << "torch";
  EXPECT_TRUE(differs(base, "cpu torch 2.11.0", "twin")) << "device";
  EXPECT_TRUE(differs(base, "cuda sm_90 torch 2.11.0", "twin2")) << "the twin's sources";
  // What the package does not depend on shares it: the device index, the
  // measurement, the input pipeline.
  c = base;
  c.device = "cuda:1";
  c.input_source = engine::InputSource::kHost;
  EXPECT_EQ(AotCacheKey(c, "cuda sm_90 torch 2.11.0", "twin"), key);
}

// A CPU package is compiled for this CPU's vector extensions, so its target
// (and so its cache key) names them: a data directory moved to a CPU without
// AVX-512 must not reuse a package that uses it.
TEST(Aot, ACpuTargetNamesTheCpusVectorExtensions) {
  auto target = engine::CompileTarget("cpu");
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->rfind("cpu ", 0), 0u) << *target;
  EXPECT_NE(target->find(" torch "), std::string::npos) << *target;
  const auto flags = testing_support::RunCommand("grep -m1 -w -o -E 'avx2|avx512f' /proc/cpuinfo");
  for (const char* isa : {"avx2", "avx512f"}) {
    const bool has = flags.output.find(isa) != std::string::npos;
    EXPECT_EQ(target->find(std::string(" ") + isa + " ") != std::string::npos, has)
        << isa << " in " << *target;
  }
}

// The Python twins' defaults (for the Python reference) are the engine's.
TEST(Aot, PythonDefaultsAreTheEngines) {
  for (const char* w : {"mlp", "simple_cnn", "resnet18", "resnet50", "unet", "bilstm",
                        "cnn_lstm", "transformer"}) {
    SCOPED_TRACE(w);
    const engine::RunConfig c = Config(w);
    const auto py = testing_support::RunCommand(
        "cd '" + PythonDir() + "' && python3 -c 'import sys; "
        "from gpubench_models.defaults import params; p = params(sys.argv[1]); "
        "print(\" \".join(str(p[k]) for k in (\"model_size\", \"image_size\", "
        "\"num_classes\", \"sequence_length\", \"num_layers\", \"hidden_size\", "
        "\"num_heads\", \"vocab_size\")))' " + w);
    ASSERT_EQ(py.exit_code, 0) << py.output;
    const std::string cpp = absl::StrJoin(
        {c.model_size, std::to_string(c.image_size), std::to_string(c.num_classes),
         std::to_string(c.sequence_length), std::to_string(c.num_layers),
         std::to_string(c.hidden_size), std::to_string(c.num_heads),
         std::to_string(c.vocab_size)},
        " ");
    EXPECT_EQ(py.output, cpp + "\n");
  }
}

#ifdef GPUBENCH_TEST_AOT
// One Python twin per model, with the C++ model's parameter count at the
// defaults and at the other sizes users pick (python3 has the wheel's torch
// in this flavour).
TEST(Aot, PythonTwinsHaveTheParameterCountsOfTheCppModels) {
  std::vector<engine::RunConfig> configs;
  for (const char* w : {"mlp", "simple_cnn", "resnet18", "resnet50", "unet", "bilstm",
                        "cnn_lstm", "transformer"}) {
    configs.push_back(Config(w));
  }
  for (const char* size : {"medium", "large"}) {
    configs.push_back(Config("mlp"));
    configs.back().model_size = size;
  }
  configs.push_back(Config("transformer"));
  configs.back().decoder = true;
  configs.back().num_layers = 2;
  configs.push_back(Config("resnet50"));
  configs.back().num_classes = 1000;
  configs.push_back(Config("simple_cnn"));
  configs.back().image_size = 64;
  // The language models: gpt 124m (tied head), and llama in a small custom
  // shape with grouped-query attention (its 1b is 1.5 billion parameters).
  configs.push_back(Config("gpt"));
  configs.push_back(Config("llama"));
  engine::RunConfig& llama = configs.back();
  llama.num_layers = 2;
  llama.hidden_size = 128;
  llama.num_heads = 4;
  llama.num_kv_heads = 2;
  llama.ffn_hidden_size = 320;
  llama.vocab_size = 1000;
  for (const engine::RunConfig& c : configs) {
    const std::vector<std::string> args = AotModelArgs(c);
    SCOPED_TRACE(absl::StrJoin(args, " "));
    auto cpp = engine::ModelParameterCount(c);
    ASSERT_TRUE(cpp.ok()) << cpp.status();
    const auto py = testing_support::RunCommand(
        "cd '" + PythonDir() + "' && python3 -m gpubench_models.aot --count-only '" +
        absl::StrJoin(args, "' '") + "'");
    ASSERT_EQ(py.exit_code, 0) << py.output;
    const size_t at = py.output.rfind("{\"parameters\": ");
    ASSERT_NE(at, std::string::npos) << py.output;
    EXPECT_EQ(std::stoll(py.output.substr(at + 15)), *cpp) << py.output;
  }
}

// Where the weights can be shared, the outputs agree: each C++ model's
// parameters and buffers, saved by module name, load strictly into its Python
// twin (every name and shape matches), which then gives the C++ output on
// the same input.
TEST(Aot, PythonTwinsGiveTheCppModelsOutputsOnTheirWeights) {
  std::vector<engine::RunConfig> configs;
  for (const char* w : {"mlp", "simple_cnn", "resnet18", "resnet50", "unet", "bilstm",
                        "cnn_lstm", "transformer"}) {
    configs.push_back(Config(w));
    engine::RunConfig& c = configs.back();
    c.batch_size = 2;  // small shapes: the check is of the layers, not of speed
    if (c.workload == "resnet18" || c.workload == "resnet50") c.image_size = 64;
    if (c.workload == "unet") c.image_size = 32;
    if (c.workload == "bilstm") c.sequence_length = 16;
    if (c.workload == "cnn_lstm") c.sequence_length = 4;
    if (c.workload == "transformer") {
      c.sequence_length = 16;
      c.num_layers = 2;
    }
  }
  configs.push_back(Config("mlp"));
  configs.back().model_size = "medium";
  configs.push_back(Config("transformer"));
  configs.back().decoder = true;
  configs.back().sequence_length = 16;
  configs.back().num_layers = 1;
  for (const engine::RunConfig& c : configs) {
    const std::vector<std::string> args = AotModelArgs(c);
    SCOPED_TRACE(absl::StrJoin(args, " "));
    const std::string path = ::testing::TempDir() + "/twin_" + c.workload + ".pt";
    ASSERT_TRUE(engine::SaveModelCheckpoint(c, path).ok());
    const auto py = testing_support::RunCommand(
        "cd '" + PythonDir() + "' && python3 -m gpubench_models.check '" + path + "' '" +
        absl::StrJoin(args, "' '") + "'");
    EXPECT_EQ(py.exit_code, 0) << py.output;
    EXPECT_NE(py.output.find("\"ok\": true"), std::string::npos) << py.output;
  }
}
#endif

}  // namespace
}  // namespace gpubench::worker
