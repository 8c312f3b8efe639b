// Clock and power control through the stand-in NVML (tests/support/
// fake_nvml.cc), whose power limit and clock lock live in a file every
// process sees: set, undone, refused, and undone after a daemon's crash.
#include "launcher/clock_control.h"
#include "tests/support/read_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gpubench {
namespace {

constexpr char kBus[] = "00000000:1B:00.0";

using testing_support::ReadFile;

class ClockControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/clock_control_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::system(("rm -rf '" + dir_ + "' && mkdir -p '" + dir_ + "'").c_str());
    setenv("GPUBENCH_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("FAKE_NVML_STATE", (dir_ + "/gpu").c_str(), 1);
    unsetenv("FAKE_NVML_DENY_SET");
    unsetenv("FAKE_NVML_NO_LOCK");
    unsetenv("FAKE_NVML_POWER_LIMIT_MW");
    std::string why;
    nvml_ = nvml::Library::Open(&why);
    ASSERT_NE(nvml_, nullptr) << why;
  }
  void TearDown() override { unsetenv("FAKE_NVML_STATE"); }

  // The GPU as the stand-in holds it: "POWER_MW LOCKED_MHZ".
  std::string Gpu() const { return ReadFile(dir_ + "/gpu"); }
  // Every set call so far, a line each.
  std::string Calls() const { return ReadFile(dir_ + "/gpu.log"); }
  std::string StatePath() const { return dir_ + "/clock_state"; }

  std::string dir_;
  std::shared_ptr<nvml::Library> nvml_;
};

TEST_F(ClockControlTest, ARunsSettingIsSetAndThenPutBackAsItWas) {
  ClockControl clocks(nvml_, StatePath());
  auto applied = clocks.Apply(kBus, 0, {420, "max"});
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->power_limit_mw, 420000u);
  EXPECT_EQ(applied->locked_mhz, 1980u);
  EXPECT_EQ(Gpu(), "420000 1980\n");
  // Recorded before it was done, for a daemon that dies now.
  EXPECT_EQ(ReadFile(StatePath()), std::string(kBus) + " 700000 1\n");
  ASSERT_TRUE(clocks.Restore(kBus, 0).ok());
  EXPECT_EQ(Gpu(), "700000 0\n");
  EXPECT_EQ(access(StatePath().c_str(), F_OK), -1) << "nothing left to undo";
  EXPECT_EQ(Calls(), "power 420000\nlock 1980\npower 700000\nunlock\n");
  // base is the board's default applications clock; a lock alone leaves
  // the power limit alone.
  applied = clocks.Apply(kBus, 0, {0, "base"});
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->locked_mhz, 1755u);
  EXPECT_EQ(applied->power_limit_mw, 0u);
  ASSERT_TRUE(clocks.Restore(kBus, 0).ok());
  EXPECT_EQ(Gpu(), "700000 0\n");
}

TEST_F(ClockControlTest, ValuesOutsideTheBoardsRangeAreRefusedNamingTheField) {
  ClockControl clocks(nvml_, StatePath());
  auto low = clocks.Apply(kBus, 0, {100, ""});
  EXPECT_TRUE(absl::IsInvalidArgument(low.status())) << low.status();
  EXPECT_NE(low.status().message().find("config.power_limit_w: 100 W is outside this GPU's "
                                        "range, 200-700 W"),
            std::string::npos)
      << low.status();
  auto fast = clocks.Apply(kBus, 0, {0, "2500"});
  EXPECT_TRUE(absl::IsInvalidArgument(fast.status())) << fast.status();
  EXPECT_NE(fast.status().message().find("config.gpu_clocks"), std::string::npos);
  EXPECT_NE(fast.status().message().find("1980 MHz"), std::string::npos);
  auto elsewhere = clocks.Apply("00000000:99:00.0", 0, {500, ""});
  EXPECT_TRUE(absl::IsNotFound(elsewhere.status())) << elsewhere.status();
  EXPECT_EQ(Calls(), "") << "nothing was set";
  EXPECT_EQ(access(StatePath().c_str(), F_OK), -1);
}

