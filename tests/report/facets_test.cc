#include "report/facets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "client/cli_internal.h"

namespace gpubench::report {
namespace {

using internal::Bit;
using internal::FacetValues;
using internal::GroupLabel;
using internal::kBatch;
using internal::kDevice;
using internal::kFacetCount;
using internal::kLoaders;
using internal::kPrecision;
using internal::kWorkload;
using internal::ValuesOf;

v1::RunConfig Model(const std::string& workload) {
  v1::RunConfig c;
  c.set_workload(workload);
  c.set_mode(v1::MODE_TRAIN);
  c.set_precision(v1::PRECISION_FP32);
  return c;
}

// What `gpubench runs` prints in its config column for each config.
std::vector<std::string> ConfigColumn(
    const std::vector<v1::RunConfig>& configs) {
  std::vector<v1::Run> runs;
  for (const v1::RunConfig& c : configs)
    *runs.emplace_back().mutable_config() = c;
  const client::Table table = client::RunsTable(runs, /*with_job_column=*/false, client::Format::kTable);
  const auto column =
      std::find(table.header.begin(), table.header.end(), "config");
  EXPECT_NE(column, table.header.end());
  std::vector<std::string> cells;
  for (const auto& row : table.rows)
    cells.push_back(row[column - table.header.begin()]);
  return cells;
}

TEST(DescribeConfig, IsWhatTheCliRunsTablePrints) {
  std::vector<v1::RunConfig> configs;
  std::vector<std::string> expected;
  auto add = [&](const v1::RunConfig& c, const std::string& label) {
    configs.push_back(c);
    expected.push_back(label);
  };

  v1::RunConfig tuned = Model("resnet50");
  tuned.set_device("cuda:0");
  tuned.set_batch_size(64);
  tuned.set_precision(v1::PRECISION_FP16);
  tuned.set_channels_last(true);
  tuned.set_cudnn_benchmark(true);
  tuned.set_execution(v1::EXECUTION_CUDA_GRAPH);
  add(tuned, "resnet50 train b64 fp16 cl cudnn-bm graph cuda:0");

  v1::RunConfig plain = Model("mlp");
  plain.mutable_params()->set_model_size("small");
  plain.set_mode(v1::MODE_INFER);
  plain.set_device("auto");  // "auto" is not a place: left out
  add(plain, "mlp infer b32");  // small and fp32: the defaults go unsaid

  v1::RunConfig host = Model("resnet18");
  host.set_batch_size(128);
  host.set_device("cpu");
  host.set_input_source(v1::INPUT_SOURCE_HOST);
  host.mutable_pipeline()->set_loader_threads(4);
  host.mutable_pipeline()->set_pinned_memory(true);
  add(host, "resnet18 train b128 host/4L/pinned cpu");

  v1::RunConfig matmul = Model("matmul");
  matmul.set_precision(v1::PRECISION_BF16);
  matmul.set_batch_size(8);  // no batch for a kernel
  matmul.mutable_params()->set_matmul_m(4096);
  matmul.mutable_params()->set_matmul_n(1024);
  matmul.mutable_params()->set_matmul_k(512);
  add(matmul, "matmul 4096x1024x512 bf16");

  v1::RunConfig copy = Model("copy");
  copy.mutable_params()->set_copy_bytes(int64_t{256} << 20);
  copy.mutable_params()->set_copy_direction(v1::COPY_DIRECTION_DEVICE_TO_HOST);
  copy.mutable_pipeline()->set_pinned_memory(true);
  copy.set_device("cuda:1");
  add(copy, "copy 256.0 MiB device_to_host pinned cuda:1");
  copy.mutable_pipeline()->set_pinned_memory(false);
  add(copy, "copy 256.0 MiB device_to_host pageable cuda:1");

  // Whatever else differs from the workload's defaults is named, so that
  // two configs that differ never share a label.
  v1::RunConfig tweaked = Model("resnet18");
  tweaked.set_batch_size(16);
  tweaked.mutable_params()->set_image_size(64);
  tweaked.set_learning_rate(0.5);
  tweaked.set_input_source(v1::INPUT_SOURCE_HOST);
  tweaked.mutable_pipeline()->set_extra_cost_us_per_sample(500);
  add(tweaked, "resnet18 train b16 host/0L image_size=64 extra_cost_us_per_sample=500 lr=0.5");

  // A user model's label keeps its file name: two models in one folder
  // never read alike.
  v1::RunConfig scripted = Model("torchscript");
  scripted.set_mode(v1::MODE_INFER);
  scripted.mutable_params()->set_model_path("models/resnet_traced.pt");
  add(scripted, "torchscript infer b32 model_path=models/resnet_traced.pt");
  scripted.mutable_params()->set_model_path("vision/production/2026-11/resnet_traced_v2.pt");
  add(scripted, "torchscript infer b32 model_path=\u2026/resnet_traced_v2.pt");

  add(Model("empty"), "empty");
  add(v1::RunConfig(), "? train b32");

  const std::vector<std::string> printed = ConfigColumn(configs);
  ASSERT_EQ(printed.size(), configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    EXPECT_EQ(DescribeConfig(configs[i]), expected[i]);
    EXPECT_EQ(printed[i], expected[i]);
  }
}

TEST(Facets, ValuesNameWhereTheRunRanAndWhatDoesNotApply) {
  v1::RunConfig c = Model("resnet50");
  c.set_device("auto");
  v1::RunResult r;
  r.set_resolved_device("cuda:0");
  const FacetValues v = ValuesOf(c, r);
  EXPECT_EQ(v[kDevice], "cuda:0");
  EXPECT_EQ(v[kBatch], "default");
  EXPECT_EQ(v[kLoaders], "-");  // device input has no loader threads
  EXPECT_EQ(ValuesOf(c, {})[kDevice], "auto");
}

TEST(Facets, GroupLabelNamesTheVaryingFacetsThatApply) {
  v1::RunConfig c = Model("resnet18");
  c.set_device("cuda:0");
  c.set_precision(v1::PRECISION_FP16);
  c.set_batch_size(64);
  c.set_input_source(v1::INPUT_SOURCE_HOST);
  c.mutable_pipeline()->set_loader_threads(4);
  const FacetValues v = ValuesOf(c, {});

  std::array<bool, kFacetCount> varying{};
  for (auto f : {kWorkload, kPrecision, kBatch, kLoaders}) varying[f] = true;
  EXPECT_EQ(GroupLabel(v, varying, 0), "resnet18, batch 64, fp16, 4 loaders");
  // A plot of batch size names the rest.
  EXPECT_EQ(GroupLabel(v, varying, Bit(kBatch)), "resnet18, fp16, 4 loaders");

  // Loader threads vary in the job but do not apply to device input.
  c.set_input_source(v1::INPUT_SOURCE_DEVICE);
  EXPECT_EQ(GroupLabel(ValuesOf(c, {}), varying, Bit(kWorkload)),
            "batch 64, fp16");
  EXPECT_EQ(GroupLabel(v, {}, 0), "");
}

}  // namespace
}  // namespace gpubench::report
