// The worker's conversion of an engine outcome into the stored run.
#include "worker/convert.h"

#include <gtest/gtest.h>

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
