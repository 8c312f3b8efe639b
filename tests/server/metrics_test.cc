// The metrics page's text format and its GPU gauges: DCGM exporter's names
// and labels, read through NVML (here a stand-in library with fixed readings,
// tests/support/fake_nvml.cc; no NVIDIA driver runs on CI), checked by
// promtool.
#include "server/metrics.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <string>

#include "tests/support/command.h"

namespace gpubench::server {
namespace {

using testing_support::RunCommand;

v1::HostInfo OneGpuHost() {
  v1::HostInfo host;
  host.set_hostname("node-7");
  v1::GpuInfo* gpu = host.add_gpus();
  gpu->set_index(0);
  gpu->set_uuid("GPU-fake-0");
  gpu->set_name("NVIDIA H100 80GB HBM3");
  return host;
}

std::string GaugesWith(const char* nvml_library) {
  setenv("GPUBENCH_NVML_LIBRARY", nvml_library, 1);
  GpuGauges gauges(OneGpuHost());
  unsetenv("GPUBENCH_NVML_LIBRARY");
  MetricsWriter out;
  gauges.Write(&out);
  return out.text();
}

// "" when `promtool check metrics` passes the page.
std::string Promtool(const std::string& page) {
  const std::string path = ::testing::TempDir() + "/metrics_test_page.txt";
  std::ofstream(path) << page;
  auto r = RunCommand("promtool check metrics < '" + path + "'");
  return r.exit_code == 0 ? "" : "exit " + std::to_string(r.exit_code) + ": " + r.output;
}

TEST(Metrics, LabelValuesAndHelpAreEscaped) {
  MetricsWriter out;
  out.Family("gpubench_x_total", "counter", "a\\b\nc");
  out.Sample("gpubench_x_total", {{"config", "say \"hi\"\\\n"}, {"device", "cpu"}}, 3);
  out.Sample("gpubench_x_total", {}, 0.25);
  EXPECT_EQ(out.text(),
            "# HELP gpubench_x_total a\\\\b\\nc\n"
            "# TYPE gpubench_x_total counter\n"
            "gpubench_x_total{config=\"say \\\"hi\\\"\\\\\\n\",device=\"cpu\"} 3\n"
            "gpubench_x_total 0.25\n");
  EXPECT_EQ(Promtool(out.text()), "");
}

TEST(Metrics, GpuGaugesCarryDcgmNamesLabelsAndUnits) {
  const std::string page = GaugesWith(FAKE_NVML_PATH);
  const std::string labels =
      "{gpu=\"0\",uuid=\"GPU-fake-0\",device=\"nvidia0\",model_name=\"NVIDIA H100 80GB HBM3\","
      "hostname=\"node-7\"}";
  for (const std::string& line :
       {std::string("gpubench_gpu_telemetry_available 1"), "DCGM_FI_DEV_GPU_UTIL" + labels + " 87",
        "DCGM_FI_DEV_MEM_COPY_UTIL" + labels + " 41",
        "DCGM_FI_DEV_FB_USED" + labels + " 3072",  // MiB
        "DCGM_FI_DEV_SM_CLOCK" + labels + " 1980", "DCGM_FI_DEV_MEM_CLOCK" + labels + " 2619",
        "DCGM_FI_DEV_POWER_USAGE" + labels + " 412.5",  // W
        "DCGM_FI_DEV_GPU_TEMP" + labels + " 54",
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS" + labels + " 4",
        "gpubench_gpu_pcie_rx_bytes_per_second" + labels + " 1024000"}) {
    EXPECT_NE(page.find(line + "\n"), std::string::npos) << line << " not in:\n" << page;
  }
  const std::string throttled = labels.substr(0, labels.size() - 1);
  EXPECT_NE(page.find("gpubench_gpu_throttled" + throttled + ",reason=\"sw_power_cap\"} 1\n"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("gpubench_gpu_throttled" + throttled + ",reason=\"hw_thermal\"} 0\n"),
            std::string::npos)
      << page;
  EXPECT_EQ(Promtool(page), "");
}

TEST(Metrics, WithoutNvmlTheGaugesSaySoAndNothingElse) {
  const std::string page = GaugesWith("/nonexistent/libnvidia-ml.so.1");
  EXPECT_NE(page.find("gpubench_gpu_telemetry_available 0\n"), std::string::npos) << page;
  EXPECT_NE(page.find("cannot load /nonexistent/libnvidia-ml.so.1"), std::string::npos) << page;
  EXPECT_EQ(page.find("DCGM_"), std::string::npos) << page;
  EXPECT_EQ(Promtool(page), "");
}

}  // namespace
}  // namespace gpubench::server
