#include "common/spec.h"

#include <gtest/gtest.h>

#include "google/protobuf/util/message_differencer.h"
#include "tests/common/spec_test_util.h"

namespace gpubench {
namespace {

constexpr char kSpec[] = R"({
  "name": "resnet sweep",
  "base": {"workload": "resnet50", "mode": "MODE_TRAIN", "device": "cuda:0"},
  "sweep": {"batchSize": [32, 64, 128], "precision": ["PRECISION_FP32", "PRECISION_BF16"]},
  "measurement": {"minTimeMs": "2000", "cvThreshold": 0.01},
  "labels": {"team": "vision"}
})";

TEST(SpecJson, RoundTripKeepsEveryField) {
  auto spec = ParseJobSpecJson(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->base().workload(), "resnet50");
  EXPECT_EQ(spec->sweep().batch_size_size(), 3);
  EXPECT_EQ(spec->measurement().min_time_ms(), 2000);
  auto again = ParseJobSpecJson(MessageToJson(*spec));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*spec, *again));
}

TEST(SpecJson, UnknownFieldIsRejectedByName) {
  auto spec = ParseJobSpecJson(R"({"base": {"workload": "mlp", "batchSzie": 3}})");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(spec.status().message().find("batchSzie"), std::string::npos)
      << spec.status();
}

TEST(SpecJson, WrongTypeIsRejectedByName) {
  auto spec = ParseJobSpecJson(R"({"base": {"workload": "mlp", "batchSize": "big"}})");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(spec.status().message().find("batch_size"), std::string::npos)
      << spec.status();
}

// proto3 cannot tell "batch_size": 0 from no batch size; the JSON can. A
// zero that would silently become a default is refused, naming the field
// and the default; a zero that is the default itself is taken.
TEST(SpecJson, AZeroThatWouldBecomeADefaultIsRefusedByName) {
  auto batch = ParseJobSpecJson(R"({"base": {"workload": "mlp", "batch_size": 0}})");
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(batch.status().message().find("spec.base.batch_size: 0 is not a value here"),
            std::string::npos)
      << batch.status();
  EXPECT_NE(batch.status().message().find("the default 32"), std::string::npos) << batch.status();
  auto size = ParseJobSpecJson(R"({"base": {"workload": "mlp", "params": {"imageSize": 0}}})");
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.status().message().find("spec.base.params.image_size"), std::string::npos)
      << size.status();
  auto time = ParseJobSpecJson(R"({"base": {"workload": "mlp"}, "measurement": {"min_time_ms": 0}})");
  ASSERT_FALSE(time.ok());
  EXPECT_NE(time.status().message().find("spec.measurement.min_time_ms"), std::string::npos)
      << time.status();
  // Zero is these fields' default: taken as written.
  EXPECT_TRUE(ParseJobSpecJson(R"({"base": {"workload": "mlp", "pipeline": {"loader_threads": 0}},
                                   "measurement": {"seed": 0, "warmup_ms": 0}, "priority": 0})")
                  .ok());
}

// An enum name that is none of its values names the field and the values.
TEST(SpecJson, ABadEnumNameListsTheValues) {
  auto spec = ParseJobSpecJson(R"({"base": {"workload": "mlp", "mode": "trian"}})");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(spec.status().message().find("spec.base.mode: unknown Mode \"trian\"; expected one of "
                                         "train, infer"),
            std::string::npos)
      << spec.status();
  auto listed = ParseJobSpecJson(R"({"base": {"workload": "mlp"}, "sweep": {"precision": ["fp16", "fp61"]}})");
  ASSERT_FALSE(listed.ok());
  EXPECT_NE(listed.status().message().find("spec.sweep.precision[1]"), std::string::npos)
      << listed.status();
}

TEST(SpecValidation, NamesTheBadSweepValue) {
  auto spec = ParseJobSpecJson(
      R"({"base": {"workload": "mlp"}, "sweep": {"batchSize": [8, 16, 0]}})");
  ASSERT_TRUE(spec.ok());
  absl::Status s = ValidateJobSpec(*spec);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "spec.sweep.batch_size[2]: must be in [1, 65536], got 0");
}

