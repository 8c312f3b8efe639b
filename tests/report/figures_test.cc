// The figure table (report/figures.h): one declaration of each figure that
// the CSV, the export, show's tables, the report and /metrics read.
#include "report/figures.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "client/run_columns.h"

namespace gpubench::report {
namespace {

TEST(Figures, NamesAndGaugesAreUniqueAndWellFormed) {
  std::set<std::string> names, gauges;
  const std::regex column("[a-z][a-z0-9_]*");
  const std::regex gauge("gpubench_last_[a-z0-9_]+");
  const std::set<std::string> units = {
      "",      "samples/s", "tokens/s", "ms",        "bytes",
      "share", "%",         "W",        "samples/J", "GB/s", "requests/s", "J/token"};
  for (const Figure& f : Figures()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_TRUE(std::regex_match(f.name, column)) << f.name;
    EXPECT_TRUE(units.count(f.unit)) << f.name << ": unit " << f.unit;
    EXPECT_NE(*f.heading, '\0') << f.name;
    EXPECT_NE(*f.help, '\0') << f.name;
    EXPECT_NE(*f.produced_by, '\0') << f.name;
    // A text figure has words and no number; the others a number.
    EXPECT_EQ(f.type == FigureType::kText, f.text != nullptr) << f.name;
    EXPECT_EQ(f.type == FigureType::kText, f.number == nullptr) << f.name;
    if (f.prometheus != nullptr) {
      EXPECT_NE(f.type, FigureType::kText) << f.name;
      EXPECT_TRUE(gauges.insert(f.prometheus).second) << f.prometheus;
      EXPECT_TRUE(std::regex_match(f.prometheus, gauge)) << f.prometheus;
    }
  }
  // The figure a dashboard has read since the first /metrics keeps its name.
  EXPECT_STREQ(FigureNamed("throughput_samples_per_s").prometheus,
               "gpubench_last_throughput_samples_per_second");
}

// The CSV's and the export's columns are the table's, in its order.
TEST(Figures, TheCsvColumnsAreTheTable) {
  std::vector<std::string> want = {"index", "run_id", "config", "device",
                                   "state"};
  for (const Figure& f : Figures()) want.push_back(f.name);
  want.push_back("notes");
  std::vector<std::string> got;
  for (const client::Cell& c : client::RunColumns(v1::Run()))
    got.push_back(c.name);
  EXPECT_EQ(got, want);
}

// A run that failed has no throughput, latency or language-model figure
// (absent: empty in CSV, "-" in a table), however its result was filled.
TEST(Figures, AFailedRunHasNoMeasuredFigure) {
  v1::Run run;
  run.set_state(v1::RUN_STATE_FAILED);
  v1::RunResult* res = run.mutable_result();
  res->set_throughput_samples_per_s(100);
  res->set_throughput_ci_low(90);
  res->set_throughput_ci_high(110);
  res->mutable_latency()->set_p50_ms(3);
  res->set_tokens_per_s(5000);
  res->set_mfu(0.4);
  for (const char* name : {"throughput_samples_per_s", "throughput_ci_low",
                           "p50_ms", "tokens_per_s", "mfu"}) {
    EXPECT_FALSE(FigureNamed(name).number(run).has_value()) << name;
    EXPECT_EQ(FigureText(FigureNamed(name), run), "-") << name;
  }
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(FigureNamed("throughput_samples_per_s").number(run), 100);
  EXPECT_EQ(FigureText(FigureNamed("mfu"), run), "40.0%");
}

// Each kind shows as a user reads it: a share as a percent (with its sign
// where the heading has none), bytes in binary units, latency in ms.
TEST(Figures, TextIsInTheTablesUnits) {
  v1::Run run;
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  v1::RunResult* res = run.mutable_result();
  res->set_data_wait_share(0.125);
  res->mutable_latency()->set_p99_ms(1.23456);
  res->mutable_memory()->set_peak_device_allocated_bytes(int64_t{3} << 30);
  res->set_resolved_device("cpu");
  res->set_cpu_threads(2);
  res->set_cpu_threads_reason("2: the CPUs this worker may use");
  EXPECT_EQ(FigureText(FigureNamed("data_wait_share"), run), "12.5");
  EXPECT_EQ(FigureText(FigureNamed("p99_ms"), run), "1.235");
  EXPECT_EQ(FigureText(FigureNamed("peak_allocated_bytes"), run), "3.00 GiB");
  EXPECT_EQ(FigureText(FigureNamed("cpu_threads"), run), "2");
  EXPECT_EQ(FigureText(FigureNamed("itl_p50_ms"), run),
            "-");  // not a decoding run
  // A GPU run's CPU thread count is not its figure.
  res->set_resolved_device("cuda:0");
  EXPECT_EQ(FigureText(FigureNamed("cpu_threads"), run), "-");
}

}  // namespace
}  // namespace gpubench::report
