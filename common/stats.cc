#include "common/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpubench::stats {

double QuantileSorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * (sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - lo;
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double Mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  return std::accumulate(values.begin(), values.end(), 0.0) / values.size();
}

double Stddev(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const double mean = Mean(values);
  double sum_sq = 0;
  for (double v : values) sum_sq += (v - mean) * (v - mean);
  return std::sqrt(sum_sq / (values.size() - 1));
}

double CoefficientOfVariation(const std::vector<double>& values) {
  const double mean = Mean(values);
  return mean == 0 ? 0 : Stddev(values) / mean;
}

Summary Summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.count = static_cast<int>(values.size());
  s.mean = Mean(values);
  s.stddev = Stddev(values);
  s.min = values.front();
  s.max = values.back();
  s.p50 = QuantileSorted(values, 0.50);
  s.p90 = QuantileSorted(values, 0.90);
  s.p95 = QuantileSorted(values, 0.95);
  s.p99 = QuantileSorted(values, 0.99);
  return s;
}

double TCritical95(int df) {
  // Two-sided 0.975 quantiles of Student's t for df = 1..30.
  static const double kTable[] = {
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return 0;
  if (df <= 30) return kTable[df - 1];
  if (df <= 60) return 2.000;
  if (df <= 120) return 1.980;
  return 1.960;
}

Interval MeanConfidence95(const std::vector<double>& values) {
  const double mean = Mean(values);
  if (values.size() < 2) return {mean, mean};
  const double half = TCritical95(static_cast<int>(values.size()) - 1) *
                      Stddev(values) / std::sqrt(values.size());
  return {mean - half, mean + half};
}

}  // namespace gpubench::stats
