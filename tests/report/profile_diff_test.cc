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
  EXPECT_DOUBLE_EQ(d.rows[0].delta_us_per_sample, 300);
  EXPECT_DOUBLE_EQ(d.rows[0].a_calls_per_step, 1);
  EXPECT_DOUBLE_EQ(d.rows[0].b_us_per_call, (40 + 300 * 40) / 5.0);
  EXPECT_NEAR(d.rows[0].share, 300 / 299.0, 1e-12);
  EXPECT_EQ(d.rows[1].name, "relu");
  EXPECT_DOUBLE_EQ(d.rows[1].delta_us_per_sample, -1);
  EXPECT_EQ(d.rows[2].name, "gemm");
  EXPECT_DOUBLE_EQ(d.rows[2].delta_us_per_sample, 0);
  EXPECT_DOUBLE_EQ(d.a_us_per_sample, 520 / 40.0);
  EXPECT_DOUBLE_EQ(d.b_us_per_sample - d.a_us_per_sample, 299);
}

// A graph's replay in B for A's eager operators: +141 us against -140.5 us
// a sample nets +0.5, a share of which would read 28,000%: no shares.
TEST(ProfileDiff, RowsThatCancelOutGetNoShareOfTheirNet) {
  const ProfiledWindow a =
      Window(1, 1, {{"aten::cudnn_convolution", 53, 100.5}, {"aten::add", 16, 40}});
  const ProfiledWindow b = Window(1, 1, {{"(cuda graph replay)", 1, 141}});
  const ProfileDiff d = DiffWindows(a, b);
  ASSERT_EQ(d.rows.size(), 3u);
  EXPECT_TRUE(d.cancels);
  EXPECT_DOUBLE_EQ(d.moved_us_per_sample, 281.5);
  EXPECT_EQ(d.rows[0].name, "(cuda graph replay)");
  for (const DiffRow& r : d.rows) EXPECT_EQ(r.share, 0) << r.name;
  EXPECT_EQ(CellsOf(d.rows[0]).share, "-");
  // Against a given whole (the span's difference), a share all the same.
  EXPECT_EQ(CellsOf(d.rows[0], -507.6).share, "-27.8%");
  // A net of 10% of what moved or more keeps its shares.
  const ProfileDiff kept = DiffWindows(a, Window(1, 1, {{"(cuda graph replay)", 1, 200}}));
  EXPECT_FALSE(kept.cancels);
  EXPECT_NE(kept.rows[0].share, 0);
}

TEST(ProfileDiff, TimesAreASamplesSoABiggerBatchThatIsCheaperPerSampleShowsAsFaster) {
  // B's batch is 8 times A's and each call takes 4 times as long: per sample
  // it halves. Per step it would look slower.
  const ProfiledWindow a = Window(4, 8, {{"addmm", 8, 80}});
  const ProfiledWindow b = Window(2, 64, {{"addmm", 4, 160}});
  const ProfileDiff d = DiffWindows(a, b);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(d.rows[0].a_calls_per_step, 2);
  EXPECT_DOUBLE_EQ(d.rows[0].b_calls_per_step, 2);
  EXPECT_DOUBLE_EQ(d.rows[0].a_us_per_call, 10);
  EXPECT_DOUBLE_EQ(d.rows[0].b_us_per_call, 40);
  EXPECT_DOUBLE_EQ(d.rows[0].delta_us_per_sample, 160 / 128.0 - 80 / 32.0);
  EXPECT_DOUBLE_EQ(d.rows[0].share, 1);
}

TEST(ProfileDiff, ANameThatOnlyOneSideRanCountsAsNewWhereTheOtherSideIsWhole) {
  // A cast only B runs (a changed precision): whole traces on both sides.
  const ProfileDiff d =
      DiffWindows(Window(1, 1, {{"mm", 1, 10}}), Window(1, 1, {{"mm", 1, 10}, {"_to_copy", 3, 6}}));
  ASSERT_EQ(d.rows.size(), 2u);
  EXPECT_EQ(d.rows[0].name, "_to_copy");
  EXPECT_TRUE(d.rows[0].known);
  EXPECT_DOUBLE_EQ(d.rows[0].a_calls_per_step, 0);
  EXPECT_DOUBLE_EQ(d.rows[0].delta_us_per_sample, 6);
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
  EXPECT_DOUBLE_EQ(d.b_us_per_sample, 30);  // the unknown row counts on neither side
}

TEST(ProfileDiff, ASideWithoutStepsOrSamplesGivesNoRows) {
  EXPECT_TRUE(DiffWindows(Window(0, 8, {{"mm", 1, 1}}), Window(1, 8, {{"mm", 1, 1}})).rows.empty());
  EXPECT_TRUE(DiffWindows(Window(1, 8, {{"mm", 1, 1}}), Window(1, 0, {{"mm", 1, 1}})).rows.empty());
}

TEST(ProfileDiff, ARunsWindowHasItsStepsSamplesAndWhetherItsTableIsWhole) {
  v1::Run run;
  v1::RunResult& r = *run.mutable_result();
  r.set_profiled_iterations(5);
  r.set_iterations(100);
  r.set_measured_ms(250);                  // 2.5 ms a step
  r.set_throughput_samples_per_s(3201.0);  // 8.0025 samples a step: 8
  for (const char* name : {"aten::addmm", "aten::relu"}) {
    v1::OperatorStat& op = *r.mutable_profile()->add_top_operators();
    op.set_name(name);
    op.set_count(10);
    op.set_self_time_us(100);
    op.set_share(0.5);
  }
  ProfiledWindow w = WindowOf(run);
  EXPECT_EQ(w.steps, 5);
  EXPECT_DOUBLE_EQ(w.samples_per_step, 8);
  ASSERT_EQ(w.rows.size(), 2u);
  EXPECT_EQ(w.rows[1].name, "aten::relu");
  EXPECT_TRUE(w.complete);
  r.mutable_profile()->mutable_top_operators(1)->set_share(0.3);  // a top-N table
  EXPECT_FALSE(WindowOf(run).complete);
  r.set_throughput_samples_per_s(3400);  // 8.5 a step: kept as it is
  EXPECT_DOUBLE_EQ(WindowOf(run).samples_per_step, 8.5);
  // A distributed run's profile is one rank's: 8.5 over 2 ranks.
  run.mutable_config()->set_world_size(2);
  EXPECT_DOUBLE_EQ(WindowOf(run).samples_per_step, 4.25);
  r.set_iterations(0);
  EXPECT_DOUBLE_EQ(WindowOf(run).samples_per_step, 0);
}

TEST(ProfileDiff, AChangeInWords) {
  EXPECT_EQ(DescribeChange("void gemm<float>(int)", 42.734, 0.7851),
            "gemm<float> +42.73 us a sample, 78.5% of the profiled difference");
}

}  // namespace
}  // namespace gpubench::report
