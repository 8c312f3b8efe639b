// What the CLI tests that run real daemons share: a call of the CLI in
// process, a quick job's flags, lines of output.
#ifndef GPUBENCH_TESTS_CLIENT_CLI_TEST_UTIL_H_
#define GPUBENCH_TESTS_CLIENT_CLI_TEST_UTIL_H_

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/cli.h"

namespace gpubench::client {

struct Result {
  int code;
  std::string out, err;
};

inline Result Cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = RunCli(args, out, err);
  return {code, out.str(), err.str()};
}

// A quick CPU job's spec flags.
inline std::vector<std::string> Tiny(std::vector<std::string> args) {
  for (const char* a : {"--workload", "mlp", "--device", "cpu", "--mode", "infer",
                        "--warmup", "2", "--min-iterations", "10", "--min-time-ms", "50",
                        "--max-time-ms", "1500"}) {
    args.push_back(a);
  }
  return args;
}

inline std::vector<std::string> SplitLines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

}  // namespace gpubench::client

#endif  // GPUBENCH_TESTS_CLIENT_CLI_TEST_UTIL_H_
