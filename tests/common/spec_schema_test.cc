// The spec's schema (spec.proto's FieldSchema options) read as the rest of
// the tree reads it: every sweep axis has its field, every flag is one
// field's, and what the options declare (siblings, defaults) exists.
#include "common/spec_schema.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/spec.h"

namespace gpubench {
namespace {

using google::protobuf::FieldDescriptor;

TEST(SpecSchema, EverySweepAxisIsOneFieldsOfItsType) {
  std::map<std::string, int> axes;
  for (const SchemaField& f : SpecSchema()) {
    if (f.sweep == nullptr) continue;
    ++axes[f.sweep->name()];
    EXPECT_TRUE(f.in_run()) << f.path;
    EXPECT_EQ(f.sweep->cpp_type(), f.field()->cpp_type()) << f.path;
  }
  const google::protobuf::Descriptor* sweep = v1::Sweep::descriptor();
  for (int i = 0; i < sweep->field_count(); ++i) {
    EXPECT_EQ(axes[sweep->field(i)->name()], 1) << "Sweep." << sweep->field(i)->name();
  }
  EXPECT_EQ(axes.size(), static_cast<size_t>(sweep->field_count()));
}

TEST(SpecSchema, FlagsAreUniqueAndSiblingsAndDefaultsExist) {
  std::set<std::string> flags;
  for (const SchemaField& f : SpecSchema()) {
    const v1::FieldSchema& s = *f.schema;
    EXPECT_FALSE(s.help().empty()) << f.path;
    if (!s.flag().empty()) {
      EXPECT_TRUE(flags.insert(s.flag()).second) << "--" << s.flag() << " twice";
      EXPECT_EQ(s.flag().find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-"),
                std::string::npos)
          << s.flag();
    }
    for (const std::string& name : s.also_sets()) {
      const FieldDescriptor* sibling = f.field()->containing_type()->FindFieldByName(name);
      ASSERT_NE(sibling, nullptr) << f.path << " also_sets " << name;
      EXPECT_TRUE(sibling->cpp_type() == FieldDescriptor::CPPTYPE_BOOL ||
                  sibling->cpp_type() == f.field()->cpp_type())
          << f.path << " also_sets " << name;
    }
    if (s.default_number() != 0) {
      // Filled at submit: outside the runs (whose defaults the registry
      // gives) or in a serving run's load (FillConfigDefaults fills it), a
      // number that reads 0 as unset, within its bounds.
      EXPECT_TRUE(!f.in_run() || f.field()->containing_type() == v1::ServeLoad::descriptor())
          << f.path;
      EXPECT_TRUE(s.zero_is_default()) << f.path;
      EXPECT_TRUE(s.default_number() >= s.min() && s.default_number() <= s.max()) << f.path;
    }
    if (f.bounded()) EXPECT_LE(s.min(), s.max()) << f.path;
  }
  EXPECT_GE(flags.size(), 50u);
}

// A flag's value sets the base field (and its siblings); a list sweeps it,
// and each point carries its value.
TEST(SpecSchema, TextSetsTheFieldOrItsAxis) {
  v1::JobSpec spec;
  ASSERT_TRUE(SetFromText(*SchemaFieldByFlag("matmul-size"), "1024", false, &spec).ok());
  EXPECT_EQ(spec.base().params().matmul_m(), 1024);
  EXPECT_EQ(spec.base().params().matmul_n(), 1024);
  EXPECT_EQ(spec.base().params().matmul_k(), 1024);
  ASSERT_TRUE(SetFromText(*SchemaFieldByFlag("top-operators"), "7", false, &spec).ok());
  EXPECT_TRUE(spec.profiling().enabled());
  EXPECT_EQ(SetFromText(*SchemaFieldByFlag("batch"), "0", false, &spec).message(),
            "must be in [1, 65536], got 0");
  EXPECT_EQ(SetFromText(*SchemaFieldByFlag("precision"), "fp64", false, &spec).message(),
            "unknown Precision \"fp64\"; expected one of fp32, tf32, fp16, bf16, fp32_default, "
            "fp8");
  spec.mutable_base()->set_workload("matmul");
  spec.mutable_base()->set_device("cpu");
  for (const char* size : {"256", "512"}) {
    ASSERT_TRUE(SetFromText(*SchemaFieldByFlag("matmul-size"), size, true, &spec).ok());
  }
  ASSERT_TRUE(SetFromText(*SchemaFieldByFlag("precision"), "bf16", true, &spec).ok());
  ASSERT_TRUE(SetFromText(*SchemaFieldByFlag("precision"), "fp32", true, &spec).ok());
  auto runs = ExpandSweep(spec);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 4u);
  // Sweep's declaration order: precision before matmul_size, the last
  // declared axis varying fastest.
  EXPECT_EQ((*runs)[1].params().matmul_k(), 512);
  EXPECT_EQ((*runs)[1].precision(), v1::PRECISION_BF16);
  EXPECT_EQ((*runs)[2].params().matmul_n(), 256);
  EXPECT_EQ((*runs)[2].precision(), v1::PRECISION_FP32);
}

// A copy to each peer GPU sweeps peer_device; a run that sets it reaches
// beyond its own device, so its job takes the whole host. Other workloads
// do not read it, and are told so.
TEST(SpecSchema, APeerCopyTakesTheHost) {
  auto spec = ParseJobSpecJson(R"({"base": {"workload": "copy", "device": "cuda:0",
      "params": {"copyDirection": "COPY_DIRECTION_DEVICE_TO_DEVICE"}},
      "sweep": {"peerDevice": [0, 1]}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto runs = ExpandSweep(*spec);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_TRUE((*runs)[0].params().has_peer_device());
  EXPECT_EQ((*runs)[1].params().peer_device(), 1);
  EXPECT_TRUE(TakesHost((*runs)[0]));
  v1::RunConfig own = (*runs)[0];
  own.mutable_params()->clear_peer_device();
  EXPECT_FALSE(TakesHost(own));
  EXPECT_EQ(ParamsReadBy("copy"),
            (std::vector<std::string>{"copy_bytes", "copy_direction", "peer_device", "copy_kernel"}));
  v1::RunConfig mlp;
  mlp.set_workload("mlp");
  mlp.mutable_params()->set_peer_device(1);
  EXPECT_EQ(UnreadParams(mlp), std::vector<std::string>{"peer_device"});
  spec->mutable_sweep()->set_peer_device(1, 64);
  EXPECT_EQ(ValidateJobSpec(*spec).message(),
            "spec.sweep.peer_device[1]: must be in [0, 63], got 64");
}

// The plan holds the settings the worker uses; a bound longer than the
// default keeps the run's whole minimum time.
TEST(SpecSchema, DefaultsAreFilledIntoThePlan) {
  v1::JobSpec spec;
  FillSpecDefaults(&spec);
  EXPECT_EQ(spec.measurement().warmup_iterations(), 10);
  EXPECT_EQ(spec.measurement().min_time_ms(), 1000);
  EXPECT_EQ(spec.measurement().max_time_ms(), 30000);
  EXPECT_DOUBLE_EQ(spec.measurement().cv_threshold(), 0.02);
  EXPECT_EQ(spec.measurement().max_iterations(), 100000);
  EXPECT_EQ(spec.profiling().iterations(), 5);
  EXPECT_EQ(spec.telemetry().interval_ms(), 100);
  EXPECT_FALSE(spec.profiling().enabled());
  v1::JobSpec longer;
  longer.mutable_measurement()->set_min_time_ms(45000);
  longer.mutable_measurement()->set_trials(3);
  FillSpecDefaults(&longer);
  EXPECT_EQ(longer.measurement().max_time_ms(), 45000);
  EXPECT_EQ(longer.measurement().trials(), 3);
  // A spec filled once is what it was: filling again changes nothing.
  v1::JobSpec again = longer;
  FillSpecDefaults(&again);
  EXPECT_EQ(again.SerializeAsString(), longer.SerializeAsString());
}

// One rule for every number: the base, the sweep and the settings outside
// the runs name the field and its bounds alike.
TEST(SpecSchema, BoundsNameTheField) {
  auto message = [](const char* json) {
    auto spec = ParseJobSpecJson(json);
    if (!spec.ok()) return std::string(spec.status().message());
    return std::string(ValidateJobSpec(*spec).message());
  };
  EXPECT_EQ(message(R"({"base": {"workload": "gpt", "params": {"promptLength": 2000000}}})"),
            "spec.base.params.prompt_length: must be in [1, 1048576], got 2000000");
  EXPECT_EQ(message(R"({"base": {"workload": "gpt"}, "sweep": {"newTokens": [8, 0]}})"),
            "spec.sweep.new_tokens[1]: must be in [1, 1048576], got 0");
  EXPECT_EQ(message(R"({"base": {"workload": "mlp"}, "telemetry": {"intervalMs": 5}})"),
            "spec.telemetry.interval_ms: must be in [10, 60000], got 5");
  // An int64 at its ends is named as given, not through a double.
  EXPECT_EQ(message(R"({"base": {"workload": "mlp"}, "timeoutS": "9223372036854775807"})"),
            "spec.timeout_s: must be in [0, 604800], got 9223372036854775807");
  EXPECT_EQ(message(R"({"base": {"workload": "matmul", "params": {"matmulN": "-9223372036854775808"}}})"),
            "spec.base.params.matmul_n: must be in [1, 65536], got -9223372036854775808");
  EXPECT_EQ(message(R"({"base": {"workload": "mlp"}, "sweep": {"precision": [1, 9]}})"),
            "spec.sweep.precision[1]: unknown Precision value 9");
  EXPECT_EQ(message(R"({"base": {"workload": "mlp"}, "measurement": {"trials": 0}})"),
            "spec.measurement.trials: 0 is not a value here: protobuf reads 0 as unset, and "
            "unset is the default; leave the field out for the default, or give 1 or more");
}

}  // namespace
}  // namespace gpubench
