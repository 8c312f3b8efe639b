// The workload registry as a spec meets it: the defaults it lists are the
// ones a run gets, and what does not apply to a workload is refused.
#include "common/workload_registry.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "common/gpu_peaks.h"
#include "common/spec.h"
#include "common/spec_schema.h"
#include "tests/common/spec_test_util.h"

namespace gpubench {
namespace {

using spec_test::ErrorOf;

// The registry is what a spec gets: each workload's listed parameters are
// fields of WorkloadParams, and a spec naming the workload alone plans
// exactly the defaults `gpubench workloads` prints.
TEST(WorkloadRegistry, PlannedDefaultsAreTheListedOnes) {
  const google::protobuf::Descriptor* params = v1::WorkloadParams::descriptor();
  for (const WorkloadInfo* w : Workloads()) {
    v1::JobSpec spec;
    spec.mutable_base()->set_workload(w->name);
    if (w->name == "torchscript") {
      spec.mutable_base()->mutable_params()->set_model_path("m.pt");
      spec.mutable_base()->mutable_params()->add_inputs()->add_shape(1);
    }
    // A language model's prompt and new tokens are its inference's.
    if (w->language_model) spec.mutable_base()->set_mode(v1::MODE_INFER);
    auto runs = ExpandSweep(spec);
    ASSERT_TRUE(runs.ok()) << w->name << ": " << runs.status();
    ASSERT_EQ(runs->size(), 1u);
    const v1::WorkloadParams& planned = (*runs)[0].params();
    const auto* reflection = planned.GetReflection();
    for (const std::string& name : ParamsReadBy(w->name)) {
      const google::protobuf::FieldDescriptor* field = params->FindFieldByName(name);
      ASSERT_NE(field, nullptr) << w->name << " lists " << name;
      const std::string want = DefaultText(*w, name);
      if (want.empty() || field->is_repeated()) continue;
      std::string got;
      switch (field->cpp_type()) {
        case google::protobuf::FieldDescriptor::CPPTYPE_STRING:
          got = reflection->GetString(planned, field);
          break;
        case google::protobuf::FieldDescriptor::CPPTYPE_INT32:
          got = std::to_string(reflection->GetInt32(planned, field));
          break;
        case google::protobuf::FieldDescriptor::CPPTYPE_INT64:
          got = std::to_string(reflection->GetInt64(planned, field));
          break;
        case google::protobuf::FieldDescriptor::CPPTYPE_ENUM:
          got = absl::AsciiStrToLower(reflection->GetEnum(planned, field)->name());
          break;
        default:
          FAIL() << name;
      }
      EXPECT_TRUE(absl::EndsWith(got, want)) << w->name << "." << name << ": " << got;
    }
  }
}

// What does not apply to a workload is refused at submit, naming the field,
// rather than failing its run on the host.
TEST(WorkloadRegistry, WhatDoesNotApplyIsRefusedNamingTheField) {
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "unet", "params": {"imageSize": 8}}})")
                .find("params.image_size: unet needs at least 16"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(R"({"base": {"workload": "unet", "params": {"imageSize": 16}}})"), "");
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "ddp", "mode": "MODE_INFER"}})").find(".mode: ddp"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "collective", "execution": "EXECUTION_CUDA_GRAPH",
                                 "device": "cuda"}})")
                .find(".execution: collective runs eager only"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "matmul", "mode": "MODE_INFER",
                                 "execution": "EXECUTION_AOT"}})")
                .find(".execution: aot compiles the built-in models (mlp, simple_cnn"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "nope"}})").find("expected one of mlp, simple_cnn"),
            std::string::npos);
}

