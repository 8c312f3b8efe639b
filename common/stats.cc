#include "common/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gpubench::stats {

double QuantileSorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * (sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - lo;
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Interval QuantileInterval95(const std::vector<double>& sorted, double q) {
  const int n = static_cast<int>(sorted.size());
  if (n == 0 || q <= 0 || q >= 1) return {};
  // The binomial's cumulative distribution, term by term in logs.
  std::vector<double> cdf(n + 1);
  double sum = 0;
  for (int k = 0; k <= n; ++k) {
    sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) +
                    k * std::log(q) + (n - k) * std::log1p(-q));
    cdf[k] = sum;
  }
  // l: the largest with P(B <= l - 1) <= 2.5%; u: the smallest with
  // P(B >= u) <= 2.5% (1-based ranks).
  int l = 0;
  while (l < n && cdf[l] <= 0.025) ++l;
  int u = n + 1;
  while (u - 2 >= 0 && 1 - cdf[u - 2] <= 0.025) --u;
  if (l < 1 || u > n) return {};
  return {sorted[l - 1], sorted[u - 1]};
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
  // Cornish-Fisher expansion around the normal quantile; within 0.001 of
  // the exact value from df = 30 on.
  const double z = 1.959964, n = df;
  return z + (z * z * z + z) / (4 * n) +
         (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * n * n);
}

Interval MeanConfidence95(const std::vector<double>& values) {
  const double mean = Mean(values);
  if (values.size() < 2) return {mean, mean};
  const double half = TCritical95(static_cast<int>(values.size()) - 1) *
                      Stddev(values) / std::sqrt(values.size());
  return {mean - half, mean + half};
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  if (values.size() % 2 == 1) return values[mid];
  const double upper = values[mid];
  return (*std::max_element(values.begin(), values.begin() + mid) + upper) / 2;
}

absl::Status CheckFinite(const std::vector<double>& values, const char* what) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(absl::StrCat(what, "[", i, "] is not a finite number (",
                                                     values[i], "): damaged samples?"));
    }
  }
  return absl::OkStatus();
}

namespace {

// P(U <= u) and P(U >= u) for sides of n1 and n2 values without ties: the
// number of orderings giving each U (the largest value is an a, adding n2
// pairs, or a b, adding none), over C(n1 + n2, n1).
std::pair<double, double> ExactUTails(int n1, int n2, int u) {
  // row[j] holds the distribution for sides i and j, U from 0 to i*j; rows
  // roll over i.
  std::vector<std::vector<double>> last(n2 + 1), row(n2 + 1);
  for (int i = 0; i <= n1; ++i) {
    for (int j = 0; j <= n2; ++j) {
      std::vector<double>& c = row[j];
      c.assign(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        c[0] = 1;
        continue;
      }
      const std::vector<double>& a_last = last[j];    // sides i-1, j: U - j
      const std::vector<double>& b_last = row[j - 1];  // sides i, j-1
      for (size_t k = 0; k < c.size(); ++k) {
        if (k >= static_cast<size_t>(j) && k - j < a_last.size()) c[k] += a_last[k - j];
        if (k < b_last.size()) c[k] += b_last[k];
      }
    }
    std::swap(last, row);
  }
  const std::vector<double>& c = last[n2];
  double total = 0, low = 0, high = 0;
  for (size_t k = 0; k < c.size(); ++k) {
    total += c[k];
    if (static_cast<int>(k) <= u) low += c[k];
    if (static_cast<int>(k) >= u) high += c[k];
  }
  return {low / total, high / total};
}

}  // namespace

