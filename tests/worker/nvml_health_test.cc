// A GPU's health through the telemetry sampler, read from the stand-in
// NVML: the ECC count and remapped rows as the window starts and ends, and
// an XID the driver raises in between; none of it where NVML is missing.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <string>

#include "launcher/telemetry.h"

namespace gpubench::telemetry {
namespace {

// A sampler of the stand-in's GPU over a short window.
Series Window() {
  std::string why;
  std::unique_ptr<Source> source = OpenNvml("", 0, &why);
  EXPECT_NE(source, nullptr) << why;
  Sampler sampler(std::move(source), 5);
  sampler.Start();
  usleep(30'000);
  return sampler.Stop();
}

TEST(NvmlHealth, AQuietGpuReadsItsCountersAndNoXid) {
  setenv("GPUBENCH_NVML_LIBRARY", FAKE_NVML_PATH, 1);
  const Series s = Window();
  EXPECT_TRUE(s.health_before.ecc_known);
  EXPECT_TRUE(s.health_after.ecc_known);
  EXPECT_EQ(s.health_after.ecc_uncorrected, s.health_before.ecc_uncorrected);
  EXPECT_TRUE(s.health_after.rows_known);
  EXPECT_FALSE(s.health_after.remap_pending);
  EXPECT_TRUE(s.xids_watched);
  EXPECT_TRUE(s.xids.empty());
  unsetenv("GPUBENCH_NVML_LIBRARY");
}

TEST(NvmlHealth, AnEccErrorARemapAndAnXidInTheWindowAreSeen) {
  setenv("GPUBENCH_NVML_LIBRARY", FAKE_NVML_PATH, 1);
  setenv("FAKE_NVML_ECC_RISING", "1", 1);
  setenv("FAKE_NVML_REMAP_PENDING", "1", 1);
  setenv("FAKE_NVML_XID", "79", 1);
  const Series s = Window();
  EXPECT_GT(s.health_after.ecc_uncorrected, s.health_before.ecc_uncorrected);
  EXPECT_TRUE(s.health_after.remap_pending);
  EXPECT_EQ(s.health_after.rows_uncorrectable, 1u);
  ASSERT_EQ(s.xids.size(), 1u);  // raised once, taken once
  EXPECT_EQ(s.xids[0], 79u);
  for (const char* name : {"FAKE_NVML_ECC_RISING", "FAKE_NVML_REMAP_PENDING", "FAKE_NVML_XID",
                           "GPUBENCH_NVML_LIBRARY"}) {
    unsetenv(name);
  }
}

TEST(NvmlHealth, WithoutNvmlNothingIsKnownOrWatched) {
  const Series s = [] {
    Sampler sampler(OpenHost(), 5);
    sampler.Start();
    usleep(20'000);
    return sampler.Stop();
  }();
  EXPECT_FALSE(s.health_before.ecc_known);
  EXPECT_FALSE(s.health_after.rows_known);
  EXPECT_FALSE(s.xids_watched);
}

}  // namespace
}  // namespace gpubench::telemetry
