#include "report/change_history.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/fingerprint.h"

namespace gpubench::report {

bool SeriesChange::worse() const {
  const bool up = point.mean_after > point.mean_before;
  return series->higher_is_better ? !up : up;
}

ChangeFamily FindChanges(const std::vector<Series>& family, const stats::ChangePointRule& rule,
                         double q) {
  ChangeFamily out;
  out.rule = rule;
  out.q = q;
  out.series = family.size();
  std::vector<SeriesChange> found;
  int without = 0;  // series with no point: a hypothesis each, not rejected
  for (const Series& s : family) {
    std::vector<double> values;
    for (const SeriesPoint& p : s.points) values.push_back(p.value);
    const std::vector<stats::ChangePoint> points = stats::FindChangePoints(values, rule);
    if (points.empty()) ++without;
    for (const stats::ChangePoint& cp : points) {
      SeriesChange c;
      c.series = &s;
      c.point = cp;
      c.first_after = &s.points[cp.index];
      c.environment = absl::StrJoin(
          FingerprintChanges(s.points[cp.index - 1].fingerprint, c.first_after->fingerprint), ", ");
      found.push_back(std::move(c));
    }
  }
  out.found = found.size();
  std::vector<double> p_values;
  for (const SeriesChange& c : found) p_values.push_back(c.point.p_value);
  const std::vector<bool> keep = stats::FalseDiscoveries(p_values, out.found + without, q);
  for (size_t i = 0; i < found.size(); ++i) {
    if (keep[i]) out.kept.push_back(std::move(found[i]));
  }
  std::stable_sort(out.kept.begin(), out.kept.end(),
                   [](const SeriesChange& a, const SeriesChange& b) {
                     if (a.worse() != b.worse()) return a.worse();
                     return std::abs(a.point.change()) > std::abs(b.point.change());
                   });
  return out;
}

std::string DescribeFamily(const ChangeFamily& f) {
  return absl::StrFormat(
      "change points: %d in %d series (E-divisive means, t-test p < %g, %d points a side; "
      "Benjamini-Hochberg q %g over the family: %d of %d kept)",
      static_cast<int>(f.kept.size()), f.series, f.rule.max_p, f.rule.min_segment, f.q,
      static_cast<int>(f.kept.size()), f.found);
}

}  // namespace gpubench::report