TEST(SpecValidation, UnknownWorkloadAndDevice) {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("resnet51");
  EXPECT_NE(ValidateJobSpec(spec).message().find("spec.base.workload"), std::string::npos);
  spec.mutable_base()->set_workload("mlp");
  spec.mutable_base()->set_device("gpu7");
  EXPECT_NE(ValidateJobSpec(spec).message().find("spec.base.device"), std::string::npos);
}

// A device is exactly one of the names a lease is kept by: "cuda: 1" or
// "cuda:01" would otherwise hold a lease apart from "cuda:1" and run beside it.
TEST(SpecValidation, DeviceStringsAreExactlyTheLeaseNames) {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("mlp");
  for (const char* good : {"cpu", "mps", "auto", "cuda", "cuda:0", "cuda:1", "cuda:63",
                           "cuda:all"}) {
    spec.mutable_base()->set_device(good);
    EXPECT_TRUE(ValidateJobSpec(spec).ok()) << good << ": " << ValidateJobSpec(spec);
  }
  for (const char* bad : {"cuda: 1", "cuda:+1", "cuda:01", "cuda:-0", "cuda:1 ", " cuda:1",
                          "cuda:", "cuda:64", "cuda:1x", "CUDA:1", "cuda: all"}) {
    spec.mutable_base()->set_device(bad);
    const absl::Status s = ValidateJobSpec(spec);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("spec.base.device"), std::string::npos) << s;
  }
  spec.mutable_base()->set_device("cpu");
  spec.mutable_sweep()->add_device("cuda:0");
  spec.mutable_sweep()->add_device("cuda: 0");
  EXPECT_NE(ValidateJobSpec(spec).message().find("spec.sweep.device[1]"), std::string::npos)
      << ValidateJobSpec(spec);
}

// Compiled execution: inference of the built-in models, the mode from the
// sweep counting (and unset meaning train), a CUDA device for its graph form.
TEST(SpecValidation, CompiledExecutionIsInferenceOfTheBuiltInModels) {
  auto expand = [](const std::string& json) -> absl::Status {
    auto spec = ParseJobSpecJson(json);
    if (!spec.ok()) return spec.status();
    return ExpandSweep(*spec).status();
  };
  EXPECT_TRUE(expand(R"({"base": {"workload": "resnet50", "mode": "MODE_INFER",
                                  "execution": "EXECUTION_AOT"}})").ok());
  EXPECT_TRUE(expand(R"({"base": {"workload": "mlp", "execution": "EXECUTION_AOT"},
                         "sweep": {"mode": ["MODE_INFER"]}})").ok());
  EXPECT_EQ(expand(R"({"base": {"workload": "mlp", "execution": "EXECUTION_AOT"}})").message(),
            "spec.sweep (run 0).execution: aot compiles inference only (AOTInductor); use mode "
            "infer, or execution eager or cuda_graph to train");
  EXPECT_NE(expand(R"({"base": {"workload": "matmul", "mode": "MODE_INFER",
                                "execution": "EXECUTION_AOT"}})")
                .message()
                .find(".execution: aot compiles the built-in models"),
            std::string::npos);
  EXPECT_NE(expand(R"({"base": {"workload": "mlp", "mode": "MODE_INFER", "device": "cpu",
                                "execution": "EXECUTION_AOT_CUDA_GRAPH"}})")
                .message()
                .find("spec.base.execution: CUDA graphs need a CUDA device"),
            std::string::npos);
}

TEST(SpecValidation, NanIsInNoRange) {
  auto spec = ParseJobSpecJson(R"({"base": {"workload": "mlp", "learningRate": "NaN"}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(ValidateJobSpec(*spec).message(),
            "spec.base.learning_rate: must be in [0, 100], got nan");
  spec = ParseJobSpecJson(
      R"({"base": {"workload": "mlp"}, "measurement": {"cvThreshold": "NaN"}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(ValidateJobSpec(*spec).message(),
            "spec.measurement.cv_threshold: must be in [0, 1), got nan");
}

