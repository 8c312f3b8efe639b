#include "server/history.h"

#include <algorithm>
#include <cmath>

#include "common/verdict.h"

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
  c.set_ratio(value / median);
  c.set_history_spread((sorted.back() - sorted.front()) / median);
  // The verdict is the rule every view uses (common/verdict.h), on times
  // per sample: the history the baseline, this run the one candidate.
  std::vector<double> history_ms;
  for (double v : history) history_ms.push_back(v > 0 ? 1000 / v : 0);
  const verdict::Comparison v = verdict::CompareRepetitions(
      history_ms, {value > 0 ? 1000 / value : 0}, {rule.alpha, rule.threshold});
  c.set_p_value(v.p_value);
  c.set_history_noise(v.noise);
  switch (v.verdict) {
    case verdict::Verdict::kFaster: c.set_verdict(v1::VERDICT_IMPROVED); break;
    case verdict::Verdict::kSlower: c.set_verdict(v1::VERDICT_REGRESSED); break;
    case verdict::Verdict::kNoDifference: c.set_verdict(v1::VERDICT_NO_CHANGE); break;
    case verdict::Verdict::kTooNoisy: c.set_verdict(v1::VERDICT_TOO_NOISY); break;
    case verdict::Verdict::kNotComparable: c.set_verdict(v1::VERDICT_INSUFFICIENT_HISTORY); break;
  }
  return c;
}

}  // namespace gpubench::server
