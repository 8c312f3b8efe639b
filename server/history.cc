#include "server/history.h"

#include <algorithm>
#include <cmath>

#include "common/stats.h"

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
  const stats::PredictionTest test = stats::NewValueAgainstHistory(value, history);
  c.set_p_value(test.p_value);
  c.set_history_noise(test.noise);
  const bool beyond_threshold = std::abs(ratio - 1) > rule.threshold;
  if (!beyond_threshold) {
    c.set_verdict(v1::VERDICT_NO_CHANGE);
  } else if (test.p_value >= rule.alpha) {
    c.set_verdict(v1::VERDICT_TOO_NOISY);
  } else {
    c.set_verdict(ratio < 1 ? v1::VERDICT_REGRESSED : v1::VERDICT_IMPROVED);
  }
  return c;
}

}  // namespace gpubench::server
