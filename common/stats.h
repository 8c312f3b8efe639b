// Descriptive statistics over samples. Plain C++, thread-compatible.
#ifndef GPUBENCH_COMMON_STATS_H_
#define GPUBENCH_COMMON_STATS_H_

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpubench::stats {

struct Summary {
  int count = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n - 1)
  double min = 0;
  double p50 = 0;
  double p90 = 0;
  double p95 = 0;
  double p99 = 0;
  double max = 0;
};

// Summarises values; all zeros when values is empty.
Summary Summarize(std::vector<double> values);

// The q-quantile (q in [0, 1]) of sorted values, interpolating linearly
// between closest ranks (numpy's default). 0 when empty.
double QuantileSorted(const std::vector<double>& sorted, double q);

double Mean(const std::vector<double>& values);

// Sample standard deviation; 0 for fewer than 2 values.
double Stddev(const std::vector<double>& values);

// Coefficient of variation stddev / mean; 0 when the mean is 0.
double CoefficientOfVariation(const std::vector<double>& values);

// Two-sided 95% critical value of Student's t with df degrees of freedom
// (normal 1.96 for large df).
double TCritical95(int df);

// 95% confidence interval of the mean of values: mean -/+ t * s / sqrt(n).
// Both bounds equal the mean for fewer than 2 values.
struct Interval {
  double low = 0;
  double high = 0;
};
Interval MeanConfidence95(const std::vector<double>& values);

// A distribution-free 95% interval of the q-quantile (q in (0, 1)) of
// sorted values: the order statistics [x(l), x(u)] whose binomial
// coverage P(l <= B < u), B ~ Binomial(n, q), is at least 95%, with at
// most 2.5% on each side. Both bounds 0 where n is too small for such a
// pair to exist (the p99 needs 368 values, the p90 36, the median 6).
Interval QuantileInterval95(const std::vector<double>& sorted, double q);

// The median of values (not necessarily sorted); 0 when empty.
double Median(std::vector<double> values);

// Two-sided Mann-Whitney U test of "a and b come from the same
// distribution". Exact (the permutation distribution of U) when no value
// ties and the sides are small (n_a * n_b <= 2500: repetitions, where the
// normal approximation is wrong); else by the normal approximation with tie
// and continuity corrections. p_value is 1 when either side is empty or
// every value ties. The smallest p two sides of n can give is 2 / C(2n, n):
// 0.1 at 3 a side, 0.029 at 4, 0.0079 at 5.
struct RankTest {
  double u = 0;        // U of a: pairs (x in a, y in b) with x > y, ties 1/2
  double z = 0;        // standardised U (the normal approximation's)
  double p_value = 1;
  bool exact = false;  // p_value from the exact distribution
};
// InvalidArgument when a value is not finite (NaN or infinite): ranks of
// such values mean nothing.
absl::StatusOr<RankTest> MannWhitneyU(const std::vector<double>& a,
                                      const std::vector<double>& b);

// Two-sided p-value of Student's t statistic with df degrees of freedom.
double StudentTwoSidedP(double t, double df);

// Does one new value belong with earlier ones (repetitions of the same
// measurement)? The t statistic of value against history's mean and spread
// with a prediction interval's width, s * sqrt(1 + 1/n): it holds the next
// repetition 95% of the time when nothing changed. Needs 3 or more history
// values (p_value 1 with fewer, or when history does not vary and value
// equals it).
struct PredictionTest {
  double t = 0;
  double p_value = 1;
  double noise = 0;  // history's coefficient of variation
};
PredictionTest NewValueAgainstHistory(double value, const std::vector<double>& history);

// median(a) / median(b) with a percentile-bootstrap 95% interval: resamples
// of each side (with replacement, fixed seed, so the same samples give the
// same interval). Sides longer than max_values are thinned evenly first.
struct Ratio {
  double value = 0;
  Interval ci95;
};
// InvalidArgument when a value is not finite.
absl::StatusOr<Ratio> RatioOfMedians(const std::vector<double>& a, const std::vector<double>& b,
                                     int resamples = 1000, std::size_t max_values = 4000);

// OK when every value is finite; else InvalidArgument naming `what` and the
// first bad index.
absl::Status CheckFinite(const std::vector<double>& values, const char* what);

}  // namespace gpubench::stats

#endif  // GPUBENCH_COMMON_STATS_H_
