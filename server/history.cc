#include "server/history.h"

#include <algorithm>

namespace gpubench::server {

v1::HistoryComparison CompareWithHistory(double value, const std::vector<double>& history,
                                         const HistoryRule& rule) {
  v1::HistoryComparison c;
  c.set_value_samples_per_s(value);
  c.set_history_count(history.size());
  if (history.empty() || static_cast<int>(history.size()) < rule.min_history) {
    c.set_verdict(v1::VERDICT_INSUFFICIENT_HISTORY);
    return c;
  }
  std::vector<double> sorted = history;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median =
      n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  c.set_baseline_median_samples_per_s(median);
  if (median <= 0) {
    c.set_verdict(v1::VERDICT_INSUFFICIENT_HISTORY);
    return c;
  }
  const double ratio = value / median;
  c.set_ratio(ratio);
  c.set_history_spread((sorted.back() - sorted.front()) / median);
  if (ratio < 1 - rule.threshold && value < sorted.front()) {
    c.set_verdict(v1::VERDICT_REGRESSED);
  } else if (ratio > 1 + rule.threshold && value > sorted.back()) {
    c.set_verdict(v1::VERDICT_IMPROVED);
  } else {
    c.set_verdict(v1::VERDICT_NO_CHANGE);
  }
  return c;
}

}  // namespace gpubench::server
