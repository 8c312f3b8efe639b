// compare --explain's diff of two profiled windows on hand-made tables.
#include "report/profile_diff.h"

#include <gtest/gtest.h>

namespace gpubench::report {
namespace {

ProfiledWindow Window(int64_t steps, double samples_per_step, std::vector<KernelRow> rows,
                      bool complete = true) {
  ProfiledWindow w;
  w.steps = steps;
  w.samples_per_step = samples_per_step;
  w.rows = std::move(rows);
  w.complete = complete;
  return w;
}

TEST(ProfileDiff, ASlowerOperatorComesFirstWithItsShareOfTheDifference) {
  // 5 steps of 8 samples each side: gemm unchanged, load 300 µs a sample
  // slower, relu 1 µs a sample faster.
  const ProfiledWindow a = Window(5, 8, {{"gemm", 10, 400}, {"load", 5, 40}, {"relu", 5, 80}});
  const ProfiledWindow b =
      Window(5, 8, {{"gemm", 10, 400}, {"load", 5, 40 + 300 * 40}, {"relu", 5, 40}});
  const ProfileDiff d = DiffWindows(a, b);
  ASSERT_EQ(d.rows.size(), 3u);
  EXPECT_EQ(d.rows[0].name, "load");
  EXPECT_DOUBLE_EQ(d.rows[0].delta_us, 300);
  EXPECT_DOUBLE_EQ(d.rows[0].a_calls, 1);
  EXPECT_DOUBLE_EQ(d.rows[0].b_us_per_call, (40 + 300 * 40) / 5.0);
  EXPECT_NEAR(d.rows[0].share, 300 / 299.0, 1e-12);
  EXPECT_EQ(d.rows[1].name, "relu");
  EXPECT_DOUBLE_EQ(d.rows[1].delta_us, -1);
  EXPECT_EQ(d.rows[2].name, "gemm");
  EXPECT_DOUBLE_EQ(d.rows[2].delta_us, 0);
  EXPECT_DOUBLE_EQ(d.a_us, 520 / 40.0);
  EXPECT_DOUBLE_EQ(d.b_us - d.a_us, 299);
}

TEST(ProfileDiff, TimesAreASamplesSoABiggerBatchThatIsCheaperPerSampleShowsAsFaster) {
  // B's batch is 8 times A's and each call takes 4 times as long: per sample
  // it halves. Per step it would look slower.
  const ProfiledWindow a = Window(4, 8, {{"addmm", 8, 80}});
  const ProfiledWindow b = Window(2, 64, {{"addmm", 4, 160}});
  const ProfileDiff d = DiffWindows(a, b);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(d.rows[0].a_calls, 2);
  EXPECT_DOUBLE_EQ(d.rows[0].b_calls, 2);
  EXPECT_DOUBLE_EQ(d.rows[0].a_us_per_call, 10);
  EXPECT_DOUBLE_EQ(d.rows[0].b_us_per_call, 40);
  EXPECT_DOUBLE_EQ(d.rows[0].delta_us, 160 / 128.0 - 80 / 32.0);
  EXPECT_DOUBLE_EQ(d.rows[0].share, 1);
}

TEST(ProfileDiff, ANameThatOnlyOneSideRanCountsAsNewWhereTheOtherSideIsWhole) {
  // A cast only B runs (a changed precision): whole traces on both sides.
  const ProfileDiff d =
      DiffWindows(Window(1, 1, {{"mm", 1, 10}}), Window(1, 1, {{"mm", 1, 10}, {"_to_copy", 3, 6}}));
  ASSERT_EQ(d.rows.size(), 2u);
  EXPECT_EQ(d.rows[0].name, "_to_copy");
  EXPECT_TRUE(d.rows[0].known);
  EXPECT_DOUBLE_EQ(d.rows[0].a_calls, 0);
  EXPECT_DOUBLE_EQ(d.rows[0].delta_us, 6);
}

TEST(ProfileDiff, ANameMissingFromATopNTableIsUnknownAndLast) {
  // A's table is a top-N one: "tail" may have run there below its last row.
  const ProfileDiff d = DiffWindows(Window(1, 1, {{"mm", 1, 10}}, /*complete=*/false),
                                    Window(1, 1, {{"mm", 1, 30}, {"tail", 1, 500}}));
  ASSERT_EQ(d.rows.size(), 2u);
  EXPECT_EQ(d.rows[0].name, "mm");
  EXPECT_DOUBLE_EQ(d.rows[0].share, 1);
  EXPECT_EQ(d.rows[1].name, "tail");
  EXPECT_FALSE(d.rows[1].known);
  EXPECT_DOUBLE_EQ(d.b_us, 30);  // the unknown row counts on neither side
}

TEST(ProfileDiff, ASideWithoutStepsOrSamplesGivesNoRows) {
  EXPECT_TRUE(DiffWindows(Window(0, 8, {{"mm", 1, 1}}), Window(1, 8, {{"mm", 1, 1}})).rows.empty());
  EXPECT_TRUE(DiffWindows(Window(1, 8, {{"mm", 1, 1}}), Window(1, 0, {{"mm", 1, 1}})).rows.empty());
}

}  // namespace
}  // namespace gpubench::report
