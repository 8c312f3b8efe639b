// The gpubench command line, as a library so tests can call it in-process.
#ifndef GPUBENCH_CLIENT_CLI_H_
#define GPUBENCH_CLIENT_CLI_H_

#include <ostream>
#include <string>
#include <vector>

namespace gpubench::client {

// Exit codes (docs/using.md, "Exit codes").
inline constexpr int kExitOk = 0;
inline constexpr int kExitJobFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnreachable = 3;
inline constexpr int kExitRegression = 4;  // a regression or significant slowdown
inline constexpr int kExitAuth = 5;  // a daemon said UNAUTHENTICATED or PERMISSION_DENIED
// Data that should be there is not: a night a schedule has no run for, a
// GPU whose latest probe is older than --max-age.
inline constexpr int kExitMissing = 6;

// Runs `gpubench args...` and returns its exit code. Writes results to out
// and messages to err.
int RunCli(const std::vector<std::string>& args, std::ostream& out,
           std::ostream& err);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_CLI_H_
