// Change points on seeded series: a planted 5% step is found within two
// points, 100 series with nothing planted give at most 5 false points in
// all, a single spike is no change, and on the same series the points are
// Apache Otava's (apache-otava, run by tests/tools/otava_change_points.py).
#include "common/change_points.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpubench::stats {
namespace {

// n values around 100 with a coefficient of variation of `noise`, times
// (1 + step) from index at on (no step where at < 0).
std::vector<double> Series(uint64_t seed, int n, double noise, int at = -1, double step = 0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, noise);
  std::vector<double> x;
  for (int i = 0; i < n; ++i) x.push_back(100 * (1 + normal(rng)) * (at >= 0 && i >= at ? 1 + step : 1));
  return x;
}

std::vector<int> Indices(const std::vector<ChangePoint>& cps) {
  std::vector<int> out;
  for (const ChangePoint& cp : cps) out.push_back(cp.index);
  return out;
}

TEST(ChangePoints, PlantedStepIsFoundWithinTwoPoints) {
  const ChangePointRule rule;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const int at = 8 + seed % 25;
    const std::vector<double> x = Series(seed, 40, 0.01, at, seed % 2 ? -0.05 : 0.05);
    const std::vector<ChangePoint> cps = FindChangePoints(x, rule);
    ASSERT_EQ(cps.size(), 1u) << "seed " << seed << " step at " << at << ": points "
                              << absl::StrJoin(Indices(cps), ",");
    EXPECT_LE(std::abs(cps[0].index - at), 2) << "seed " << seed;
    EXPECT_NEAR(cps[0].change(), seed % 2 ? -0.05 : 0.05, 0.01);
    EXPECT_LT(cps[0].p_value, rule.max_p);
    EXPECT_EQ(cps[0].points_before + cps[0].points_after, 40);
  }
}

TEST(ChangePoints, SeriesWithNothingPlantedHaveFewFalsePoints) {
  std::vector<double> p_values;
  for (uint64_t seed = 1000; seed < 1100; ++seed) {
    for (const ChangePoint& cp : FindChangePoints(Series(seed, 40, 0.01), ChangePointRule())) {
      p_values.push_back(cp.p_value);
    }
  }
  int kept = 0;
  for (bool discovery : FalseDiscoveries(p_values, 100, 0.05)) kept += discovery;
  std::printf("false change points in 100 A/A series of 40: %zu, %d after Benjamini-Hochberg\n",
              p_values.size(), kept);
  EXPECT_LE(p_values.size(), 5u);
  EXPECT_LE(kept, 5);
}

TEST(ChangePoints, ASlowLastPointIsNoChangeButThreeAre) {
  std::vector<double> x = Series(7, 30, 0.005);
  x[15] *= 1.3;  // a spike inside: no change by either rule
  ChangePointRule otava;
  otava.min_segment = 1;
  EXPECT_TRUE(FindChangePoints(x, ChangePointRule()).empty());
  EXPECT_TRUE(FindChangePoints(x, otava).empty());
  x.back() *= 1.3;  // the latest night slow: Otava's rule calls it a change
  EXPECT_EQ(Indices(FindChangePoints(x, otava)), std::vector<int>{29});
  EXPECT_TRUE(FindChangePoints(x, ChangePointRule()).empty());
  std::vector<double> tail = Series(8, 30, 0.005, 27, 0.1);  // three points after a step
  const std::vector<ChangePoint> cps = FindChangePoints(tail, ChangePointRule());
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 27);
  EXPECT_EQ(cps[0].points_after, 3);
  tail.pop_back();  // two: not yet a change
  EXPECT_TRUE(FindChangePoints(tail, ChangePointRule()).empty());
}

TEST(ChangePoints, ShortOrFlatSeriesHaveNone) {
  EXPECT_TRUE(FindChangePoints({}, ChangePointRule()).empty());
  EXPECT_TRUE(FindChangePoints({1, 2, 3, 4, 5}, ChangePointRule()).empty());
  EXPECT_TRUE(FindChangePoints(std::vector<double>(30, 5.0), ChangePointRule()).empty());
}

TEST(ChangePoints, FalseDiscoveriesAreBenjaminiHochbergs) {
  // Ranks 1-4 of 10 hypotheses at q 0.05: thresholds 0.005, 0.01, 0.015,
  // 0.02; the largest rank under its threshold is 3, so ranks 1-3 stay.
  const std::vector<bool> kept = FalseDiscoveries({0.004, 0.03, 0.012, 0.011}, 10, 0.05);
  EXPECT_EQ(kept, (std::vector<bool>{true, false, true, true}));
  EXPECT_EQ(FalseDiscoveries({0.2, 0.9}, 2, 0.05), (std::vector<bool>{false, false}));
  EXPECT_TRUE(FalseDiscoveries({}, 0, 0.05).empty());
}

// The same seeded series through both: planted steps up and down, two
// steps, nothing, spikes, long series over several windows, at Otava's rule
// (min_segment 1) and its defaults (window 50, max_p 0.001).
TEST(ChangePoints, AgreeWithApacheOtava) {
  std::vector<std::vector<double>> all;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const int n = 20 + (seed * 7) % 140;
    std::vector<double> x = Series(seed, n, 0.01 + 0.005 * (seed % 3));
    if (seed % 4 != 0) {
      std::vector<double> step = Series(seed, n, 0.01, n / 3 + seed % 5, seed % 2 ? 0.05 : -0.08);
      x = step;
    }
    if (seed % 5 == 0) x[n / 2] *= 1.25;
    if (seed % 6 == 0) {
      for (int i = 2 * n / 3; i < n; ++i) x[i] *= 1.1;
    }
    all.push_back(x);
  }
  const std::string path = testing::TempDir() + "/otava_series.json";
  {
    std::ofstream f(path);
    f.precision(17);
    f << "{\"window\": 50, \"max_p\": 0.001, \"series\": [";
    for (size_t i = 0; i < all.size(); ++i) f << (i ? "," : "") << "[" << absl::StrJoin(all[i], ",") << "]";
    f << "]}";
  }
  const std::string out_path = path + ".out";
  const std::string command = absl::StrCat("python3 ", GPUBENCH_SOURCE_DIR,
                                           "/tests/tools/otava_change_points.py ", path, " > ",
                                           out_path);
  ASSERT_EQ(std::system(command.c_str()), 0)
      << command << " failed: deploy/test.sh installs apache-otava";
  std::ifstream in(out_path);
  std::stringstream text;
  text << in.rdbuf();
  ChangePointRule otava;
  otava.min_segment = 1;
  std::vector<std::string> ours;
  int points = 0;
  for (const auto& x : all) {
    const std::vector<int> idx = Indices(FindChangePoints(x, otava));
    points += idx.size();
    ours.push_back(absl::StrCat("[", absl::StrJoin(idx, ", "), "]"));
  }
  EXPECT_EQ(absl::StrCat("[", absl::StrJoin(ours, ", "), "]"), text.str());
  EXPECT_GE(points, 30) << "the series must have change points to agree on";
}

}  // namespace
}  // namespace gpubench::stats