TEST(Sweep, CartesianProductInStableOrder) {
  auto spec = ParseJobSpecJson(kSpec);
  ASSERT_TRUE(spec.ok());
  auto runs = ExpandSweep(*spec);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 6u);
  // precision is declared before batch_size, so batch size varies fastest.
  EXPECT_EQ((*runs)[0].precision(), v1::PRECISION_FP32);
  EXPECT_EQ((*runs)[0].batch_size(), 32);
  EXPECT_EQ((*runs)[1].batch_size(), 64);
  EXPECT_EQ((*runs)[3].precision(), v1::PRECISION_BF16);
  EXPECT_EQ((*runs)[3].batch_size(), 32);
  for (const auto& r : *runs) EXPECT_EQ(r.device(), "cuda:0");
}

// A stored config says what ran: a field left out holds its default, so
// that a spec naming the defaults and one leaving them out give one config.
TEST(Sweep, EveryConfigCarriesItsDefaults) {
  v1::JobSpec terse;
  terse.mutable_base()->set_workload("resnet50");
  auto left_out = ExpandSweep(terse);
  ASSERT_TRUE(left_out.ok()) << left_out.status();
  const v1::RunConfig& c = (*left_out)[0];
  EXPECT_EQ(c.batch_size(), 32);
  EXPECT_EQ(c.params().image_size(), 224);
  EXPECT_EQ(c.params().num_classes(), 1000);
  EXPECT_EQ(c.mode(), v1::MODE_TRAIN);
  EXPECT_EQ(c.precision(), v1::PRECISION_FP32);
  EXPECT_EQ(c.execution(), v1::EXECUTION_EAGER);
  EXPECT_EQ(c.device(), "auto");
  EXPECT_DOUBLE_EQ(c.learning_rate(), 0.01);
  v1::JobSpec explicit_spec = terse;
  v1::RunConfig* b = explicit_spec.mutable_base();
  b->set_batch_size(32);
  b->mutable_params()->set_image_size(224);
  b->set_precision(v1::PRECISION_FP32);
  b->set_mode(v1::MODE_TRAIN);
  b->set_device("auto");
  auto named = ExpandSweep(explicit_spec);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(ConfigKey((*named)[0]), ConfigKey(c));
  // AdamW's default learning rate is its own; a host pipeline gets its depth.
  v1::JobSpec adamw = terse;
  adamw.mutable_base()->set_optimizer(v1::OPTIMIZER_ADAMW);
  adamw.mutable_base()->set_input_source(v1::INPUT_SOURCE_HOST);
  auto other = ExpandSweep(adamw);
  ASSERT_TRUE(other.ok());
  EXPECT_DOUBLE_EQ((*other)[0].learning_rate(), 0.001);
  EXPECT_EQ((*other)[0].pipeline().prefetch_depth(), 2);
}

// A distributed point gets its rank count and workload defaults; any other
// config carries no world_size, so its key stays what runs stored before
// distributed runs existed have.
TEST(Sweep, DistributedPointsCarryTheirDefaultsAndOthersNoRankCount) {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("collective");
  spec.mutable_sweep()->add_world_size(2);
  spec.mutable_sweep()->add_world_size(4);
  spec.mutable_sweep()->add_collective_bytes(64);
  spec.mutable_sweep()->add_collective_bytes(1024);
  auto runs = ExpandSweep(spec);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 4u);
  EXPECT_EQ((*runs)[0].world_size(), 2);
  EXPECT_EQ((*runs)[1].params().collective_bytes(), 1024);  // the last axis varies fastest
  EXPECT_EQ((*runs)[2].world_size(), 4);
  EXPECT_EQ((*runs)[0].params().collective_op(), v1::COLLECTIVE_OP_ALL_REDUCE);
  v1::JobSpec ddp;
  ddp.mutable_base()->set_workload("ddp");
  auto trained = ExpandSweep(ddp);
  ASSERT_TRUE(trained.ok()) << trained.status();
  EXPECT_EQ((*trained)[0].params().ddp_model(), "resnet50");
  EXPECT_EQ((*trained)[0].params().image_size(), 224);  // resnet50's default
  EXPECT_EQ((*trained)[0].world_size(), 1);
  v1::JobSpec plain;
  plain.mutable_base()->set_workload("mlp");
  auto mlp = ExpandSweep(plain);
  ASSERT_TRUE(mlp.ok());
  EXPECT_EQ((*mlp)[0].world_size(), 0);
  // A bad value is refused naming it.
  spec.mutable_sweep()->add_world_size(65);
  auto bad = ExpandSweep(spec);
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_NE(bad.status().message().find("spec.sweep.world_size[2]"), std::string::npos)
      << bad.status();
  ddp.mutable_base()->mutable_params()->set_ddp_model("matmul");
  EXPECT_NE(ExpandSweep(ddp).status().message().find("spec.base.params.ddp_model"),
            std::string::npos);
}

