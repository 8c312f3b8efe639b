// The environment fingerprint: the GPU's setup read through a stand-in NVML
// (an H100 SXM's), the host's policy read from a tree standing for / and
// from this machine's own, and the words show, compare and the nightly
// verdict give it.
#include "launcher/fingerprint.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/utsname.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/fingerprint.h"

namespace gpubench::fingerprint {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

fs::path FreshRoot(const std::string& name) {
  const fs::path root = fs::temp_directory_path() / ("gpubench_" + name);
  fs::remove_all(root);
  fs::create_directories(root);
  return root;
}

TEST(Fingerprint, TheGpusSetupComesFromNvmlAndWhatItCannotTellStaysAbsent) {
  setenv("GPUBENCH_NVML_LIBRARY", FAKE_NVML_PATH, 1);
  setenv("FAKE_NVML_POWER_LIMIT_MW", "420000", 1);
  Fingerprint f;
  std::string why;
  ReadGpu("GPU-fake-0", 0, &f, &why);
  unsetenv("FAKE_NVML_POWER_LIMIT_MW");
  unsetenv("GPUBENCH_NVML_LIBRARY");
  EXPECT_EQ(why, "");
  EXPECT_EQ(f.driver_version, "580.159.04");
  EXPECT_EQ(f.cuda_driver_version, "13.0");
  EXPECT_EQ(f.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(f.vbios_version, "96.00.99.00.01");
  EXPECT_EQ(f.ecc_enabled, true);
  EXPECT_EQ(f.mig_enabled, false);
  EXPECT_EQ(f.power_limit_w, 420.0);  // the enforced limit, not the default
  EXPECT_EQ(f.power_limit_default_w, 700.0);
  EXPECT_EQ(f.power_limit_min_w, 200.0);
  EXPECT_EQ(f.max_sm_clock_mhz, 1980);
  EXPECT_EQ(f.applications_memory_clock_mhz, 2619);
  EXPECT_EQ(f.pcie_generation, 5);
  EXPECT_EQ(f.pcie_width, 16);
  EXPECT_EQ(f.nvlink_links, 18);
  EXPECT_EQ(f.nvlink_active, 16);
  EXPECT_EQ(f.applications_graphics_clock_mhz, 1980);
  // NOT_SUPPORTED: absent, not guessed.
  EXPECT_FALSE(f.board_part_number.has_value());
}

TEST(Fingerprint, WithoutNvmlTheGpuPartIsEmptyAndSaysWhy) {
  setenv("GPUBENCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  Fingerprint f;
  std::string why;
  ReadGpu("", 0, &f, &why);
  unsetenv("GPUBENCH_NVML_LIBRARY");
  EXPECT_NE(why.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << why;
  EXPECT_FALSE(f.driver_version || f.power_limit_w || f.ecc_enabled || f.nvlink_links);
}

TEST(Fingerprint, TheHostsKernelGovernorsAndCpuQuotaFromItsTree) {
  const fs::path root = FreshRoot("fingerprint_host");
  Write(root / "proc/sys/kernel/osrelease", "6.18.0-test");
  for (int cpu = 0; cpu < 6; ++cpu) {
    Write(root / ("sys/devices/system/cpu/cpu" + std::to_string(cpu)) /
              "cpufreq/scaling_governor",
          cpu < 4 ? "performance" : "powersave");
  }
  Write(root / "sys/devices/system/cpu/cpufreq/policy0/scaling_governor", "ondemand");
  // A quota of 4 cores on the job's slice, 2.5 on the container inside it.
  Write(root / "proc/self/cgroup", "0::/job.slice/container");
  Write(root / "sys/fs/cgroup/cgroup.controllers", "cpu memory");
  Write(root / "sys/fs/cgroup/job.slice/cpu.max", "400000 100000");
  Write(root / "sys/fs/cgroup/job.slice/container/cpu.max", "250000 100000");
  Fingerprint f;
  ReadHost(root.string(), &f);
  EXPECT_EQ(f.kernel, "6.18.0-test");
  EXPECT_EQ(f.cpu_governor, "performance (4), powersave (2)");
  EXPECT_EQ(f.cpu_quota_cores, 2.5);

  // The least over the ancestors counts; "max" everywhere is unlimited (0).
  Write(root / "sys/fs/cgroup/job.slice/cpu.max", "150000 100000");
  EXPECT_EQ(CpuQuotaCores((root / "proc/self/cgroup").string(),
                          (root / "sys/fs/cgroup").string()),
            1.5);
  Write(root / "sys/fs/cgroup/job.slice/cpu.max", "max 100000");
  Write(root / "sys/fs/cgroup/job.slice/container/cpu.max", "max 100000");
  EXPECT_EQ(CpuQuotaCores((root / "proc/self/cgroup").string(),
                          (root / "sys/fs/cgroup").string()),
            0.0);
  // cgroup v1's cpu controller (a hybrid host: the unified line is there,
  // v2's tree is not): cfs quota over period, -1 unlimited.
  fs::remove(root / "sys/fs/cgroup/cgroup.controllers");
  Write(root / "proc/self/cgroup", "4:cpu,cpuacct:/job.slice\n0::/");
  Write(root / "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1");
  Write(root / "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000");
  Write(root / "sys/fs/cgroup/cpu,cpuacct/job.slice/cpu.cfs_quota_us", "300000");
  Write(root / "sys/fs/cgroup/cpu,cpuacct/job.slice/cpu.cfs_period_us", "100000");
  EXPECT_EQ(CpuQuotaCores((root / "proc/self/cgroup").string(),
                          (root / "sys/fs/cgroup").string()),
            3.0);
  // Neither tree readable: unknown, not unlimited.
  fs::remove_all(root / "sys/fs/cgroup");
  EXPECT_FALSE(CpuQuotaCores((root / "proc/self/cgroup").string(),
                             (root / "sys/fs/cgroup").string())
                   .has_value());
  // One governor for every CPU is said once; none at all is absent.
  fs::remove_all(root / "sys/devices/system/cpu");
  Fingerprint bare;
  ReadHost(root.string(), &bare);
  EXPECT_FALSE(bare.cpu_governor.has_value());
}

TEST(Fingerprint, ThisHostsOwnKernelIsUnames) {
  Fingerprint f;
  ReadHost("", &f);
  struct utsname u;
  ASSERT_EQ(uname(&u), 0);
  EXPECT_EQ(f.kernel, std::string(u.release));
}

TEST(FingerprintWords, FieldsReadAsPeopleWriteThem) {
  v1::Fingerprint f;
  f.set_driver_version("580.159.04");
  f.set_cuda_driver_version("13.0");
  f.set_ecc_enabled(true);
  f.set_power_limit_w(700);
  f.set_max_sm_clock_mhz(1980);
  f.set_cpu_quota_cores(0);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"driver", "580.159.04"},   {"CUDA driver", "13.0"}, {"ECC", "on"},
      {"power limit", "700 W"},   {"max SM clock", "1980 MHz"},
      {"CPU quota", "unlimited"}};
  EXPECT_EQ(FingerprintFields(f), want);
}

TEST(FingerprintWords, ChangesNameEachFieldThatDiffersButNotTheCardsIdentity) {
  v1::Fingerprint before, after;
  before.set_driver_version("580.159.04");
  before.set_power_limit_w(700);
  before.set_gpu_serial("1");
  before.set_kernel("6.18.0");
  after = before;
  after.set_driver_version("590.12");
  after.set_power_limit_w(500);
  after.set_gpu_serial("2");
  after.set_max_sm_clock_mhz(1755);
  // The link's current speed follows the load: not a change of setup.
  after.set_pcie_generation(1);
  EXPECT_EQ(FingerprintChanges(before, after),
            (std::vector<std::string>{"driver 580.159.04 \u2192 590.12",
                                      "power limit 700 W \u2192 500 W",
                                      "max SM clock - \u2192 1755 MHz"}));
  EXPECT_EQ(EnvironmentDiffers(before, before), "");
  // A run from before fingerprints tells nothing.
  EXPECT_TRUE(FingerprintChanges(v1::Fingerprint(), after).empty());
}

// A CPU run's intra-op threads are part of its setup: compare and the
// nightly verdict name a change of them.
TEST(FingerprintWords, ACpuRunsThreadCountIsAChangeOfSetup) {
  v1::Fingerprint before, after;
  before.set_kernel("6.18.0");
  before.set_cpu_threads(1);
  after = before;
  after.set_cpu_threads(2);
  EXPECT_EQ(FingerprintChanges(before, after),
            std::vector<std::string>{"CPU threads 1 \u2192 2"});
}

}  // namespace
}  // namespace gpubench::fingerprint
