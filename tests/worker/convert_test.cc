// The worker's conversion of an engine outcome into the stored run.
#include "worker/convert.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/spec.h"
#include "common/spec_schema.h"

namespace gpubench::worker {
namespace {

engine::RunOutcome Measured() {
  engine::RunOutcome o;
  o.status = engine::RunStatus::kSucceeded;
  o.throughput_samples_per_s = 100;
  o.iterations = 20;
  o.measured_ms = 200;
  return o;
}

// --check-numerics asked for: a run whose numbers fail the check failed,
// naming why, with its figures kept; a run that passes stays succeeded.
TEST(FillRun, ARunThatFailsItsNumericsCheckFails) {
  engine::RunOutcome nan = Measured();
  nan.numerics = engine::NumericsOutcome{};
  nan.numerics->checked = true;
  nan.numerics->non_finite = true;
  nan.numerics->tolerance = 1e-4;
  v1::Run run;
  run.mutable_config()->set_mode(v1::MODE_INFER);
  FillRun(nan, &run);
  EXPECT_EQ(run.state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run.error().find("check_numerics failed: inf or NaN"), std::string::npos)
      << run.error();
  EXPECT_DOUBLE_EQ(run.result().throughput_samples_per_s(), 100);

  engine::RunOutcome off = Measured();
  off.numerics = engine::NumericsOutcome{};
  off.numerics->checked = true;
  off.numerics->loss_rel_error = 0.2;
  off.numerics->tolerance = 0.05;
  v1::Run train;
  train.mutable_config()->set_mode(v1::MODE_TRAIN);
  FillRun(off, &train);
  EXPECT_EQ(train.state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(train.error().find("relative error 0.2 beyond the precision's tolerance 0.05"),
            std::string::npos)
      << train.error();

  engine::RunOutcome ok = Measured();
  ok.numerics = engine::NumericsOutcome{};
  ok.numerics->checked = true;
  ok.numerics->passed = true;
  v1::Run good;
  FillRun(ok, &good);
  EXPECT_EQ(good.state(), v1::RUN_STATE_SUCCEEDED);
  // A check that could not run (a compiled package) fails nothing.
  engine::RunOutcome unchecked = Measured();
  unchecked.numerics = engine::NumericsOutcome{};
  unchecked.numerics->error = "compiled package";
  v1::Run plain;
  FillRun(unchecked, &plain);
  EXPECT_EQ(plain.state(), v1::RUN_STATE_SUCCEEDED);
}

}  // namespace
}  // namespace gpubench::worker

namespace gpubench::worker {
namespace {

// The engine's config as text: every member engine::FieldMaps() names,
// then those worker/convert.cc copies by hand. A field of the schema that
// reaches neither shows as no difference below.
std::string Dump(const engine::RunConfig& c) {
  std::string out;
  for (const engine::FieldMap& map : engine::FieldMaps()) {
    std::visit([&](auto member) { absl::StrAppend(&out, map.path, "=", c.*member, "|"); },
               map.member);
  }
  for (const engine::TensorSpec& t : c.inputs) {
    absl::StrAppend(&out, absl::StrJoin(t.shape, "x"), ":", static_cast<int>(t.dtype), ":",
                    t.low, ":", t.high, ";");
  }
  for (const engine::RunConfig::TraceRequest& t : c.trace) {
    absl::StrAppend(&out, t.arrival_ms, "@", t.input_tokens, "+", t.output_tokens, ";");
  }
  return absl::StrCat(
      out, "|", static_cast<int>(c.copy_direction), "|", static_cast<int>(c.collective_op), "|",
      c.ddp_bucket_mb, "|", c.world_size, "|", static_cast<int>(c.mode), "|",
      static_cast<int>(c.precision), "|", static_cast<int>(c.execution), "|",
      static_cast<int>(c.input_source), "|", c.pipeline.loader_threads, "|",
      c.pipeline.pinned_memory, "|", c.pipeline.prefetch_depth, "|",
      c.pipeline.extra_cost_us_per_sample, "|", c.pipeline.non_blocking, "|",
      static_cast<int>(c.optimizer), "|", static_cast<int>(c.attention));
}

// Each field of a run in the spec's schema reaches the engine: set alone,
// it changes the engine's config. The daemon's own (the probe's name, the
// clocks and power it sets around the run) and the model's reference, which
// the worker resolves into model_path, are the only ones it does not read.
TEST(ToEngineConfig, EverySchemaFieldOfARunMaps) {
  const std::set<std::string> daemon_side = {"base.probe", "base.power_limit_w",
                                             "base.gpu_clocks", "base.params.model_sha256"};
  const std::string plain = Dump(ToEngineConfig(v1::RunConfig()));
  int checked = 0;
  for (const SchemaField& f : SpecSchema()) {
    if (!f.in_run() || daemon_side.count(f.path)) continue;
    v1::JobSpec spec;
    const google::protobuf::FieldDescriptor* field = f.field();
    std::string text = "3";
    if (field->is_repeated() && f.path == "base.params.inputs") {
      spec.mutable_base()->mutable_params()->add_inputs()->add_shape(2);
    } else if (field->is_repeated()) {
      text = R"({"arrival_ms": 3, "input_tokens": 3, "output_tokens": 3})";
      ASSERT_TRUE(SetFromText(f, text, /*to_sweep=*/false, &spec).ok()) << f.path;
    } else {
      if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_BOOL) text = "on";
      if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_STRING) text = "x";
      if (field->enum_type() != nullptr) text = EnumShortName(field->enum_type(), 2);
      if (f.bounded() && f.schema->min() > 3) text = absl::StrCat(f.schema->min());
      ASSERT_TRUE(SetFromText(f, text, /*to_sweep=*/false, &spec).ok()) << f.path;
    }
    EXPECT_NE(Dump(ToEngineConfig(spec.base())), plain)
        << f.path << " set to " << text << " does not reach engine::RunConfig";
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

// The worker's measurement settings are the plan's: the schema's defaults,
// filled at submit, are the engine's own.
TEST(ToMeasureConfig, TheSchemaDefaultsAreTheEngines) {
  v1::JobSpec spec;
  FillSpecDefaults(&spec);
  const measure::MeasureConfig planned = ToMeasureConfig(spec.measurement());
  const measure::MeasureConfig engine;
  EXPECT_EQ(planned.warmup_iterations, engine.warmup_iterations);
  EXPECT_EQ(planned.warmup_ms, engine.warmup_ms);
  EXPECT_EQ(planned.min_iterations, engine.min_iterations);
  EXPECT_EQ(planned.min_time_ms, engine.min_time_ms);
  EXPECT_EQ(planned.max_time_ms, engine.max_time_ms);
  EXPECT_EQ(planned.window_iterations, engine.window_iterations);
  EXPECT_DOUBLE_EQ(planned.cv_threshold, engine.cv_threshold);
  EXPECT_EQ(planned.trials, engine.trials);
  EXPECT_EQ(planned.max_iterations, engine.max_iterations);
  EXPECT_EQ(spec.profiling().iterations(), engine.profile_iterations);
  EXPECT_EQ(spec.profiling().top_operators(), engine.profile_top_operators);
  EXPECT_EQ(spec.telemetry().interval_ms(), engine.telemetry_interval_ms);
}

}  // namespace
}  // namespace gpubench::worker
