#include "server/metrics.h"

#include <cmath>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/sha256.h"
#include "common/spec.h"
#include "common/version.h"
#include "gpubench/v1/result.pb.h"
#include "report/facets.h"
#include "report/figures.h"
#include "report/format.h"
#include "server/job_manager.h"
#include "storage/store.h"

namespace gpubench::server {
namespace {

// How many of the newest succeeded runs the last-throughput gauges are read
// from: one series per distinct config among them.
constexpr int kLastRunsScanned = 1000;

// A label value with \, " and newlines escaped, as the text format asks.
std::string EscapeLabel(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return absl::StrFormat("%.17g", value);
}

// A short stable name of a config: two configs that differ only in a
// parameter (say learning_rate) describe alike, and without it would be two
// samples of one series.
std::string ConfigKeyLabel(const v1::RunConfig& config) {
  return Sha256Hex(ConfigKey(config)).substr(0, 12);
}

void WriteStore(storage::Store* store, const JobManager::Load& load, MetricsWriter* out) {
  auto jobs = store->jobs().CountByState();
  auto runs = store->runs().CountByWorkload();
  auto newest = store->runs().Newest(v1::RUN_STATE_SUCCEEDED, kLastRunsScanned);
  out->Family("gpubench_store_readable", "gauge",
              "1 when the daemon's SQLite store answered this scrape");
  out->Sample("gpubench_store_readable", {}, jobs.ok() && runs.ok() && newest.ok());
  if (jobs.ok()) {
    out->Family("gpubench_jobs", "gauge",
                "Jobs on this host, by state (queued and running as the daemon holds them, "
                "like gpubench_queue_depth and gpubench_jobs_running; the others as stored)");
    for (int s = v1::JOB_STATE_QUEUED; s <= v1::JobState_MAX; ++s) {
      if (!v1::JobState_IsValid(s)) continue;
      const auto found = jobs->find(static_cast<v1::JobState>(s));
      double count = found == jobs->end() ? 0 : found->second;
      // The store lags the daemon while it cannot write (a full disk): a
      // job ended there still reads running in it, and counts here as it
      // ended.
      if (s == v1::JOB_STATE_QUEUED) count = load.queued;
      if (s == v1::JOB_STATE_RUNNING) count = load.running;
      if (const auto u = load.unsaved.find(static_cast<v1::JobState>(s)); u != load.unsaved.end()) {
        count += u->second;
      }
      out->Sample("gpubench_jobs", {{"state", report::Short(v1::JobState_descriptor(), s)}},
                  count);
    }
  }
  if (runs.ok()) {
    out->Family("gpubench_runs_total", "counter",
                "Runs stored on this host, by workload and final state (failures: "
                "state=\"failed\"; cancelled runs are not kept)");
    for (const auto& count : *runs) {
      out->Sample("gpubench_runs_total",
                  {{"workload", count.workload},
                   {"state", report::Short(v1::RunState_descriptor(), count.state)}},
                  count.runs);
    }
  }
  if (newest.ok()) {
    std::set<std::string> seen;
    std::vector<std::pair<Labels, const v1::Run*>> last;
    for (const v1::Run& run : *newest) {
      if (!seen.insert(ConfigKey(run.config())).second) continue;
      last.push_back({{{"workload", run.config().workload()},
                       {"config", report::DescribeConfig(run.config())},
                       {"config_key", ConfigKeyLabel(run.config())},
                       {"device", run.result().resolved_device()}},
                      &run});
    }
    // A gauge for each figure of report/figures.h that names one, a sample
    // for each config whose newest run has the figure.
    for (const report::Figure& figure : report::Figures()) {
      if (figure.prometheus == nullptr) continue;
      out->Family(figure.prometheus, "gauge",
                  absl::StrCat("The newest succeeded run of each config (among the newest ",
                               kLastRunsScanned, " runs): ", figure.help,
                               figure.prometheus_scale == 1 ? "" : " (in base units)"));
      for (const auto& [labels, run] : last) {
        if (std::optional<double> v = figure.number(*run)) {
          out->Sample(figure.prometheus, labels, *v * figure.prometheus_scale);
        }
      }
    }
    out->Family("gpubench_last_run_timestamp_seconds", "gauge",
                "When the newest succeeded run of each config started (Unix time)");
    for (const auto& [labels, run] : last) {
      out->Sample("gpubench_last_run_timestamp_seconds", labels,
                  run->start_time().seconds() + run->start_time().nanos() / 1e9);
    }
  }
  if (auto schedules = store->schedules().List(); schedules.ok()) {
    out->Family("gpubench_schedule_failures_total", "counter",
                "Due times of a schedule whose job could not be submitted (gpubench schedule "
                "list shows the last error)");
    for (const v1::Schedule& s : *schedules) {
      out->Sample("gpubench_schedule_failures_total", {{"schedule", s.schedule_id()}},
                  static_cast<double>(s.failure_count()));
    }
  }
}

}  // namespace

void MetricsWriter::Family(absl::string_view name, absl::string_view type,
                           absl::string_view help) {
  std::string escaped;
  for (char c : help) {
    if (c == '\\') {
      escaped += "\\\\";
    } else if (c == '\n') {
      escaped += "\\n";
    } else {
      escaped += c;
    }
  }
  absl::StrAppend(&text_, "# HELP ", name, " ", escaped, "\n# TYPE ", name, " ", type, "\n");
}

void MetricsWriter::Sample(absl::string_view name, const Labels& labels, double value) {
  absl::StrAppend(&text_, name);
  if (!labels.empty()) {
    text_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      absl::StrAppend(&text_, i ? "," : "", labels[i].first, "=\"", EscapeLabel(labels[i].second),
                      "\"");
    }
    text_ += '}';
  }
  absl::StrAppend(&text_, " ", FormatValue(value), "\n");
}