// A relation between two fields holds with the defaults the run will get:
// 1024 heads cannot split the transformer's default width of 512 (found by
// the spec fuzzer once configs carried their defaults).
TEST(Sweep, FieldRelationsHoldWithTheDefaultsFilledIn) {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("transformer");
  spec.mutable_base()->mutable_params()->set_num_heads(1024);
  auto runs = ExpandSweep(spec);
  ASSERT_FALSE(runs.ok());
  EXPECT_EQ(runs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(runs.status().message().find("params.num_heads"), std::string::npos)
      << runs.status();
  EXPECT_NE(runs.status().message().find("hidden_size 512"), std::string::npos)
      << runs.status();
  spec.mutable_base()->mutable_params()->set_num_heads(16);  // divides 512
  EXPECT_TRUE(ExpandSweep(spec).ok());
}

TEST(Sweep, RefusesMoreThan512Points) {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("mlp");
  for (int b = 1; b <= 30; ++b) spec.mutable_sweep()->add_batch_size(b);
  for (int t = 0; t < 20; ++t) spec.mutable_sweep()->add_loader_threads(t);
  auto runs = ExpandSweep(spec);
  ASSERT_FALSE(runs.ok());
  EXPECT_EQ(runs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(runs.status().message().find("512"), std::string::npos);
}

// Each axis value is valid alone; the combination is not.
TEST(Sweep, EachRunPassesTheChecksThatRelateTwoFields) {
  auto graph = ParseJobSpecJson(R"({
    "base": {"workload": "mlp", "execution": "EXECUTION_CUDA_GRAPH"},
    "sweep": {"device": ["cuda", "cpu"]}})");
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto runs = ExpandSweep(*graph);
  ASSERT_FALSE(runs.ok());
  EXPECT_EQ(runs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(runs.status().message(),
            "spec.sweep (run 1).execution: CUDA graphs need a CUDA device, not \"cpu\"");

  auto script = ParseJobSpecJson(R"({
    "base": {"params": {"inputs": [{"shape": ["1"]}]}},
    "sweep": {"workload": ["mlp", "torchscript"]}})");
  ASSERT_TRUE(script.ok()) << script.status();
  runs = ExpandSweep(*script);
  ASSERT_FALSE(runs.ok());
  EXPECT_EQ(runs.status().message(),
            "spec.sweep (run 1).params.model_path: torchscript needs model_path or "
            "model_sha256");
}

TEST(EnumNames, ShortNamesRoundTrip) {
  EXPECT_EQ(EnumShortName(v1::Precision_descriptor(), v1::PRECISION_FP16), "fp16");
  EXPECT_EQ(*ParseEnumShortName(v1::Precision_descriptor(), "BF16"), v1::PRECISION_BF16);
  EXPECT_EQ(*ParseEnumShortName(v1::Execution_descriptor(), "cuda_graph"),
            v1::EXECUTION_CUDA_GRAPH);
  EXPECT_FALSE(ParseEnumShortName(v1::Mode_descriptor(), "fly").ok());
}

TEST(SpecBounds, NulAndControlBytesAreRefusedInStrings) {
  // A model_path with a NUL loads the file before it and would be stored
  // whole; refused over gRPC (a proto) and in a JSON spec alike.
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("torchscript");
  spec.mutable_base()->mutable_params()->add_inputs()->add_shape(1);
  spec.mutable_base()->mutable_params()->set_model_path(
      std::string("/models/ok.pt\0/etc/shadow", 25));
  absl::Status s = ValidateJobSpec(spec);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "spec.base.params.model_path: contains a NUL byte");

  auto json = ParseJobSpecJson(
      R"({"base": {"workload": "torchscript", "params": {"modelPath": "/m/ok.pt\u0000/etc/shadow",
          "inputs": [{"shape": [1]}]}}})");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(ValidateJobSpec(*json).message(),
            "spec.base.params.model_path: contains a NUL byte");
  EXPECT_EQ(ExpandSweep(*json).status().code(), absl::StatusCode::kInvalidArgument);

  // Other control bytes in a path or a device name are refused too.
  spec.mutable_base()->mutable_params()->set_model_path("/models/ok\x01.pt");
  EXPECT_EQ(ValidateJobSpec(spec).message(),
            "spec.base.params.model_path: contains the control byte \\x01");
  spec.mutable_base()->mutable_params()->set_model_path("/models/ok.pt");
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);
  spec.mutable_sweep()->add_device("cpu");
  spec.mutable_sweep()->add_device("cpu\n");
  EXPECT_EQ(ValidateJobSpec(spec).message(),
            "spec.sweep.device[1]: contains the control byte \\x0a");
  spec.mutable_sweep()->clear_device();

  // Free text (the name, label values) keeps its tabs, newlines and escapes,
  // which every output escapes, but not a NUL.
  spec.set_name("two\tlines\nand \x1b[31mred");
  (*spec.mutable_labels())["team"] = "vision\tA";
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);
  spec.set_name(std::string("a\0b", 3));
  EXPECT_EQ(ValidateJobSpec(spec).message(), "spec.name: contains a NUL byte");
  spec.set_name("ok");
  (*spec.mutable_labels())["team"] = std::string("vi\0sion", 7);
  EXPECT_EQ(ValidateJobSpec(spec).message(), "spec.labels[team]: contains a NUL byte");
}

}  // namespace
TEST(Sweep, LargestBatchThatFitIsKeptPerConfig) {
  v1::Job job;
  auto run = [&](const char* precision, int batch, v1::RunState state) {
    v1::Run r;
    r.mutable_config()->set_workload("resnet50");
    r.mutable_config()->set_batch_size(batch);
    r.mutable_config()->set_precision(precision == std::string("fp16") ? v1::PRECISION_FP16
                                                                       : v1::PRECISION_FP32);
    r.set_state(state);
    CountFinishedRun(r, &job);
    return ConfigKeyWithoutBatch(r.config());
  };
  const std::string fp32 = run("fp32", 64, v1::RUN_STATE_SUCCEEDED);
  run("fp32", 128, v1::RUN_STATE_OUT_OF_MEMORY);
  const std::string fp16 = run("fp16", 128, v1::RUN_STATE_SUCCEEDED);
  run("fp16", 256, v1::RUN_STATE_SUCCEEDED);
  run("fp16", 512, v1::RUN_STATE_SKIPPED_AFTER_OOM);
  EXPECT_EQ(job.runs_done(), 5);
  ASSERT_NE(fp32, fp16);
  EXPECT_EQ(job.max_batch_size_fits().at(fp32), 64);
  EXPECT_EQ(job.max_batch_size_fits().at(fp16), 256);
  EXPECT_EQ(job.max_batch_size_fits().size(), 2u);
  auto key = ParseConfigKey(fp16);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(key->workload(), "resnet50");
  EXPECT_EQ(key->precision(), v1::PRECISION_FP16);
  EXPECT_EQ(key->batch_size(), 0);
}

