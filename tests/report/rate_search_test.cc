// --find max-rate's steering and judging (report/rate_search.h).
#include "report/rate_search.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpubench::report {
namespace {

// A server whose p99s meet the targets up to capacity requests a second:
// the search brackets it by doubling, then narrows the bracket to within
// its tolerance, each step a geometric midpoint.
std::vector<double> Search(double start, double capacity, RateSearch* search) {
  std::vector<double> tried;
  for (auto rate = search->Next(); rate; rate = search->Next()) {
    tried.push_back(*rate);
    search->Add(*rate, *rate <= capacity);
  }
  return tried;
}

TEST(RateSearch, DoublesToABracketThenNarrowsItToTheTolerance) {
  RateSearch search(1);
  const std::vector<double> tried = Search(1, 7.3, &search);
  ASSERT_GE(tried.size(), 5u);
  EXPECT_EQ(std::vector<double>(tried.begin(), tried.begin() + 4),
            (std::vector<double>{1, 2, 4, 8}));
  EXPECT_LE(search.best(), 7.3);
  EXPECT_GT(search.failed_above(), 7.3);
  EXPECT_LE(search.failed_above(), search.best() * 1.1);
  EXPECT_EQ(search.points(), static_cast<int>(tried.size()));
}

TEST(RateSearch, HalvesFromARateThatFailsAndGivesUpAtTheFloor) {
  RateSearch high(64);
  Search(64, 3, &high);
  EXPECT_LE(high.best(), 3);
  EXPECT_GT(high.best(), 3 / 1.1);
  RateSearch none(1, 0.1, 12, 0.1);
  const std::vector<double> tried = Search(1, 0, &none);
  EXPECT_EQ(none.best(), 0);
  EXPECT_GE(tried.back(), 0.1);
  EXPECT_LT(tried.back(), 0.2);
}

// A server that meets every rate is doubled up to the schema's bound on
// the rate, 10^6 requests a second, and no further.
TEST(RateSearch, DoublingStopsAtTheRatesBound) {
  RateSearch search(300000, 0.1, 50);
  const std::vector<double> tried = Search(300000, 1e9, &search);
  EXPECT_EQ(tried, (std::vector<double>{300000, 600000, 1000000}));
  EXPECT_EQ(search.best(), 1000000);
}

// A rate that met the targets above one that failed does not move the
// answer past the failure (noise, or a load that is not monotone).
TEST(RateSearch, AMeetAboveAFailureDoesNotPassIt) {
  RateSearch search(1);
  search.Add(4, false);
  search.Add(2, true);
  search.Add(8, true);
  EXPECT_EQ(search.best(), 2);
  EXPECT_EQ(search.failed_above(), 4);
}

v1::Run ServingRun(double ttft_p99, double tpot_p99, int finished) {
  v1::Run run;
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  run.mutable_config()->set_mode(v1::MODE_SERVE);
  run.mutable_config()->mutable_serve()->set_slo_ttft_ms(200);
  run.mutable_config()->mutable_serve()->set_slo_tpot_ms(20);
  v1::ServeResult* s = run.mutable_result()->mutable_serve();
  s->mutable_ttft()->set_p99_ms(ttft_p99);
  s->mutable_tpot()->set_p99_ms(tpot_p99);
  s->mutable_e2e()->set_p99_ms(100000);  // no bound given: not judged
  s->set_requests(finished);
  s->set_requests_asked(200);
  return run;
}

TEST(RateSearch, ARunMeetsItsSlosWhenEveryBoundedP99IsWithin) {
  std::string why;
  EXPECT_TRUE(MeetsSlos(ServingRun(200, 19.5, 200), &why)) << why;
  EXPECT_EQ(why, "ttft p99 200 ms <= 200 ms, tpot p99 19.5 ms <= 20 ms");
  EXPECT_FALSE(MeetsSlos(ServingRun(240.1, 19.5, 200), &why));
  EXPECT_EQ(why, "ttft p99 240.1 ms > 200 ms");
  EXPECT_FALSE(MeetsSlos(ServingRun(10, 10, 150), &why));
  EXPECT_EQ(why, "only 150 of 200 measured requests finished within max_time_ms");
  v1::Run failed = ServingRun(10, 10, 200);
  failed.set_state(v1::RUN_STATE_FAILED);
  EXPECT_FALSE(MeetsSlos(failed, &why));
}

}  // namespace
}  // namespace gpubench::report
