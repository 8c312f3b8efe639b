// Serving end to end: a real daemon, worker and SQLite file serve a tiny
// gpt on the CPU; `show` and --find max-rate read what it stored.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "client/cli.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/client/cli_test_util.h"
#include "tests/support/daemon_process.h"

namespace gpubench::client {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

// A serving run end to end (a real daemon, worker and SQLite file): a tiny
// gpt on the CPU serves Poisson arrivals; the table labels the load, the
// JSON names the figures as docs/serving.md does, and --find max-rate runs
// a job per rate and names the largest that met the targets. Prompts of
// 4 to 12 tokens in chunks of 6: the longer ones over two steps.
TEST(CliDaemon, AServingRunShowsItsFiguresAndTheRateSearchFindsItsLargestRate) {
  Daemon d(FreshDir("cli_serve"));
  ASSERT_TRUE(d.serving()) << d.log();
  const std::vector<std::string> tiny = {
      "--host", d.address(), "--workload", "gpt", "--model-size", "custom", "--num-layers", "2",
      "--hidden-size", "32", "--num-heads", "2", "--vocab-size", "128", "--seq-len", "64",
      "--mode", "serve", "--batch", "4", "--device", "cpu", "--input-len", "4:12",
      "--output-len", "6", "--max-time-ms", "30000"};
  std::vector<std::string> serve = {"submit", "--num-requests", "24", "--request-rate", "200",
                                    "--slo", "ttft_ms=60000", "--slice-ms", "40",
                                    "--prefill-chunk", "6", "--wait"};
  serve.insert(serve.end(), tiny.begin(), tiny.end());
  Result done = Cli(serve);
  ASSERT_EQ(done.code, kExitOk) << done.err << done.out;
  EXPECT_NE(done.out.find("serve 200 req/s chunk 6"), std::string::npos) << done.out;
  // The serving table: every measured request, the rate asked, goodput's
  // count; no language-model row of empty decoding columns.
  const size_t table = done.out.find("\nserving (");
  ASSERT_NE(table, std::string::npos) << done.out;
  const std::vector<std::string> lines = SplitLines(done.out.substr(table + 1));
  ASSERT_GE(lines.size(), 3u) << done.out;
  EXPECT_NE(lines[2].find("24 of 24"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find(" 200 "), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("(24 of 24)"), std::string::npos) << lines[2];
  EXPECT_EQ(done.out.find("\nlanguage models ("), std::string::npos) << done.out;
  const std::string queued = SplitLines(done.err).at(0);  // "job ID queued on HOST (1 runs)"
  const std::string id = queued.substr(4, queued.find(" queued") - 4);
  Result json = Cli({"show", id, "--output", "json", "--host", d.address()});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &doc).ok()) << json.out;
  const auto& serve_result = doc.fields().at("runs").list_value().values(0).struct_value()
                                 .fields().at("result").struct_value().fields().at("serve")
                                 .struct_value().fields();
  for (const char* name : {"ttft", "tpot", "itl", "e2e", "goodput", "request_rate"}) {
    EXPECT_TRUE(serve_result.count(name)) << name << " in " << json.out;
  }
  EXPECT_EQ(serve_result.at("ttft").struct_value().fields().at("count").number_value(), 24);
  EXPECT_EQ(serve_result.at("requests").number_value(), 24);
  EXPECT_EQ(serve_result.at("request_rate").struct_value().fields().at("asked").number_value(),
            200);
  EXPECT_EQ(serve_result.at("requests_meeting_slo").number_value(), 24);
  // The window in 40 ms slices: their tokens are the window's, and the
  // table shows them; no board power on a CPU, so no joules a token.
  const auto& slices = serve_result.at("slices").list_value().values();
  const double window_ms = serve_result.at("window_ms").number_value();
  ASSERT_EQ(slices.size(), static_cast<int>(std::ceil(window_ms / 40))) << json.out;
  double tokens = 0;
  for (const auto& slice : slices) {
    const auto& fields = slice.struct_value().fields();  // a 0 is left out
    tokens += fields.count("output_tokens") ? fields.at("output_tokens").number_value() : 0;
  }
  EXPECT_NEAR(tokens, serve_result.at("output_tokens_per_s").number_value() * window_ms / 1e3,
              1e-6);
  EXPECT_EQ(serve_result.count("joules_per_output_token"), 0u) << json.out;
  EXPECT_NE(done.out.find("\nserving over time ("), std::string::npos) << done.out;

  std::vector<std::string> find = {"submit", "--num-requests", "8", "--request-rate", "50",
                                   "--slo", "e2e_ms=60000", "--find", "max-rate", "--limit", "3"};
  find.insert(find.end(), tiny.begin(), tiny.end());
  Result found = Cli(find);
  ASSERT_EQ(found.code, kExitOk) << found.err << found.out;
  EXPECT_NE(found.out.find("max rate meeting every target at p99: 200 requests/s (the last "
                           "tried; 3 runs, more may meet them)"),
            std::string::npos)
      << found.out;
  EXPECT_NE(found.err.find("rate 100 requests/s: meets (e2e p99 "), std::string::npos)
      << found.err;
}

}  // namespace
}  // namespace gpubench::client
