#include "common/change_points.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/stats.h"

namespace gpubench::stats {
namespace {

// Sums of |x_i - x_j| over rectangles of index pairs within [start, end) of
// a series: a 2-D prefix sum, so each sum is four lookups.
class PairDistances {
 public:
  PairDistances(const std::vector<double>& x, int start, int end)
      : start_(start), n_(end - start), prefix_((n_ + 1) * (n_ + 1), 0.0) {
    for (int i = 0; i < n_; ++i) {
      for (int j = 0; j < n_; ++j) {
        At(i + 1, j + 1) = std::fabs(x[start + i] - x[start + j]) + At(i, j + 1) + At(i + 1, j) -
                           At(i, j);
      }
    }
  }
  // Sum over rows [a, b) and columns [c, d), indices of the series.
  double Sum(int a, int b, int c, int d) const {
    a -= start_, b -= start_, c -= start_, d -= start_;
    return Get(b, d) - Get(a, d) - Get(b, c) + Get(a, c);
  }

 private:
  double& At(int i, int j) { return prefix_[i * (n_ + 1) + j]; }
  double Get(int i, int j) const { return prefix_[i * (n_ + 1) + j]; }
  int start_, n_;
  std::vector<double> prefix_;
};

struct Candidate {
  int index = 0;
  double qhat = 0;
};

// E-divisive's energy statistic of X = x[s, tau) against Y = x[tau, kappa):
// 2/(m+n) sum|X-Y| - 2m/((m+n)(n-1)) sum_{i<k}|X_i-X_k|
//                  - 2n/((m+n)(m-1)) sum_{j<k}|Y_j-Y_k|, a term 0 where its
// side has one point.
double Qhat(const PairDistances& d, int s, int tau, int kappa) {
  const double n = tau - s, m = kappa - tau;
  double q = 2 / (m + n) * d.Sum(s, tau, tau, kappa);
  if (n > 1) q -= 2 * m / ((m + n) * (n - 1)) * d.Sum(s, tau, s, tau) / 2;
  if (m > 1) q -= 2 * n / ((m + n) * (m - 1)) * d.Sum(tau, kappa, tau, kappa) / 2;
  return q;
}

// The split of [s, e) with the largest Q-hat over every tau and kappa,
// s < tau < kappa <= e; the first in (tau, kappa) order on ties (numpy's
// argmax, as Otava).
Candidate BestSplit(const PairDistances& d, int s, int e) {
  Candidate best{s + 1, Qhat(d, s, s + 1, s + 2)};
  for (int tau = s + 1; tau < e; ++tau) {
    for (int kappa = tau + 1; kappa <= e; ++kappa) {
      const double q = Qhat(d, s, tau, kappa);
      if (q > best.qhat) best = {tau, q};
    }
  }
  return best;
}

double PopulationStddev(const std::vector<double>& x, int a, int b, double mean) {
  if (b - a < 2) return 0;
  double sum = 0;
  for (int i = a; i < b; ++i) sum += (x[i] - mean) * (x[i] - mean);
  return std::sqrt(sum / (b - a));
}

double SegmentMean(const std::vector<double>& x, int a, int b) {
  return std::accumulate(x.begin() + a, x.begin() + b, 0.0) / (b - a);
}

// The t-test of x[a, at) against x[at, b), as Otava's: scipy's
// ttest_ind_from_stats (pooled variance) given numpy's population
// deviations.
ChangePoint Test(const std::vector<double>& x, int a, int at, int b) {
  ChangePoint cp;
  cp.index = at;
  const int n1 = at - a, n2 = b - at;
  cp.points_before = n1;
  cp.points_after = n2;
  cp.mean_before = SegmentMean(x, a, at);
  cp.mean_after = SegmentMean(x, at, b);
  cp.stddev_before = PopulationStddev(x, a, at, cp.mean_before);
  cp.stddev_after = PopulationStddev(x, at, b, cp.mean_after);
  cp.median_before = Median(std::vector<double>(x.begin() + a, x.begin() + at));
  cp.median_after = Median(std::vector<double>(x.begin() + at, x.begin() + b));
  if (n1 + n2 <= 2) return cp;
  const double df = n1 + n2 - 2;
  const double pooled = ((n1 - 1) * cp.stddev_before * cp.stddev_before +
                         (n2 - 1) * cp.stddev_after * cp.stddev_after) / df;
  const double denom = std::sqrt(pooled * (1.0 / n1 + 1.0 / n2));
  const double diff = cp.mean_before - cp.mean_after;
  if (denom == 0) {
    cp.p_value = diff == 0 ? 1 : 0;
    return cp;
  }
  cp.p_value = StudentTwoSidedP(diff / denom, df);
  return cp;
}

// Otava's relative change: the larger of the change either way.
double Magnitude(const ChangePoint& cp) {
  const double forward = cp.mean_before == 0 ? 0 : cp.mean_after / cp.mean_before - 1;
  const double backward = cp.mean_after == 0 ? 0 : cp.mean_before / cp.mean_after - 1;
  return std::max(std::fabs(forward), std::fabs(backward));
}

// The boundary before and after point i of sorted points over [start, end).
int Before(const std::vector<ChangePoint>& cps, size_t i, int start) {
  return i == 0 ? start : cps[i - 1].index;
}
int After(const std::vector<ChangePoint>& cps, size_t i, int end) {
  return i + 1 == cps.size() ? end : cps[i + 1].index;
}

void Retest(const std::vector<double>& x, int start, int end, std::vector<ChangePoint>* cps,
            size_t i) {
  if (i >= cps->size()) return;
  (*cps)[i] = Test(x, Before(*cps, i, start), (*cps)[i].index, After(*cps, i, end));
}

// E-divisive within [start, end): the best split of the segments so far is
// taken while its test gives p <= max_p.
std::vector<ChangePoint> Divide(const std::vector<double>& x, int start, int end, double max_p) {
  const PairDistances d(x, start, end);
  std::vector<ChangePoint> cps;
  while (true) {
    bool found = false;
    Candidate best;
    int seg_a = 0, seg_b = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      const int a = Before(cps, i, start), b = i == cps.size() ? end : cps[i].index;
      if (b - a < 2) continue;
      const Candidate c = BestSplit(d, a, b);
      if (!found || c.qhat > best.qhat) best = c, seg_a = a, seg_b = b, found = true;
    }
    if (!found) break;
    const ChangePoint cp = Test(x, seg_a, best.index, seg_b);
    if (!(cp.p_value <= max_p)) break;
    cps.insert(std::upper_bound(cps.begin(), cps.end(), cp,
                                [](const ChangePoint& l, const ChangePoint& r) {
                                  return l.index < r.index;
                                }),
               cp);
  }
  return cps;
}

// Otava's split step: the union of each window's points, then each retested
// between its neighbours over the whole series.
std::vector<ChangePoint> Split(const std::vector<double>& x, int window, double max_p) {
  const int n = x.size(), step = std::max(1, window / 2);
  std::vector<ChangePoint> cps;
  for (int start = 0; start < n;) {
    const int end = std::min(start + window, n);
    const std::vector<ChangePoint> found = Divide(x, start, end, max_p);
    for (const ChangePoint& cp : found) {
      if (std::none_of(cps.begin(), cps.end(),
                       [&](const ChangePoint& c) { return c.index == cp.index; })) {
        cps.push_back(cp);
      }
    }
    start = std::max(found.empty() ? 0 : found.back().index, start + step);
  }
  std::sort(cps.begin(), cps.end(),
            [](const ChangePoint& l, const ChangePoint& r) { return l.index < r.index; });
  for (size_t i = 0; i < cps.size(); ++i) Retest(x, 0, n, &cps, i);
  return cps;
}

// The point to drop next, or -1 when every point stands: first one with a
// segment shorter than min_segment (the largest p among them), then Otava's
// rule (the largest p when it is max_p or more, else the smallest change
// when it is min_magnitude or less).
int Weakest(const std::vector<ChangePoint>& cps, const ChangePointRule& rule) {
  int weakest = -1;
  for (size_t i = 0; i < cps.size(); ++i) {
    const bool short_side = std::min(cps[i].points_before, cps[i].points_after) < rule.min_segment;
    if (short_side && (weakest < 0 || cps[i].p_value > cps[weakest].p_value)) weakest = i;
  }
  if (weakest >= 0 || cps.empty()) return weakest;
  auto by_p = [](const ChangePoint& l, const ChangePoint& r) { return l.p_value < r.p_value; };
  weakest = std::max_element(cps.begin(), cps.end(), by_p) - cps.begin();
  if (cps[weakest].p_value >= rule.max_p) return weakest;
  auto by_size = [](const ChangePoint& l, const ChangePoint& r) {
    return Magnitude(l) < Magnitude(r);
  };
  weakest = std::min_element(cps.begin(), cps.end(), by_size) - cps.begin();
  return Magnitude(cps[weakest]) > rule.min_magnitude ? -1 : weakest;
}

}  // namespace

