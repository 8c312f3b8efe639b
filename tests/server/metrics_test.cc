// The metrics page's text format and its GPU gauges: DCGM exporter's names
// and labels, read through NVML (here a stand-in library with fixed readings,
// tests/support/fake_nvml.cc; no NVIDIA driver runs on CI), checked by
// promtool.
#include "server/metrics.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "server/job_manager.h"
#include "storage/store.h"
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

// The series of a page that appear more than once (name and labels alike),
// which Prometheus rejects; promtool 2.42 does not check it.
std::vector<std::string> DuplicateSeries(const std::string& page) {
  std::map<std::string, int> seen;
  std::vector<std::string> duplicates;
  std::istringstream lines(page);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::string series = line.substr(0, line.rfind(' '));
    if (++seen[series] == 2) duplicates.push_back(series);
  }
  return duplicates;
}

// The whole page of a daemon's store and job manager (not started): two
// configs that differ only in a parameter are two series, the queue gauges
// come from the manager, a schedule's failures are a counter, and promtool
// passes it.
TEST(Metrics, ConfigsThatDifferOnlyInAParameterAreTwoSeries) {
  const std::string path = ::testing::TempDir() + "/metrics_test_page.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  auto store = storage::Store::Open({path});
  ASSERT_TRUE(store.ok()) << store.status();
  v1::Job job;
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  job.mutable_spec()->mutable_base()->set_workload("mlp");
  auto job_id = (*store)->jobs().Insert(job);
  ASSERT_TRUE(job_id.ok()) << job_id.status();
  for (double rate : {0.01, 0.1}) {
    v1::Run run;
    run.set_job_id(*job_id);
    run.set_index(rate < 0.05 ? 0 : 1);
    run.set_state(v1::RUN_STATE_SUCCEEDED);
    run.mutable_config()->set_workload("mlp");
    run.mutable_config()->set_device("cpu");
    run.mutable_config()->set_mode(v1::MODE_TRAIN);
    run.mutable_config()->set_batch_size(8);
    run.mutable_config()->set_learning_rate(rate);
    run.mutable_result()->set_resolved_device("cpu");
    run.mutable_result()->set_throughput_samples_per_s(rate * 1000);
    run.mutable_result()->mutable_latency()->set_p50_ms(rate * 25);
    run.mutable_start_time()->set_seconds(1700000000);
    auto inserted = (*store)->runs().Insert(run);
    ASSERT_TRUE(inserted.ok()) << inserted.status();
  }
  // A job the store says runs, which no manager runs (its end could not
  // be written): the running gauges say 0, from the manager.
  v1::Job stale;
  stale.set_state(v1::JOB_STATE_RUNNING);
  stale.mutable_spec()->mutable_base()->set_workload("mlp");
  ASSERT_TRUE((*store)->jobs().Insert(stale).ok());
  v1::Schedule schedule;
  schedule.set_cron("0 2 * * *");
  schedule.set_failure_count(3);
  auto schedule_id = (*store)->schedules().Insert(schedule);
  ASSERT_TRUE(schedule_id.ok());

  JobManager jobs(DaemonOptions{}, store->get(), v1::HostInfo());
  setenv("GPUBENCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  GpuGauges gauges(v1::HostInfo{});
  unsetenv("GPUBENCH_NVML_LIBRARY");
  const std::string page = RenderMetrics(&jobs, store->get(), &gauges);

  EXPECT_TRUE(DuplicateSeries(page).empty()) << DuplicateSeries(page).front() << "\n" << page;
  size_t series = 0;
  for (size_t at = page.find("\ngpubench_last_throughput_samples_per_second{");
       at != std::string::npos;
       at = page.find("\ngpubench_last_throughput_samples_per_second{", at + 1)) {
    ++series;
    EXPECT_NE(page.find("config_key=\"", at), std::string::npos) << page;
  }
  EXPECT_EQ(series, 2u) << page;
  // Every gauge of the figure table (report/figures.h) that the runs have,
  // in base units: the median latency in seconds; none for figures an mlp
  // run does not have (tokens a second).
  EXPECT_NE(page.find("# TYPE gpubench_last_latency_p50_seconds gauge\n"), std::string::npos);
  EXPECT_NE(page.find("} 0.0025"), std::string::npos) << page;
  // p99 was not measured in these runs: no sample, not a zero.
  EXPECT_EQ(page.find("\ngpubench_last_latency_p99_seconds{"), std::string::npos) << page;
  EXPECT_EQ(page.find("\ngpubench_last_tokens_per_second{"), std::string::npos) << page;
  EXPECT_NE(page.find("gpubench_jobs_running 0\n"), std::string::npos) << page;
  EXPECT_NE(page.find("gpubench_jobs{state=\"running\"} 0\n"), std::string::npos) << page;
  EXPECT_NE(page.find("gpubench_schedule_failures_total{schedule=\"" + *schedule_id + "\"} 3\n"),
            std::string::npos)
      << page;
  EXPECT_EQ(Promtool(page), "");
  jobs.Shutdown();
}

}  // namespace
}  // namespace gpubench::server