// A language model's named size sets its shape; dimensions given alone
// make a custom one; a named size with other dimensions is refused, naming
// the field, as is a context the prompt and new tokens pass.
TEST(WorkloadRegistry, LanguageModelSizesAndTheirBounds) {
  auto plan = [](const std::string& json) {
    auto spec = ParseJobSpecJson(json);
    EXPECT_TRUE(spec.ok()) << spec.status();
    auto runs = ExpandSweep(*spec);
    EXPECT_TRUE(runs.ok()) << runs.status();
    return runs.ok() && runs->size() == 1 ? (*runs)[0] : v1::RunConfig();
  };
  v1::RunConfig c = plan(R"({"base": {"workload": "gpt", "mode": "infer"}})");
  EXPECT_EQ(c.params().model_size(), "124m");
  EXPECT_EQ(c.params().num_layers(), 12);
  EXPECT_EQ(c.params().hidden_size(), 768);
  EXPECT_EQ(c.params().vocab_size(), 50304);
  EXPECT_EQ(c.params().sequence_length(), 1024);
  EXPECT_EQ(c.params().prompt_length(), 512);
  EXPECT_EQ(c.params().new_tokens(), 128);
  EXPECT_EQ(c.attention(), v1::ATTENTION_AUTO);
  c = plan(R"({"base": {"workload": "gpt", "params": {"modelSize": "1.3b"}}})");
  EXPECT_EQ(c.params().num_layers(), 24);
  EXPECT_EQ(c.params().hidden_size(), 2048);
  EXPECT_EQ(c.params().num_heads(), 16);
  EXPECT_EQ(c.params().prompt_length(), 0);  // training has no prompt
  c = plan(R"({"base": {"workload": "llama", "params": {"numLayers": 2, "hiddenSize": 64,
               "numHeads": 4, "numKvHeads": 2, "ffnHiddenSize": 96, "vocabSize": 100}}})");
  EXPECT_EQ(c.params().model_size(), "custom");
  EXPECT_EQ(c.params().num_kv_heads(), 2);
  c = plan(R"({"base": {"workload": "llama", "params": {"modelSize": "1b"}}})");
  EXPECT_EQ(c.params().num_kv_heads(), 8);
  EXPECT_EQ(c.params().ffn_hidden_size(), 8192);
  EXPECT_EQ(c.params().vocab_size(), 128256);
  // A stored run's config (its size and the same dimensions) plans again.
  EXPECT_EQ(ErrorOf(R"({"base": {"workload": "gpt", "params": {"modelSize": "350m",
                                 "numLayers": 24, "hiddenSize": 1024, "numHeads": 16}}})"),
            "");
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "gpt", "params": {"modelSize": "350m",
                                 "numLayers": 4}}})")
                .find("params.num_layers: model_size 350m has 24; leave it out, or use "
                      "model_size custom"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "mlp", "params": {"modelSize": "124m"}}})")
                .find("params.model_size: mlp takes small, medium, large"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "gpt", "mode": "infer",
                                 "params": {"promptLength": 1000, "newTokens": 100}}})")
                .find("params.new_tokens: prompt_length 1000 + new_tokens 100 passes gpt's "
                      "context, sequence_length 1024"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "llama", "params": {"modelSize": "custom",
                                 "numHeads": 32, "numKvHeads": 6}}})")
                .find("params.num_kv_heads: num_kv_heads 6 must divide num_heads 32"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "resnet50", "attention": "flash"}})")
                .find(".attention: resnet50 has no attention"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "resnet50", "precision": "fp8"}})")
                .find(".precision: fp8 is for the matmul workload"),
            std::string::npos);
}

// The registry's costs are the architectures' own: the counts the Python
// twins (bench/reference/lm.py) give for the same shapes, and the
// training FLOPs a token nanoGPT's MFU counts (6N + 12 L T d), N the
// weights of the products (the tied head's table once; no norms, biases or
// position table).
TEST(WorkloadRegistry, LanguageModelCostsAreTheTwinsCounts) {
  const WorkloadInfo* gpt = FindWorkload("gpt");
  const WorkloadInfo* llama = FindWorkload("llama");
  ASSERT_NE(gpt, nullptr);
  ASSERT_NE(llama, nullptr);
  const ModelCost gpt124 = gpt->cost(DefaultShape(*gpt));
  EXPECT_EQ(gpt124.parameters, 124475904);
  const double n = 12 * 12.0 * 768 * 768 + 768.0 * 50304;
  EXPECT_DOUBLE_EQ(gpt124.train_flops_per_sample / 1024, 6 * n + 12.0 * 12 * 1024 * 768);
  EXPECT_DOUBLE_EQ(gpt124.forward_flops_per_sample / 1024, 2 * n + 4.0 * 12 * 1024 * 768);
  EXPECT_DOUBLE_EQ(gpt124.attention_flops_per_sample / 1024, 4.0 * 12 * 1024 * 768);
  EXPECT_EQ(gpt->cost(DefaultShape(*gpt, "350m")).parameters, 354871296);
  EXPECT_EQ(llama->cost(DefaultShape(*llama)).parameters, 1498482688);
  EXPECT_EQ(llama->cost(DefaultShape(*llama, "small")).parameters, 19532032);
}

// MFU's denominators: the dense datasheet peak by the GPU's name as CUDA
// gives it, the more specific name first; none for a GPU not in the table.
TEST(GpuPeaks, DenseDatasheetPeaksByNameAndPrecision) {
  EXPECT_DOUBLE_EQ(DatasheetPeakTflops("NVIDIA H100 80GB HBM3", "bf16"), 989.4);
  EXPECT_DOUBLE_EQ(DatasheetPeakTflops("NVIDIA H100 80GB HBM3", "fp8"), 1978.9);
  EXPECT_DOUBLE_EQ(DatasheetPeakTflops("NVIDIA H100 80GB HBM3", "fp32"), 66.9);
  EXPECT_DOUBLE_EQ(DatasheetPeakTflops("NVIDIA H100 PCIe", "bf16"), 756.0);
  EXPECT_DOUBLE_EQ(DatasheetPeakTflops("NVIDIA H200", "tf32"), 494.7);
  EXPECT_DOUBLE_EQ(DatasheetPeakTflops("NVIDIA L40S", "fp16"), 362.05);
  EXPECT_DOUBLE_EQ(DatasheetPeakTflops("NVIDIA L4", "fp16"), 121.0);
  EXPECT_DOUBLE_EQ(DatasheetPeakTflops("NVIDIA A100-SXM4-80GB", "fp8"), 0);
  EXPECT_DOUBLE_EQ(DatasheetPeakTflops("NVIDIA GeForce RTX 4090", "bf16"), 0);
}

}  // namespace
}  // namespace gpubench
