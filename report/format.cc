#include "report/format.h"

#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/spec.h"

namespace gpubench::report {

std::string Bytes(int64_t bytes) {
  if (bytes <= 0) return "-";
  if (bytes >= (int64_t{1} << 30)) return absl::StrFormat("%.2f GiB", bytes / double(1 << 30));
  return absl::StrFormat("%.1f MiB", bytes / double(1 << 20));
}

std::string Short(const google::protobuf::EnumDescriptor* type, int value) {
  return EnumShortName(type, value == 0 ? 1 : value);
}

bool Measured(const v1::Run& run) {
  return run.state() == v1::RUN_STATE_SUCCEEDED && run.result().throughput_samples_per_s() > 0;
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
