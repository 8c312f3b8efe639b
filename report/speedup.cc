#include "report/speedup.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/spec.h"
#include "report/facets.h"
#include "report/format.h"

namespace gpubench::report {
namespace {

constexpr int kDefaultProfileIterations = 5;  // worker/measure.h's default

// Self time per sample of each category of a run's profile, microseconds.
std::map<std::string, double> CategoryTimesOf(const v1::Run& r, int iterations) {
  std::map<std::string, double> times;
  // The steps the profiled window ran (max_time_ms may end it before the
  // spec's count); runs stored before that was recorded ran the spec's.
  const int ran = r.result().profiled_iterations() > 0 ? r.result().profiled_iterations()
                                                       : iterations;
  const double samples = static_cast<double>(ran) * std::max(1, r.config().batch_size());
  for (const auto& c : r.result().profile().categories()) {
    times[c.category()] += c.self_time_us() / samples;
  }
  return times;
}

}  // namespace

std::vector<const v1::Run*> RepeatsOf(const v1::Run& run, const std::vector<const v1::Run*>& runs) {
  const std::string key = ConfigKey(run.config());
  std::vector<const v1::Run*> out = {&run};
  for (const v1::Run* r : runs) {
    if (r != &run && Measured(*r) && ConfigKey(r->config()) == key) out.push_back(r);
  }
  return out;
}

std::vector<DeviceSpeedup> DeviceSpeedups(const std::vector<const v1::Run*>& runs,
                                          int profile_iterations) {
  const int iterations = profile_iterations > 0 ? profile_iterations : kDefaultProfileIterations;
  std::vector<DeviceSpeedup> views;
  std::map<std::string, size_t> by_config;  // config key without device -> views index
  for (const v1::Run* run : runs) {
    const v1::Run& r = *run;
    if (!Measured(r)) continue;
    v1::RunConfig rest = r.config();
    rest.clear_device();
    const std::string key = ConfigKey(rest);
    auto [at, added] = by_config.emplace(key, views.size());
    if (added) views.push_back({DescribeConfig(rest), {}, {}});
    DeviceSpeedup& view = views[at->second];
    const std::string device = RunDevice(r);
    const bool seen = std::any_of(view.sides.begin(), view.sides.end(),
                                  [&](const DeviceSide& s) { return s.device == device; });
    if (!seen) view.sides.push_back({device, &r, RepeatsOf(r, runs), {}});
  }
  std::vector<DeviceSpeedup> out;
  for (DeviceSpeedup& view : views) {
    if (view.sides.size() < 2) continue;
    std::stable_partition(view.sides.begin(), view.sides.end(),
                          [](const DeviceSide& s) { return s.device == "cpu"; });
    const std::vector<const v1::Run*>& base = view.sides[0].runs;
    for (DeviceSide& side : view.sides) {
      side.vs_baseline = verdict::CompareRuns(base, side.runs, {});
      const verdict::Comparison& c = side.vs_baseline;
      side.speedup = c.verdict == verdict::Verdict::kNotComparable
                         ? side.run->result().throughput_samples_per_s() /
                               view.sides[0].run->result().throughput_samples_per_s()
                         : c.speedup.value;
      if (c.has_interval()) {
        side.speedup_low = c.speedup.ci95.low;
        side.speedup_high = c.speedup.ci95.high;
      }
    }
    view.sides[0].speedup = 1;
    const bool profiled = std::all_of(view.sides.begin(), view.sides.end(), [](const auto& s) {
      return !s.run->result().profile().categories().empty();
    });
    if (profiled) {
      std::vector<std::map<std::string, double>> times;
      std::map<std::string, bool> names;
      for (const DeviceSide& s : view.sides) {
        times.push_back(CategoryTimesOf(*s.run, iterations));
        for (const auto& [name, t] : times.back()) names[name] = true;
      }
      for (const auto& [name, unused] : names) {
        CategoryTimes row{name, {}};
        for (const auto& t : times) {
          auto it = t.find(name);
          row.us_per_sample.push_back(it == t.end() ? -1 : it->second);
        }
        view.categories.push_back(std::move(row));
      }
      std::stable_sort(view.categories.begin(), view.categories.end(),
                       [](const CategoryTimes& a, const CategoryTimes& b) {
                         return a.us_per_sample[0] > b.us_per_sample[0];
                       });
    }
    out.push_back(std::move(view));
  }
  return out;
}

}  // namespace gpubench::report
