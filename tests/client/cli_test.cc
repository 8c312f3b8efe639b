#include "client/cli.h"

#include <gtest/gtest.h>

#include <sstream>

namespace gpubench::client {
namespace {

TEST(Cli, RunPrintsATableAndStoresTheJob) {
  std::ostringstream out, err;
  const std::string dir = ::testing::TempDir() + "/cli_run";
  int code = RunCli({"run", "--workload", "mlp", "--device", "cpu", "--batch", "8,16",
                     "--min-time-ms", "50", "--max-time-ms", "1000", "--data-dir", dir,
                     "--worker", GPUBENCH_WORKER_PATH},
                    out, err);
  ASSERT_EQ(code, kExitOk) << err.str();
  EXPECT_NE(out.str().find("succeeded"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(dir + "/gpubench.db"), std::string::npos);
}

TEST(Cli, BadFlagIsAUsageErrorNamingIt) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"run", "--precision", "fp17"}, out, err), kExitUsage);
  EXPECT_NE(err.str().find("--precision"), std::string::npos) << err.str();
  std::ostringstream out2, err2;
  EXPECT_EQ(RunCli({"run", "--batch", "0"}, out2, err2), kExitUsage);
  EXPECT_NE(err2.str().find("--batch"), std::string::npos) << err2.str();
}

TEST(Cli, SpecCountsRuns) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"spec", "--workload", "resnet50", "--batch", "32,64",
                    "--precision", "fp32,bf16"},
                   out, err),
            kExitOk)
      << err.str();
  EXPECT_NE(out.str().find("4 runs"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace gpubench::client