std::vector<ChangePoint> FindChangePoints(const std::vector<double>& series,
                                          const ChangePointRule& rule) {
  const int n = series.size();
  if (n < 2 * std::max(1, rule.min_segment) || n < 3) return {};
  // Otava's first pass is 10x max_p (2x from 0.05, max_p itself from 0.5).
  const double first_p = rule.max_p < 0.05  ? rule.max_p * 10
                         : rule.max_p < 0.5 ? rule.max_p * 2
                                            : rule.max_p;
  std::vector<ChangePoint> cps = Split(series, std::max(2, rule.window), first_p);
  for (int i = Weakest(cps, rule); i >= 0; i = Weakest(cps, rule)) {
    cps.erase(cps.begin() + i);
    if (i > 0) Retest(series, 0, n, &cps, i - 1);
    Retest(series, 0, n, &cps, i);
  }
  return cps;
}

std::vector<bool> FalseDiscoveries(const std::vector<double>& p_values, int hypotheses, double q) {
  std::vector<size_t> order(p_values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p_values[a] < p_values[b]; });
  const double m = std::max<double>(hypotheses, p_values.size());
  size_t kept = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    if (p_values[order[k]] <= (k + 1) * q / m) kept = k + 1;
  }
  std::vector<bool> discovery(p_values.size(), false);
  for (size_t k = 0; k < kept; ++k) discovery[order[k]] = true;
  return discovery;
}

}  // namespace gpubench::stats
