#include "report/profile_diff.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace gpubench::report {

ProfileDiff DiffWindows(const ProfiledWindow& a, const ProfiledWindow& b) {
  ProfileDiff diff;
  if (!(a.Samples() > 0) || !(b.Samples() > 0)) return diff;
  std::map<std::string, std::pair<const KernelRow*, const KernelRow*>> names;
  for (const KernelRow& r : a.rows) names[r.name].first = &r;
  for (const KernelRow& r : b.rows) names[r.name].second = &r;
  for (const auto& [name, sides] : names) {
    DiffRow row;
    row.name = name;
    const auto [ra, rb] = sides;
    row.known = (ra != nullptr || a.complete) && (rb != nullptr || b.complete);
    if (ra != nullptr) {
      row.a_calls = static_cast<double>(ra->count) / a.steps;
      row.a_us_per_call = ra->count > 0 ? ra->total_us / ra->count : 0;
    }
    if (rb != nullptr) {
      row.b_calls = static_cast<double>(rb->count) / b.steps;
      row.b_us_per_call = rb->count > 0 ? rb->total_us / rb->count : 0;
    }
    if (row.known) {
      const double us_a = ra != nullptr ? ra->total_us / a.Samples() : 0;
      const double us_b = rb != nullptr ? rb->total_us / b.Samples() : 0;
      row.delta_us = us_b - us_a;
      diff.a_us += us_a;
      diff.b_us += us_b;
    }
    diff.rows.push_back(std::move(row));
  }
  const double total = diff.b_us - diff.a_us;
  for (DiffRow& r : diff.rows) {
    if (r.known && total != 0) r.share = r.delta_us / total;
  }
  std::stable_sort(diff.rows.begin(), diff.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    if (x.known != y.known) return x.known;
    return std::abs(x.delta_us) > std::abs(y.delta_us);
  });
  return diff;
}

}  // namespace gpubench::report
