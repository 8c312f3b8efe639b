// gpubench workloads: the registry's entries, what each reads and what
// applies to it.
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/estimate.h"
#include "common/spec_schema.h"
#include "common/workload_registry.h"

namespace gpubench::client {
namespace {

// "train, infer; eager, cuda_graph, aot; cpu, cuda, mps; world_size ranks"
std::string Applies(const WorkloadInfo& w) {
  std::vector<std::string> modes, executions, devices = {"cpu", "cuda"};
  if (!w.batched) modes.push_back("a kernel: no mode or batch");
  if (w.batched && w.trains) modes.push_back("train");
  if (w.batched && w.infers) modes.push_back("infer");
  executions.push_back("eager");
  if (w.graphs) executions.push_back("cuda_graph");
  if (w.compiles) executions.push_back("aot (infer)");
  if (w.on_mps) devices.push_back("mps");
  std::string text = absl::StrCat(absl::StrJoin(modes, ", "), "; ",
                                  absl::StrJoin(executions, ", "), "; ",
                                  absl::StrJoin(devices, ", "));
  if (w.distributed) absl::StrAppend(&text, "; world_size ranks");
  if (!w.host_input) absl::StrAppend(&text, "; input on the device only");
  if (w.checks_numerics) absl::StrAppend(&text, "; check_numerics");
  return text;
}

// A built-in model's size and forward cost at its defaults, each model_size
// where it has them: "11.7M parameters, 3.64 GFLOP forward a sample".
std::string CostText(const WorkloadInfo& w) {
  std::vector<std::string> sizes;
  for (const std::string& size : w.model_sizes) {
    if (size != "custom") sizes.push_back(size);  // custom is the spec's own shape
  }
  if (sizes.empty()) sizes = {""};
  std::vector<std::string> parts;
  for (const std::string& size : sizes) {
    const ModelCost c = w.cost(DefaultShape(w, size));
    parts.push_back(absl::StrCat(size.empty() ? "" : size + " ", Millions(c.parameters),
                                 " parameters, ", FlopCount(c.forward_flops_per_sample),
                                 " forward a sample"));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

int WorkloadsCommand(const Args& a, std::ostream& out, std::ostream& err) {
  if (a.positional.size() > 1) {
    err << "gpubench: workloads takes at most one workload name\n";
    return kExitUsage;
  }
  bool found = false;
  for (const WorkloadInfo* w : Workloads()) {
    if (!a.positional.empty() && a.positional[0] != w->name) continue;
    found = true;
    out << w->name << ": " << w->summary << "\n";
    if (!w->architecture.empty()) out << "  model:   " << w->architecture << "\n";
    if (w->cost != nullptr) out << "  cost:    " << CostText(*w) << " (at the defaults)\n";
    std::vector<std::string> params;
    for (const std::string& p : ParamsReadBy(w->name)) {
      const std::string d = DefaultText(*w, p);
      params.push_back(d.empty() ? p : absl::StrCat(p, "=", d));
    }
    if (w->id == WorkloadId::kDdp) params.push_back("and ddp_model's own");
    out << "  params:  " << (params.empty() ? "none" : absl::StrJoin(params, " ")) << "\n"
        << "  applies: " << Applies(*w) << "\n";
  }
  if (!found) {
    err << "gpubench: unknown workload \"" << a.positional[0] << "\"; expected one of "
        << WorkloadNames([](const WorkloadInfo&) { return true; }) << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace gpubench::client
