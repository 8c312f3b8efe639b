#include "report/energy.h"

#include <algorithm>
#include <map>

#include "common/spec.h"
#include "report/facets.h"
#include "report/format.h"

namespace gpubench::report {

std::vector<EnergyCurve> EnergyCurves(const std::vector<const v1::Run*>& runs) {
  std::vector<EnergyCurve> curves;
  std::map<std::string, size_t> by_config;
  for (const v1::Run* r : runs) {
    const v1::RunResult& res = r->result();
    if (!Measured(*r) || res.telemetry().samples_per_joule() <= 0) continue;
    v1::RunConfig rest = r->config();
    rest.clear_power_limit_w();
    rest.clear_gpu_clocks();
    auto [at, added] = by_config.emplace(ConfigKey(rest), curves.size());
    if (added) curves.push_back({DescribeConfig(rest), {}});
    EnergyPoint p;
    p.run = r;
    p.power_limit_w = r->fingerprint().has_power_limit_w() ? r->fingerprint().power_limit_w()
                                                          : r->config().power_limit_w();
    p.gpu_clocks = r->config().gpu_clocks();
    p.samples_per_s = res.throughput_samples_per_s();
    p.samples_per_joule = res.telemetry().samples_per_joule();
    p.power_w = res.telemetry().power_w().mean();
    std::vector<EnergyPoint>& points = curves[at->second].points;
    const bool repeat = std::any_of(points.begin(), points.end(), [&](const EnergyPoint& q) {
      return q.run->config().power_limit_w() == r->config().power_limit_w() &&
             q.gpu_clocks == p.gpu_clocks;
    });
    if (!repeat) points.push_back(p);  // a repeat of a setting: its first run
  }
  std::vector<EnergyCurve> out;
  for (EnergyCurve& c : curves) {
    if (c.points.size() < 2) continue;
    for (EnergyPoint& p : c.points) {
      p.on_curve = std::none_of(c.points.begin(), c.points.end(), [&](const EnergyPoint& q) {
        return q.samples_per_s >= p.samples_per_s && q.samples_per_joule >= p.samples_per_joule &&
               (q.samples_per_s > p.samples_per_s || q.samples_per_joule > p.samples_per_joule);
      });
    }
    std::stable_sort(c.points.begin(), c.points.end(),
                     [](const EnergyPoint& a, const EnergyPoint& b) {
                       return a.power_limit_w > b.power_limit_w;
                     });
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace gpubench::report