TEST(Spec, ConfigKeysAreEqualForEqualConfigsAndReadBack) {
  v1::RunConfig a;
  a.set_workload("resnet50");
  a.set_batch_size(32);
  a.mutable_params()->set_image_size(224);
  v1::RunConfig b;  // the same, set in another order
  b.mutable_params()->set_image_size(224);
  b.set_batch_size(32);
  b.set_workload("resnet50");
  EXPECT_EQ(ConfigKey(a), ConfigKey(b));
  b.set_batch_size(64);
  EXPECT_NE(ConfigKey(a), ConfigKey(b));
  auto back = ParseConfigKey(ConfigKey(a));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->SerializeAsString(), a.SerializeAsString());
  // Keys stored by earlier versions were protobuf text.
  auto legacy = ParseConfigKey("workload: \"mlp\" precision: PRECISION_BF16");
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ(legacy->workload(), "mlp");
  EXPECT_EQ(legacy->precision(), v1::PRECISION_BF16);
  EXPECT_TRUE(absl::IsInvalidArgument(ParseConfigKey("k1:%%%").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseConfigKey("no such: field").status()));
}

namespace {

// ---- Bounds: what one hostile spec may not do ----

using spec_test::ErrorOf;

TEST(SpecBounds, AKeyGivenTwiceIsRefusedInEitherSpelling) {
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "mlp", "workload": "resnet50"}})")
                .find("spec.base.workload: given twice"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"base": {"batchSize": 8, "batch_size": 4096}})")
                .find("spec.base.batch_size: given twice"),
            std::string::npos)
      << ErrorOf(R"({"base": {"batchSize": 8, "batch_size": 4096}})");
  // Two base objects would otherwise be merged.
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "mlp"}, "base": {"device": "cpu"}})")
                .find("spec.base: given twice"),
            std::string::npos);
  // The same key in two different objects is fine, and so are escapes.
  EXPECT_EQ(ErrorOf(R"({"name": "a\"b", "base": {"workload": "mlp"},
                        "sweep": {"workload": ["mlp"]}})"),
            "");
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "mlp", "work\u006coad": "x"}})").find("twice"),
            std::string::npos);
}

