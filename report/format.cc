#include "report/format.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/spec.h"

namespace gpubench::report {

std::string Bytes(int64_t bytes) {
  if (bytes <= 0) return "-";
  if (bytes >= (int64_t{1} << 30)) return absl::StrFormat("%.2f GiB", bytes / double(1 << 30));
  return absl::StrFormat("%.1f MiB", bytes / double(1 << 20));
}

std::string ThroughputIntervalText(const v1::RunResult& result, int decimals) {
  const double low = result.throughput_ci_low(), high = result.throughput_ci_high();
  if (high > 0 && std::isfinite(high) && std::isfinite(low)) {
    return absl::StrFormat("%.*f-%.*f", decimals, low, decimals, high);
  }
  if (result.interval_basis().empty()) return "-";
  return absl::StrCat(result.interval_samples(), " ", result.interval_basis(), ": no interval");
}

std::string Short(const google::protobuf::EnumDescriptor* type, int value) {
  return EnumShortName(type, value == 0 ? 1 : value);
}

bool Measured(const v1::Run& run) {
  return run.state() == v1::RUN_STATE_SUCCEEDED && run.result().throughput_samples_per_s() > 0;
}

bool OutOfMemory(const v1::Run& run) {
  return run.state() == v1::RUN_STATE_OUT_OF_MEMORY ||
         run.state() == v1::RUN_STATE_SKIPPED_AFTER_OOM;
}

std::set<std::string> OutOfMemoryConfigs(const std::vector<const v1::Run*>& runs) {
  std::set<std::string> keys;
  for (const v1::Run* r : runs) {
    if (OutOfMemory(*r)) keys.insert(ConfigKeyWithoutBatch(r->config()));
  }
  return keys;
}

std::string ByteRate(double bytes_per_s) {
  return bytes_per_s >= 1e12 ? absl::StrFormat("%.2f TB/s", bytes_per_s / 1e12)
                             : absl::StrFormat("%.1f GB/s", bytes_per_s / 1e9);
}

bool GpuTelemetry(const v1::RunResult& res) {
  return res.telemetry().available() && res.telemetry().sample_count() > 0 &&
         res.resolved_device().rfind("cuda", 0) == 0;
}

std::vector<std::string> RunWarnings(const v1::Run& run) {
  const v1::RunResult& res = run.result();
  const bool figures = (run.state() == v1::RUN_STATE_SUCCEEDED ||
                        run.state() == v1::RUN_STATE_CANCELLED) &&
                       res.throughput_samples_per_s() > 0;
  if (!figures) return {};
  std::vector<std::string> out;
  if (run.state() == v1::RUN_STATE_CANCELLED) out.push_back("partial");
  if (res.stopped_at_max_time()) {
    out.push_back("stopped at max-time");
  } else if (!res.stable()) {
    out.push_back("unstable");
  }
  if (res.telemetry().throttled()) out.push_back("throttled");
  if (res.contention().contended()) out.push_back("contended");
  return out;
}

std::string WarningMeaning(const std::string& warning) {
  if (warning == "partial") return "the job was cancelled mid-run: figures of the part measured";
  if (warning == "stopped at max-time") {
    return "--max-time-ms ended the run, warm-up included, before its trials were done: "
           "fewer iterations, a wider interval";
  }
  if (warning == "unstable") {
    return "the last 3 windows' throughput still varied more than --cv-threshold allows "
           "when the time ran out: the figure may still be moving";
  }
  if (warning == "throttled") {
    return "the GPU lowered its clocks (power, heat) while the run was measured";
  }
  if (warning == "contended") {
    return "other jobs, other processes on its GPU, or over 0.5 CPU cores of other work "
           "shared the host while it was measured";
  }
  return "";
}

std::vector<const v1::Run*> RunPointers(const std::vector<v1::Run>& runs) {
  std::vector<const v1::Run*> pointers;
  pointers.reserve(runs.size());
  for (const v1::Run& r : runs) pointers.push_back(&r);
  return pointers;
}

std::string RunDevice(const v1::Run& run) {
  return run.result().resolved_device().empty() ? run.config().device()
                                                : run.result().resolved_device();
}

std::string FlopRate(double flops_per_s) {
  if (flops_per_s >= 1e12) return absl::StrFormat("%.1f TFLOP/s", flops_per_s / 1e12);
  if (flops_per_s >= 1e8) return absl::StrFormat("%.1f GFLOP/s", flops_per_s / 1e9);
  return "";
}

std::string NumericsNote(const v1::NumericsCheck& n) {
  if (!n.checked()) {
    return n.error().empty() ? "" : "numerics not checked: " + n.error();
  }
  if (n.non_finite()) return "numerics FAILED: inf or NaN in the output or loss";
  std::vector<std::string> parts = {absl::StrFormat("output %.1e", n.output_rel_error())};
  if (!n.gradient_parameter().empty() || n.loss_rel_error() > 0) {
    parts.push_back(absl::StrFormat("loss %.1e", n.loss_rel_error()));
  }
  if (!n.gradient_parameter().empty()) {
    parts.push_back(absl::StrFormat("gradient of %s %.1e", n.gradient_parameter(),
                                    n.gradient_rel_error()));
  }
  const bool train = !n.gradient_parameter().empty() || n.loss_rel_error() > 0;
  return absl::StrFormat("numerics %s: %s (tolerance %.0e on the %s)",
                         n.passed() ? "ok" : "FAILED", absl::StrJoin(parts, ", "), n.tolerance(),
                         train ? "loss" : "output");
}

}  // namespace gpubench::report