GpuGauges::GpuGauges(const v1::HostInfo& host) : hostname_(host.hostname()) {
  absl::MutexLock lock(&mu_);
  for (const v1::GpuInfo& info : host.gpus()) {
    std::string why;
    auto nvml = telemetry::OpenNvml(info.uuid(), info.index(), &why);
    if (nvml == nullptr) {
      unavailable_ = why;
      continue;
    }
    gpus_.push_back(Gpu{info, std::move(nvml)});
  }
  if (host.gpus().empty()) unavailable_ = "no NVIDIA GPU on this host";
}

void GpuGauges::Write(MetricsWriter* out) {
  struct Reading {
    Labels labels;
    telemetry::Sample sample;
  };
  std::vector<Reading> readings;
  {
    absl::MutexLock lock(&mu_);
    for (Gpu& gpu : gpus_) {
      Reading r;
      if (!gpu.nvml->Read(&r.sample)) continue;
      // DCGM exporter's labels, in the snake_case promtool asks for: its
      // UUID, modelName and Hostname are uuid, model_name and hostname here
      // (docs/daemon.md: a relabelling restores them for DCGM dashboards).
      r.labels = {{"gpu", std::to_string(gpu.info.index())},
                  {"uuid", gpu.info.uuid()},
                  {"device", absl::StrCat("nvidia", gpu.info.index())},
                  {"model_name", gpu.info.name()},
                  {"hostname", hostname_}};
      readings.push_back(std::move(r));
    }
  }
  out->Family("gpubench_gpu_telemetry_available", "gauge",
              readings.empty() ? "0: no GPU readings (" + unavailable_ + ")"
                               : "1: this host's GPUs are read through NVML at each scrape");
  out->Sample("gpubench_gpu_telemetry_available", {}, readings.empty() ? 0 : 1);
  if (readings.empty()) return;
  // DCGM exporter's fields where one exists, in its units.
  struct Gauge {
    const char* name;
    const char* help;
    double (*value)(const telemetry::Sample&);
  };
  static const Gauge kGauges[] = {
      {"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).",
       [](const telemetry::Sample& s) -> double { return s.gpu_utilization_pct; }},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).",
       [](const telemetry::Sample& s) -> double { return s.memory_utilization_pct; }},
      {"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).",
       [](const telemetry::Sample& s) -> double {
         return static_cast<double>(s.memory_used_bytes) / (1 << 20);
       }},
      {"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).",
       [](const telemetry::Sample& s) -> double { return s.sm_clock_mhz; }},
      {"DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).",
       [](const telemetry::Sample& s) -> double { return s.memory_clock_mhz; }},
      {"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).",
       [](const telemetry::Sample& s) -> double { return s.power_w; }},
      {"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).",
       [](const telemetry::Sample& s) -> double { return s.temperature_c; }},
      {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "Current clock event (throttle) reasons, NVML's bitmask.",
       [](const telemetry::Sample& s) -> double {
         return static_cast<double>(s.throttle_reasons_mask);
       }},
      {"gpubench_gpu_pcie_rx_bytes_per_second", "PCIe receive throughput, NVML's last 20 ms.",
       [](const telemetry::Sample& s) -> double { return s.pcie_rx_bytes_per_s; }},
      {"gpubench_gpu_pcie_tx_bytes_per_second", "PCIe transmit throughput, NVML's last 20 ms.",
       [](const telemetry::Sample& s) -> double { return s.pcie_tx_bytes_per_s; }},
  };
  for (const Gauge& g : kGauges) {
    out->Family(g.name, "gauge", g.help);
    for (const Reading& r : readings) out->Sample(g.name, r.labels, g.value(r.sample));
  }
  out->Family("gpubench_gpu_throttled", "gauge",
              "1 while a clock event reason (NVML's name in the reason label) holds the "
              "clocks down");
  for (const Reading& r : readings) {
    for (uint64_t bit = 1; bit <= 0x100; bit <<= 1) {
      Labels labels = r.labels;
      labels.push_back({"reason", telemetry::ThrottleReasonNames(bit).front()});
      out->Sample("gpubench_gpu_throttled", labels, (r.sample.throttle_reasons_mask & bit) ? 1 : 0);
    }
  }
}

std::string RenderMetrics(JobManager* jobs, storage::Store* store, GpuGauges* gpus) {
  MetricsWriter out;
  const v1::HostInfo& host = jobs->host();
  out.Family("gpubench_build_info", "gauge",
             "1, labelled with this daemon's version and its worker's LibTorch, CUDA and cuDNN");
  out.Sample("gpubench_build_info",
             {{"version", kGpubenchVersion},
              {"libtorch", host.torch_version()},
              {"cuda", host.cuda_version()},
              {"cudnn", host.cudnn_version()}},
             1);
  const JobManager::Load load = jobs->CurrentLoad();
  out.Family("gpubench_queue_depth", "gauge", "Jobs waiting in this daemon's queue");
  out.Sample("gpubench_queue_depth", {}, load.queued);
  out.Family("gpubench_jobs_running", "gauge", "Jobs running now");
  out.Sample("gpubench_jobs_running", {}, load.running);
  WriteStore(store, load, &out);
  gpus->Write(&out);
  return out.text();
}

}  // namespace gpubench::server
