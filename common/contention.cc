#include "common/contention.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gpubench {

bool IsContended(const v1::Contention& c) {
  return c.jobs_beside_size() > 0 || c.gpu_processes() > 0 ||
         c.other_cpu_cores() > kContendedOtherCores;
}

std::string NotABaselineBecause(const v1::Run& run) {
  const v1::Contention& c = run.result().contention();
  if (c.contended()) {
    std::vector<std::string> what;
    if (c.jobs_beside_size() > 0) {
      what.push_back(absl::StrCat(c.jobs_beside_size(),
                                  c.jobs_beside_size() == 1 ? " job" : " jobs", " beside"));
    }
    if (c.gpu_processes() > 0) {
      what.push_back(absl::StrCat(c.gpu_processes(), " other GPU process",
                                  c.gpu_processes() == 1 ? "" : "es"));
    }
    if (c.other_cpu_cores() > kContendedOtherCores) {
      what.push_back(absl::StrFormat("%.1f cores busy elsewhere", c.other_cpu_cores()));
    }
    return absl::StrCat("contended (", absl::StrJoin(what, ", "), ")");
  }
  std::vector<std::string> thermal;
  for (const std::string& reason : run.result().telemetry().throttle_reasons()) {
    if (reason == "hw_slowdown" || reason == "sw_thermal" || reason == "hw_thermal" ||
        reason == "hw_power_brake") {
      thermal.push_back(reason);
    }
  }
  if (!thermal.empty()) return absl::StrCat("throttled (", absl::StrJoin(thermal, ", "), ")");
  return "";
}

}  // namespace gpubench