// protobuf's JSON parser also reads JavaScript's forms; a key in one of them
// once slipped past the duplicate check. Only RFC 8259 JSON is read, and the
// refusal says where.
TEST(SpecBounds, OnlyStrictJsonIsRead) {
  const std::pair<const char*, const char*> kRefused[] = {
      {R"({"base": {"workload": "mlp", 'workload': "resnet50"}})",
       "spec.base: keys are strings in double quotes in JSON (RFC 8259) (found ''' at line 1, "
       "column 30)"},
      {R"({"base": {"workload": "mlp", workload: "resnet50"}})",
       "spec.base: keys are strings in double quotes in JSON (RFC 8259) (found 'w' at line 1, "
       "column 30)"},
      {"{\"base\": {\n  \"workload\": 'mlp'}}",
       "spec.base.workload: strings take double quotes in JSON (RFC 8259) (found ''' at line 2, "
       "column 15)"},
      {R"({"base": {"workload": "mlp",}})", "spec.base: keys are strings in double quotes"},
      {R"({"labels": {"a": "b"}, "sweep": {"batchSize": [1, 2,]}})",
       "spec.sweep.batchSize[2]: not a JSON value"},
      {R"({"base": {"batchSize": 08}})", "spec.base.batchSize: a number does not start with 0"},
      {R"({"base": {"batchSize": +8}})", "spec.base.batchSize: not a JSON value"},
      {R"({"base": {"batchSize": 0x10}})", "spec.base: ',' or '}' must follow a member"},
      {R"({"base": {"batchSize": .5}})", "spec.base.batchSize: not a JSON value"},
      {R"({"base": {"workload": "mlp"}} // nightly)", "spec: text after the end of the spec"},
      {R"({"base": {"workload": "mlp"}} {})", "spec: text after the end of the spec"},
      {R"({"base": {"workload": "m\x6cp"}})", "spec.base.workload: not a JSON escape"},
      {R"({"base": {"workload": "\u12"}})", "spec.base.workload: \\u takes four hex digits"},
      {"{\"name\": \"tab\there\"}", "spec.name: a control character must be escaped"},
      {"{\"name\": \"\xff\xfe\"}", "spec.name: not UTF-8"},
      {"{\"name\": \"\xed\xa0\x80\"}", "spec.name: not UTF-8"},  // an encoded surrogate
      {R"({"base": {"workload": "mlp"})", "spec: ',' or '}' must follow a member (found the end"},
      {R"({"base": {"channelsLast": True}})", "spec.base.channelsLast: not a JSON value"},
      {"", "spec: a value is missing"},
      {"\xef\xbb\xbf{}", "spec: not a JSON value"},  // a byte order mark
  };
  for (const auto& [json, error] : kRefused) {
    auto spec = ParseJobSpecJson(json);
    ASSERT_FALSE(spec.ok()) << json;
    EXPECT_TRUE(absl::IsInvalidArgument(spec.status())) << json;
    EXPECT_EQ(std::string(spec.status().message()).rfind(error, 0), 0u)
        << json << "\n" << spec.status().message();
  }
  // What RFC 8259 allows is read as before: every value form, escapes,
  // UTF-8, and whitespace of all four kinds.
  auto spec = ParseJobSpecJson(
      "\t\r\n{\"name\": \"caf\xc3\xa9 \\\"q\\\" \\/ \\u00e9\\n\", \"base\": {\"workload\": "
      "\"mlp\", \"learningRate\": -1.5e-2, \"device\": null, \"channelsLast\": false}, "
      "\"sweep\": {\"batchSize\": [0, 8, 16]}, \"measurement\": {\"cvThreshold\": 1E-1}, "
      "\"labels\": {}} ");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "caf\xc3\xa9 \"q\" / \xc3\xa9\n");
  EXPECT_DOUBLE_EQ(spec->base().learning_rate(), -0.015);
  EXPECT_EQ(spec->sweep().batch_size_size(), 3);
  EXPECT_DOUBLE_EQ(spec->measurement().cv_threshold(), 0.1);
}

