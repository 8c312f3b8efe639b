// Runs a shell command and keeps what it printed, for tests that drive a
// program that is not a library (a binary's --version, bash, Python's
// grpcio). Test-only.
#ifndef GPUBENCH_TESTS_SUPPORT_COMMAND_H_
#define GPUBENCH_TESTS_SUPPORT_COMMAND_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace gpubench::testing_support {

struct CommandResult {
  std::string output;  // stdout and stderr, interleaved
  int exit_code = -1;  // -1 when it did not exit normally
};

inline CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    r.output = "cannot run " + command;
    return r;
  }
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) r.output.append(buffer, n);
  const int status = pclose(pipe);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

}  // namespace gpubench::testing_support

#endif  // GPUBENCH_TESTS_SUPPORT_COMMAND_H_
