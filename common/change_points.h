// Change points in a series of measurements (a GPU's probe sessions, a
// schedule's nightly runs): where the series' level moved for good, not a
// single outlier. The detector is Apache Otava's (the Hunter paper, Fleming
// et al., ICPE 2023, doi 10.1145/3578244.3583719), so that the points
// agree with Otava's on the same series (tests/common/change_points_test.cc
// runs apache-otava 0.8.0 beside it):
//  1. split: E-divisive means (Matteson and James, 2014) over sliding windows
//     of `window` points, half a window apart; in each window the split that
//     maximises the energy statistic Q-hat is a change point while a
//     Student's t-test of the two sides gives p <= 10 x max_p, recursively;
//  2. merge: the weakest point (largest p, then smallest relative change)
//     is dropped and its neighbours' tests redone over the segments left,
//     until every point has p < max_p and a change beyond min_magnitude.
// gpubench adds one rule Otava 0.8 lacks (its PR #150): a point whose
// segment on either side is shorter than min_segment is dropped first, so a
// single slow night or a spike of one probe session is no change, and a
// change at the end of a series shows once min_segment points follow it.
// Across a family of series (a night's schedules, a fleet's GPUs),
// FalseDiscoveries keeps the expected share of false change points under
// q (Benjamini-Hochberg). Plain C++, thread-safe (no state).
#ifndef GPUBENCH_COMMON_CHANGE_POINTS_H_
#define GPUBENCH_COMMON_CHANGE_POINTS_H_

#include <vector>

namespace gpubench::stats {

struct ChangePointRule {
  int window = 50;           // Otava's window_len
  double max_p = 0.001;      // Otava's max_pvalue
  double min_magnitude = 0;  // Otava's min_magnitude: relative change
  int min_segment = 3;       // points on each side; 1 is Otava's rule
};

struct ChangePoint {
  int index = 0;  // the first point after the change
  // The t-test of the segments on either side (up to the neighbouring
  // change points): their means, population standard deviations, medians
  // and lengths, and its two-sided p-value.
  double p_value = 1;
  double mean_before = 0, mean_after = 0;
  double stddev_before = 0, stddev_after = 0;
  double median_before = 0, median_after = 0;
  int points_before = 0, points_after = 0;
  // mean_after / mean_before - 1.
  double change() const { return mean_before == 0 ? 0 : mean_after / mean_before - 1; }
};

// The change points of series, oldest value first, by index. Non-finite
// values are the caller's to leave out (the detector takes them as they
// are). Fewer than 2 * min_segment values have none.
std::vector<ChangePoint> FindChangePoints(const std::vector<double>& series,
                                          const ChangePointRule& rule);

// Benjamini-Hochberg at level q: which of p_values (one per hypothesis of a
// family of `hypotheses`, p_values.size() <= hypotheses; the untested ones
// count as p = 1) are discoveries: those at or below the largest p(k) with
// p(k) <= k q / hypotheses, k its rank.
std::vector<bool> FalseDiscoveries(const std::vector<double>& p_values, int hypotheses, double q);

}  // namespace gpubench::stats

#endif  // GPUBENCH_COMMON_CHANGE_POINTS_H_