TEST(SpecBounds, DeepNestingIsRefused) {
  std::string deep = R"({"labels": )";
  for (int i = 0; i < 200; ++i) deep += "[";
  EXPECT_NE(ErrorOf(deep).find("nested deeper than"), std::string::npos) << ErrorOf(deep);
}

TEST(SpecBounds, NanAndInfinityAreRefusedInFloatFields) {
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "mlp", "learningRate": "NaN"}})")
                .find("spec.base.learning_rate"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "mlp", "learningRate": "Infinity"}})")
                .find("spec.base.learning_rate"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "mlp"}, "measurement": {"cvThreshold": "NaN"}})")
                .find("spec.measurement.cv_threshold"),
            std::string::npos);
}

TEST(SpecBounds, NamesLabelsAndInputsAreBounded) {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("mlp");
  spec.set_name(std::string(kMaxNameBytes + 1, 'n'));
  EXPECT_NE(ValidateJobSpec(spec).message().find("spec.name"), std::string::npos);
  spec.clear_name();
  for (int i = 0; i <= kMaxLabels; ++i) (*spec.mutable_labels())["k" + std::to_string(i)] = "v";
  EXPECT_NE(ValidateJobSpec(spec).message().find("spec.labels: at most"), std::string::npos);
  spec.clear_labels();
  (*spec.mutable_labels())["bad key\n"] = "v";
  EXPECT_NE(ValidateJobSpec(spec).message().find("a key must be"), std::string::npos);
  spec.clear_labels();
  (*spec.mutable_labels())["team"] = std::string(kMaxLabelValueBytes + 1, 'v');
  EXPECT_NE(ValidateJobSpec(spec).message().find("spec.labels[team]"), std::string::npos);
  spec.clear_labels();
  EXPECT_TRUE(ValidateJobSpec(spec).ok());

  v1::WorkloadParams* p = spec.mutable_base()->mutable_params();
  spec.mutable_base()->set_workload("torchscript");
  p->set_model_sha256(std::string(64, 'a'));
  for (int i = 0; i <= kMaxInputs; ++i) p->add_inputs()->add_shape(1);
  EXPECT_NE(ValidateJobSpec(spec).message().find("spec.base.params.inputs: at most"),
            std::string::npos);
  p->clear_inputs();
  auto* in = p->add_inputs();
  for (int d = 0; d <= kMaxInputRank; ++d) in->add_shape(2);
  EXPECT_NE(ValidateJobSpec(spec).message().find("spec.base.params.inputs[0].shape: at most"),
            std::string::npos);
  p->clear_inputs();
  p->add_inputs()->add_shape(1);
  p->mutable_inputs(0)->add_shape(1 << 24);
  p->mutable_inputs(0)->add_shape(1 << 24);
  spec.mutable_base()->set_batch_size(1);
  EXPECT_NE(ExpandSweep(spec).status().message().find("exceeds"), std::string::npos)
      << ExpandSweep(spec).status();
}

