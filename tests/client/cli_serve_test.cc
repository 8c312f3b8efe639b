// The serving flags (--mode serve): ranges, SLOs and traces into the spec,
// and what cannot be served refused naming the field. Built with the CLI
// alone, as cli_offline_test is.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "client/cli.h"
#include "google/protobuf/util/json_util.h"
#include "gpubench/v1/spec.pb.h"

namespace gpubench::client {
namespace {

// A serving run's flags: --input-len MIN:MAX sets a range, --slo sets each
// bound by name, a rate list is a sweep axis; what cannot be served is
// refused, naming the field.
TEST(Cli, ServeFlagsSetRangesAndSlosAndRefuseWhatCannotBeServed) {
  std::ostringstream out, err;
  ASSERT_EQ(RunCli({"spec", "--workload", "gpt", "--mode", "serve", "--request-rate", "2,4",
                    "--input-len", "32:64", "--output-len", "16", "--slo",
                    "ttft_ms=200,tpot_ms=20", "--output", "json"},
                   out, err),
            kExitOk)
      << err.str();
  EXPECT_NE(err.str().find("2 runs"), std::string::npos) << err.str();
  v1::JobSpec spec;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out.str(), &spec).ok()) << out.str();
  EXPECT_EQ(spec.base().mode(), v1::MODE_SERVE);
  EXPECT_EQ(spec.base().serve().input_len(), 32);
  EXPECT_EQ(spec.base().serve().input_len_max(), 64);
  EXPECT_EQ(spec.base().serve().output_len(), 16);
  EXPECT_EQ(spec.base().serve().slo_ttft_ms(), 200);
  EXPECT_EQ(spec.base().serve().slo_tpot_ms(), 20);
  ASSERT_EQ(spec.sweep().request_rate_size(), 2);
  EXPECT_EQ(spec.sweep().request_rate(1), 4);
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"--workload", "gpt", "--mode", "serve", "--slo", "itl_ms=5"},
       "--slo: no itl_ms; one of e2e_ms, tpot_ms, ttft_ms"},
      {{"--workload", "gpt", "--mode", "serve", "--request-rate", "-1"},
       "--request-rate: must be in [0, 1000000], got -1"},
      {{"--workload", "resnet18", "--mode", "serve"}, ".mode: serve is for the language models"},
      {{"--workload", "gpt", "--mode", "serve", "--input-len", "900", "--output-len", "200"},
       ".serve.output_len: the longest prompt 900 + the longest output 200 passes gpt's context"},
      {{"--workload", "gpt", "--mode", "serve", "--input-len", "64:32"},
       ".serve.input_len_max: 32 is below input_len 64"},
      {{"--workload", "gpt", "--mode", "infer", "--request-rate", "4"},
       ".serve: is the load of a serving run"},
      {{"--workload", "gpt", "--mode", "serve", "--request-rate", "1e-11"},
       ".serve.request_rate: 1e-11 is below 0.001 requests/s; 0 is a closed loop"},
      {{"--workload", "llama", "--mode", "serve", "--num-requests", "1000000", "--output-len",
        "200", "--input-len", "8"},
       ".serve.num_requests: 1000000 requests × the longest output 200 = 200000000 measured "
       "tokens; at most 67108864"},
      {{"--workload", "gpt", "--mode", "serve", "--slice-ms", "1"},
       ".serve.slice_ms: 1 ms cuts max_time_ms 30000 into more than 1000 slices; at least 30"},
      {{"--workload", "llama", "--mode", "serve", "--execution", "aot", "--prefill-chunk", "64"},
       ".serve.prefill_chunk: execution aot prefills whole prompts"},
  };
  for (const auto& [flags, why] : refused) {
    std::vector<std::string> args = {"spec"};
    args.insert(args.end(), flags.begin(), flags.end());
    std::ostringstream bad_out, bad_err;
    EXPECT_NE(RunCli(args, bad_out, bad_err), kExitOk) << why;
    EXPECT_NE(bad_err.str().find(why), std::string::npos) << bad_err.str();
  }
}

// --trace FILE carries each line of the file into the spec, in order; a
// line the daemon would refuse is refused naming its field.
TEST(Cli, ATraceFileReplaysIntoTheSpecAndABadLineIsNamed) {
  const std::string path = ::testing::TempDir() + "/trace.jsonl";
  std::ofstream(path) << R"({"arrival_ms": 0, "input_tokens": 12, "output_tokens": 4})" << "\n"
                      << "\n"
                      << R"({"arrival_ms": 2.5, "input_tokens": 30, "output_tokens": 1})" << "\n";
  std::ostringstream out, err;
  ASSERT_EQ(RunCli({"spec", "--workload", "llama", "--mode", "serve", "--trace", path, "--output",
                    "json"},
                   out, err),
            kExitOk)
      << err.str();
  v1::JobSpec spec;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out.str(), &spec).ok()) << out.str();
  ASSERT_EQ(spec.base().serve().trace_size(), 2);
  EXPECT_EQ(spec.base().serve().trace(1).arrival_ms(), 2.5);
  EXPECT_EQ(spec.base().serve().trace(1).input_tokens(), 30);
  EXPECT_EQ(spec.base().serve().trace(0).output_tokens(), 4);
  const std::vector<std::pair<std::string, std::string>> refused = {
      {R"({"arrival_ms": 1, "input_tokens": 12, "output_tokens": 0})",
       ".serve.trace[1].output_tokens: must be in [1, 1048576], got 0"},
      {R"({"arrival_ms": -1, "input_tokens": 12, "output_tokens": 3})",
       ".serve.trace[1].arrival_ms: -1 is not a time at or after the one before, 1"},
      {R"({"arrival_ms": 3, "tokens": 12})", "line 2: "},
      {R"({"arrival_ms": 1e13, "input_tokens": 12, "output_tokens": 3})",
       ".serve.trace[1].arrival_ms: 1e+13 is not a time at or after the one before, 1, and "
       "within a day of the start (86400000 ms)"},
  };
  for (const auto& [line, why] : refused) {
    std::ofstream(path) << R"({"arrival_ms": 1, "input_tokens": 2, "output_tokens": 2})" << "\n"
                        << line << "\n";
    std::ostringstream bad_out, bad_err;
    EXPECT_NE(RunCli({"spec", "--workload", "llama", "--mode", "serve", "--trace", path},
                     bad_out, bad_err),
              kExitOk)
        << line;
    EXPECT_NE(bad_err.str().find(why), std::string::npos) << bad_err.str();
  }
}

}  // namespace
}  // namespace gpubench::client
