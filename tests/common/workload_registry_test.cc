// The workload registry as a spec meets it: the defaults it lists are the
// ones a run gets, and what does not apply to a workload is refused.
#include "common/workload_registry.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "common/spec.h"
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
    auto runs = ExpandSweep(spec);
    ASSERT_TRUE(runs.ok()) << w->name << ": " << runs.status();
    ASSERT_EQ(runs->size(), 1u);
    const v1::WorkloadParams& planned = (*runs)[0].params();
    const auto* reflection = planned.GetReflection();
    for (const std::string& name : w->params) {
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

}  // namespace
}  // namespace gpubench