TEST(SpecBounds, IntegerInputsTakeAValueRangeInsideTheirDtype) {
  const auto spec_with = [](const std::string& input) {
    return R"({"base": {"workload": "torchscript", "params": {"modelSha256": ")" +
           std::string(64, 'a') + R"(", "inputs": [{"shape": [1, 8], "dtype": "DTYPE_INT64"}, )" +
           input + "]}}}";
  };
  EXPECT_EQ(ErrorOf(spec_with(R"({"shape": [1, 4], "dtype": "DTYPE_INT64", "low": "-5",
                                  "high": "7"})")),
            "");
  EXPECT_EQ(ErrorOf(spec_with(R"({"shape": [1], "dtype": "DTYPE_UINT8", "high": 256})")), "");
  const std::string empty =
      ErrorOf(spec_with(R"({"shape": [1], "dtype": "DTYPE_INT32", "low": 5, "high": 5})"));
  EXPECT_NE(empty.find("spec.base.params.inputs[1].high: must be greater than low"),
            std::string::npos)
      << empty;
  const std::string wide =
      ErrorOf(spec_with(R"({"shape": [1], "dtype": "DTYPE_UINT8", "low": 0, "high": 300})"));
  EXPECT_NE(wide.find("spec.base.params.inputs[1].high"), std::string::npos) << wide;
  const std::string negative =
      ErrorOf(spec_with(R"({"shape": [1], "dtype": "DTYPE_UINT8", "low": -1, "high": 3})"));
  EXPECT_NE(negative.find("spec.base.params.inputs[1].low"), std::string::npos) << negative;
  const std::string floats =
      ErrorOf(spec_with(R"({"shape": [1], "dtype": "DTYPE_FLOAT16", "high": 3})"));
  EXPECT_NE(floats.find("spec.base.params.inputs[1].low: a value range applies to integer"),
            std::string::npos)
      << floats;
}

TEST(SpecBounds, BatchTimesImageAndSequenceAreBoundedInSweepsToo) {
  // Each factor is within its own range; the product is terabytes.
  const std::string big = ErrorOf(R"({"base": {"workload": "resnet50", "batchSize": 65536},
                                       "sweep": {"imageSize": [224, 4096]}})");
  EXPECT_NE(big.find("spec.sweep (run 0): batch_size 65536"), std::string::npos) << big;
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "transformer", "batchSize": 65536,
                                 "params": {"sequenceLength": 1048576}}})")
                .find("tokens"),
            std::string::npos);
  // A size left out counts at the workload's default: mlp images are 32².
  EXPECT_EQ(ErrorOf(R"({"base": {"workload": "mlp", "batchSize": 65536}})"), "");
  EXPECT_NE(ErrorOf(R"({"base": {"workload": "resnet50", "batchSize": 65536}})")
                .find("image_size 224"),
            std::string::npos);
}

TEST(SpecBounds, ModelHashMustBeAHash) {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("torchscript");
  spec.mutable_base()->mutable_params()->add_inputs()->add_shape(1);
  for (const std::string& bad : {std::string("../../etc/x"), std::string(64, 'F'),
                                 std::string(65, 'a')}) {
    spec.mutable_base()->mutable_params()->set_model_sha256(bad);
    EXPECT_EQ(ValidateJobSpec(spec).message(),
              "spec.base.params.model_sha256: must be 64 lower-case hex digits")
        << bad;
  }
}

// --cpu-threads: 0 is the default (the CPUs the worker may use); a count
// past any host's is refused, naming the field.
TEST(SpecBounds, CpuThreadsIsZeroTo1024) {
  EXPECT_EQ(ErrorOf(R"({"base": {"workload": "mlp", "device": "cpu"}, "cpuThreads": 0})"), "");
  EXPECT_EQ(ErrorOf(R"({"base": {"workload": "mlp", "device": "cpu"}, "cpuThreads": 1024})"),
            "");
  EXPECT_EQ(ErrorOf(R"({"base": {"workload": "mlp", "device": "cpu"}, "cpuThreads": 1025})"),
            "spec.cpu_threads: must be in [0, 1024], got 1025");
  EXPECT_EQ(ErrorOf(R"({"base": {"workload": "mlp", "device": "cpu"}, "cpuThreads": -1})"),
            "spec.cpu_threads: must be in [0, 1024], got -1");
}

}  // namespace

}  // namespace gpubench
