// How a run config is described: one table of its facets (workload, device,
// batch, precision, ...) that both the CLI's one-line labels and the HTML
// report's columns, legends and groupings read from.
#ifndef GPUBENCH_REPORT_FACETS_H_
#define GPUBENCH_REPORT_FACETS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "report/report.h"
#include "gpubench/v1/result.pb.h"
#include "gpubench/v1/spec.pb.h"

namespace gpubench::report {

// A config in a few words, for the CLI's tables and progress lines: what runs,
// how, then where: "resnet50 train b32 fp16 cl graph cuda:0",
// "matmul 4096x4096x4096 bf16", "copy 256.0 MiB host_to_device pinned fp32".
// The words are the facets' (internal::Facet::word). Thread-safe.
std::string DescribeConfig(const v1::RunConfig& config);

namespace internal {

// One facet of a run's config. The report's run table shows the facets that
// vary within a job; its plots group runs by all facets but the one on their
// axis.
enum FacetId {
  kWorkload,
  kModelSize,
  kParams,
  kMode,
  kDevice,
  kBatch,
  kPrecision,
  kChannelsLast,
  kCudnnBenchmark,
  kExecution,
  kInput,
  kLoaders,
  kPinned,
  kPipeline,
  kOptimizer,
  kLearningRate,
  kGpuSetup,  // the power limit and clock lock a run asked for
  kFacetCount
};

// A set of facets.
using FacetMask = uint32_t;
constexpr FacetMask Bit(FacetId f) { return FacetMask{1} << f; }

struct Facet {
  // The run table's column header: "batch".
  const char* header;
  // A group label is prefix + value + suffix: "fp16", "batch 64", "4 loaders".
  const char* prefix;
  const char* suffix;
  // The facet of one run as the report shows it: "64"; "-" where the facet
  // does not apply (loader threads of device input). The device is where the
  // run ran (result.resolved_device) when known.
  std::string (*value)(const v1::RunConfig&, const v1::RunResult&);
  // Its word in DescribeConfig: "b64"; empty leaves it out. Null for facets
  // the one-line label does not name.
  std::string (*word)(const v1::RunConfig&);
};

// Every facet, indexed by FacetId.
const std::array<Facet, kFacetCount>& Facets();

// Input comes from host loader threads (the pipeline facets apply).
bool HostInput(const v1::RunConfig& c);
// The run trains (the optimizer facets and the loss apply).
bool Trains(const v1::RunConfig& c);

// A run's facet values, indexed by FacetId.
using FacetValues = std::array<std::string, kFacetCount>;

FacetValues ValuesOf(const v1::RunConfig& c, const v1::RunResult& r);

// Identifies the group of runs that agree on every facet outside `excluded`.
std::string GroupKey(const FacetValues& v, FacetMask excluded);

// Names a group by the facets that vary in its job, outside `excluded` and
// where they apply: "cuda:0, fp16, batch 64". Empty when none does.
std::string GroupLabel(const FacetValues& v,
                       const std::array<bool, kFacetCount>& varying,
                       FacetMask excluded);

// A job's runs with their facets. Points into the ReportJob, which must
// outlive it.
struct JobView {
  const ReportJob* src = nullptr;
  std::vector<const v1::Run*> runs;  // by index
  std::vector<FacetValues> values;   // per run
  // The facets whose value differs between runs.
  std::array<bool, kFacetCount> varying{};
};

JobView MakeView(const ReportJob& job);

// Groups a job's runs that agree outside `excluded`, in order of first
// appearance, keeping only the runs `keep` accepts. Each group lists indexes
// into view.runs.
template <typename Keep>
std::vector<std::vector<size_t>> Groups(const JobView& view, FacetMask excluded,
                                        Keep keep) {
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < view.runs.size(); ++i) {
    if (!keep(*view.runs[i])) continue;
    const std::string key = GroupKey(view.values[i], excluded);
    auto [it, added] = by_key.emplace(key, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

}  // namespace internal
}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_FACETS_H_