absl::StatusOr<RankTest> MannWhitneyU(const std::vector<double>& a,
                                      const std::vector<double>& b) {
  if (auto s = CheckFinite(a, "baseline samples"); !s.ok()) return s;
  if (auto s = CheckFinite(b, "candidate samples"); !s.ok()) return s;
  RankTest t;
  const double n1 = a.size(), n2 = b.size();
  if (a.empty() || b.empty()) return t;
  // Rank the pooled values; tied values share their mean rank.
  std::vector<std::pair<double, bool>> pooled;  // (value, from a)
  pooled.reserve(a.size() + b.size());
  for (double v : a) pooled.emplace_back(v, true);
  for (double v : b) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  const double n = pooled.size();
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i + 1;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double mean_rank = (i + 1 + j) / 2.0;  // ranks i+1 .. j
    const double ties = j - i;
    tie_term += ties * ties * ties - ties;
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].second) rank_sum_a += mean_rank;
    }
    i = j;
  }
  t.u = rank_sum_a - n1 * (n1 + 1) / 2;
  if (tie_term == 0 && n1 * n2 <= 2500) {
    const auto [low, high] = ExactUTails(a.size(), b.size(), static_cast<int>(std::lround(t.u)));
    t.exact = true;
    t.p_value = std::min(1.0, 2 * std::min(low, high));
  }
  const double mean_u = n1 * n2 / 2;
  const double var_u = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var_u <= 0) return t;
  const double diff = t.u - mean_u;
  const double corrected = std::max(0.0, std::fabs(diff) - 0.5);
  t.z = (diff < 0 ? -corrected : corrected) / std::sqrt(var_u);
  if (!t.exact) t.p_value = std::min(1.0, std::erfc(std::fabs(t.z) / std::sqrt(2.0)));
  return t;
}

namespace {

// The continued fraction of the regularized incomplete beta function
// (Numerical Recipes' betacf, modified Lentz).
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-14;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    for (int odd = 0; odd < 2; ++odd) {
      const double num = odd == 0 ? m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
                                  : -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
      d = 1 + num * d;
      if (std::fabs(d) < kTiny) d = kTiny;
      c = 1 + num / c;
      if (std::fabs(c) < kTiny) c = kTiny;
      d = 1 / d;
      h *= d * c;
      if (odd == 1 && std::fabs(d * c - 1) < kEps) return h;
    }
  }
  return h;
}

// I_x(a, b).
double RegularizedBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

}  // namespace

double StudentTwoSidedP(double t, double df) {
  if (!std::isfinite(t)) return 0;
  if (df <= 0) return 1;
  return std::min(1.0, RegularizedBeta(df / 2, 0.5, df / (df + t * t)));
}

PredictionTest NewValueAgainstHistory(double value, const std::vector<double>& history) {
  PredictionTest p;
  const int n = history.size();
  if (n < 3) return p;
  const double mean = Mean(history), s = Stddev(history);
  p.noise = mean != 0 ? s / std::fabs(mean) : 0;
  if (s == 0) {
    p.p_value = value == mean ? 1 : 0;
    return p;
  }
  p.t = (value - mean) / (s * std::sqrt(1 + 1.0 / n));
  p.p_value = StudentTwoSidedP(p.t, n - 1);
  return p;
}

namespace {

// Every k-th value, so that at most max_values remain.
std::vector<double> Thin(const std::vector<double>& values, size_t max_values) {
  if (values.size() <= max_values) return values;
  std::vector<double> out;
  out.reserve(max_values);
  const double step = static_cast<double>(values.size()) / max_values;
  for (size_t i = 0; i < max_values; ++i) out.push_back(values[static_cast<size_t>(i * step)]);
  return out;
}

}  // namespace

absl::StatusOr<Ratio> RatioOfMedians(const std::vector<double>& a_in,
                                     const std::vector<double>& b_in, int resamples,
                                     std::size_t max_values) {
  if (auto s = CheckFinite(a_in, "baseline samples"); !s.ok()) return s;
  if (auto s = CheckFinite(b_in, "candidate samples"); !s.ok()) return s;
  Ratio r;
  const std::vector<double> a = Thin(a_in, max_values), b = Thin(b_in, max_values);
  const double mb = Median(b);
  if (a.empty() || b.empty() || mb == 0) return r;
  r.value = Median(a) / mb;
  r.ci95 = {r.value, r.value};
  if (a.size() < 2 || b.size() < 2 || resamples < 10) return r;
  std::mt19937_64 rng(0x9e3779b97f4a7c15ULL);  // fixed: reproducible intervals
  std::vector<double> ratios, ra(a.size()), rb(b.size());
  ratios.reserve(resamples);
  for (int i = 0; i < resamples; ++i) {
    std::uniform_int_distribution<size_t> pick_a(0, a.size() - 1), pick_b(0, b.size() - 1);
    for (double& v : ra) v = a[pick_a(rng)];
    for (double& v : rb) v = b[pick_b(rng)];
    const double m = Median(rb);
    if (m != 0) ratios.push_back(Median(ra) / m);
  }
  std::sort(ratios.begin(), ratios.end());
  r.ci95 = {QuantileSorted(ratios, 0.025), QuantileSorted(ratios, 0.975)};
  return r;
}

}  // namespace gpubench::stats