TEST_F(ClockControlTest, ARefusalUndoesThePartAlreadySet) {
  ClockControl clocks(nvml_, StatePath());
  setenv("FAKE_NVML_DENY_SET", "1", 1);
  auto denied = clocks.Apply(kBus, 0, {500, ""});
  EXPECT_TRUE(absl::IsPermissionDenied(denied.status())) << denied.status();
  EXPECT_NE(denied.status().message().find("config.power_limit_w: NVML refused"),
            std::string::npos);
  unsetenv("FAKE_NVML_DENY_SET");
  EXPECT_EQ(access(StatePath().c_str(), F_OK), -1);
  // A GPU without clock locks fails the lock after the power limit was
  // set: the limit goes back, and nothing is left to recover.
  setenv("FAKE_NVML_NO_LOCK", "1", 1);
  auto half = clocks.Apply(kBus, 0, {500, "1410"});
  unsetenv("FAKE_NVML_NO_LOCK");
  EXPECT_TRUE(absl::IsFailedPrecondition(half.status())) << half.status();
  EXPECT_NE(half.status().message().find("config.gpu_clocks: this GPU does not support it"),
            std::string::npos)
      << half.status();
  EXPECT_EQ(Gpu(), "700000 0\n");
  EXPECT_EQ(Calls(), "power 500000\npower 700000\n");
  EXPECT_EQ(access(StatePath().c_str(), F_OK), -1);
}

TEST_F(ClockControlTest, WhatACrashedDaemonLeftSetIsUndoneAtTheNextStart) {
  {
    ClockControl crashed(nvml_, StatePath());
    ASSERT_TRUE(crashed.Apply(kBus, 0, {350, "1410"}).ok());
    // The daemon dies here: no Restore.
  }
  EXPECT_EQ(Gpu(), "350000 1410\n");
  ClockControl next(nvml_, StatePath());
  auto undone = next.RecoverAtStart();
  ASSERT_TRUE(undone.ok()) << undone.status();
  ASSERT_EQ(undone->size(), 1u);
  EXPECT_EQ((*undone)[0], std::string(kBus) + ": power limit back to 700 W, clocks unlocked");
  EXPECT_EQ(Gpu(), "700000 0\n");
  EXPECT_EQ(access(StatePath().c_str(), F_OK), -1);
  // Where NVML refuses, the record stays for the start after.
  {
    ClockControl crashed(nvml_, StatePath());
    ASSERT_TRUE(crashed.Apply(kBus, 0, {350, ""}).ok());
  }
  setenv("FAKE_NVML_DENY_SET", "1", 1);
  EXPECT_FALSE(ClockControl(nvml_, StatePath()).RecoverAtStart().ok());
  unsetenv("FAKE_NVML_DENY_SET");
  EXPECT_EQ(ReadFile(StatePath()), std::string(kBus) + " 700000 0\n");
  ASSERT_TRUE(ClockControl(nvml_, StatePath()).RecoverAtStart().ok());
  EXPECT_EQ(Gpu(), "700000 0\n");
  // A state file naming a GPU NVML does not know, or a limit the board
  // does not take, sets nothing and is dropped.
  std::ofstream(StatePath()) << kBus << " 4294967295 0\nGPU-not-here 500000 1\n";
  const std::string calls = Calls();
  EXPECT_FALSE(ClockControl(nvml_, StatePath()).RecoverAtStart().ok());
  EXPECT_EQ(Calls(), calls) << "nothing set from a bad entry";
  EXPECT_EQ(access(StatePath().c_str(), F_OK), -1);
  // Without a driver nothing can be set, and it says so.
  auto none = ClockControl(nullptr, StatePath()).Apply(kBus, 0, {500, ""});
  EXPECT_TRUE(absl::IsFailedPrecondition(none.status())) << none.status();
}

}  // namespace
}  // namespace gpubench
