// A fail of the suite stands only where its re-run fails too
// (report::ConfirmFails): what the re-run's outcome makes of each fail, and
// what it leaves alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/qualify.h"

namespace gpubench::report {
namespace {

Check Of(const std::string& device, const std::string& probe, Outcome outcome, double value,
         const std::string& why, const std::string& run_id) {
  Check c;
  c.host = "h";
  c.device = device;
  c.probe = probe;
  c.outcome = outcome;
  c.value = value;
  c.unit = probe == "launch" ? "us" : "TFLOP/s";
  c.why = why;
  c.run_id = run_id;
  return c;
}

TEST(QualifyConfirm, AFailStandsOnlyWhereItsReRunFailsToo) {
  std::vector<Check> first = {
      Of("cpu", "launch", Outcome::kFail, 1.53, "1.53 us, above 1.46 (median 0.912)", "r1"),
      Of("cuda:0", "matmul_bf16", Outcome::kFail, 415, "415 TFLOP/s, below 655", "r2"),
      Of("cuda:1", "matmul_bf16", Outcome::kFail, 500, "500 TFLOP/s, below 655", "r3"),
      Of("cuda:2", "matmul_bf16", Outcome::kPass, 690, "", "r4"),
  };
  ASSERT_TRUE(NeedsConfirming(first));
  const std::vector<Check> rerun = {
      Of("cpu", "launch", Outcome::kPass, 0.93, "", "s1"),
      Of("cuda:0", "matmul_bf16", Outcome::kFail, 417, "417 TFLOP/s, below 655", "s2"),
      Of("cuda:1", "matmul_bf16", Outcome::kUnknown, 0, "contended (1.5 other cores)", "s3"),
      Of("cuda:2", "matmul_bf16", Outcome::kFail, 300, "300 TFLOP/s, below 655", "s4"),
  };
  ConfirmFails(rerun, &first);
  // One slow moment: the re-run's pass, its figure and run, the first named.
  EXPECT_EQ(first[0].outcome, Outcome::kPass);
  EXPECT_DOUBLE_EQ(first[0].value, 0.93);
  EXPECT_EQ(first[0].run_id, "s1");
  EXPECT_EQ(first[0].why,
            "passes its re-run (0.93 us); the first run: 1.53 us, above 1.46 (median 0.912)");
  // Slow twice: the fail, confirmed.
  EXPECT_EQ(first[1].outcome, Outcome::kFail);
  EXPECT_EQ(first[1].run_id, "r2");
  EXPECT_EQ(first[1].why, "415 TFLOP/s, below 655; its re-run fails too (417 TFLOP/s)");
  // A re-run that cannot be judged confirms nothing and clears nothing.
  EXPECT_EQ(first[2].outcome, Outcome::kFail);
  EXPECT_NE(first[2].why.find("could not be judged (contended (1.5 other cores)): unconfirmed"),
            std::string::npos)
      << first[2].why;
  // A pass is not judged again, whatever its re-run says.
  EXPECT_EQ(first[3].outcome, Outcome::kPass);
  EXPECT_EQ(first[3].run_id, "r4");
  EXPECT_EQ(Overall(first), Outcome::kFail);
}

TEST(QualifyConfirm, WhatTheSuiteDoesNotRunAgainIsLeftAsItIs) {
  // A held product's fall and its figure are level 2's (a minute each), not
  // the suite's: no re-run for them.
  std::vector<Check> held = {
      Of("cuda:0", "sustained_bf16", Outcome::kFail, 600, "600 TFLOP/s, below 655", "r1"),
      Of("cuda:0", "sustained_bf16_decay", Outcome::kFail, 90, "90%, below 95", "r1"),
  };
  EXPECT_FALSE(NeedsConfirming(held));
  const std::vector<Check> before = held;
  ConfirmFails({Of("cuda:0", "sustained_bf16", Outcome::kPass, 690, "", "s1")}, &held);
  EXPECT_EQ(held[0].outcome, Outcome::kFail);
  EXPECT_EQ(held[0].why, before[0].why);
  EXPECT_EQ(held[1].why, before[1].why);
  // A suite probe missing from the re-run (its daemon did not answer) stays
  // a fail, said to be unconfirmed.
  std::vector<Check> alone = {
      Of("cpu", "launch", Outcome::kFail, 1.53, "1.53 us, above 1.46", "r1")};
  ASSERT_TRUE(NeedsConfirming(alone));
  ConfirmFails({}, &alone);
  EXPECT_EQ(alone[0].outcome, Outcome::kFail);
  EXPECT_EQ(alone[0].why, "1.53 us, above 1.46; not in its re-run: unconfirmed");
  EXPECT_FALSE(NeedsConfirming({Of("cpu", "launch", Outcome::kPass, 0.9, "", "r")}));
}

}  // namespace
}  // namespace gpubench::report
