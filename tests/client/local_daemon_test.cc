// `gpubench run`'s private gpubenchd dies with the CLI, however the CLI ends:
// the real gpubench, gpubenchd and gpubench-worker binaries, the CLI killed
// while its job runs.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "common/paths.h"

namespace gpubench::client {
namespace {

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/gpubench_test_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

struct ProcStat {
  char state = '?';
  pid_t parent = 0;
};

// /proc/PID/stat's state and parent; state '?' when it is gone.
ProcStat StatOf(pid_t pid) {
  ProcStat s;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return s;
  // "PID (comm) S PPID ...": comm may hold spaces and parentheses.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return s;
  std::istringstream rest(line.substr(close + 1));
  int parent = 0;
  rest >> s.state >> parent;
  s.parent = parent;
  return s;
}

// Running, not a zombie waiting for a reaper (PID 1 in a container may reap
// late or never).
bool Alive(pid_t pid) {
  const char state = StatOf(pid).state;
  return state != '?' && state != 'Z' && state != 'X';
}

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    if (StatOf(pid).parent == parent && Alive(pid)) children.push_back(pid);
  }
  return children;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class LocalDaemonDiesWithTheCli : public ::testing::TestWithParam<int> {};

TEST_P(LocalDaemonDiesWithTheCli, WhileItsJobRuns) {
  const int signal = GetParam();
  const std::string dir =
      FreshDir(std::string("run_killed_") + std::to_string(signal));
  const std::string cli_log = dir + "/cli.log";
  // A job that would measure for two minutes.
  const pid_t cli = fork();
  ASSERT_GE(cli, 0);
  if (cli == 0) {
    std::freopen(cli_log.c_str(), "w", stdout);
    std::freopen(cli_log.c_str(), "a", stderr);
    execl(GPUBENCH_CLI_PATH, GPUBENCH_CLI_PATH, "run", "--workload", "empty", "--device", "cpu",
          "--min-iterations", "1", "--min-time-ms", "120000", "--max-time-ms", "120000",
          "--data-dir", (dir + "/data").c_str(), "--worker", GPUBENCH_WORKER_PATH, "--daemon",
          GPUBENCH_DAEMON_PATH, static_cast<char*>(nullptr));
    _exit(127);
  }
  // Its daemon, once that has started a worker for the job.
  pid_t daemon = 0;
  bool worker_started = false;
  for (int i = 0; i < 600 && !worker_started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!Alive(cli)) break;
    if (daemon == 0) {
      const std::vector<pid_t> children = ChildrenOf(cli);
      if (!children.empty()) daemon = children[0];
    }
    if (daemon != 0) {
      for (pid_t child : ChildrenOf(daemon)) {
        worker_started = worker_started ||
                         Slurp("/proc/" + std::to_string(child) + "/cmdline")
                                 .find("gpubench-worker") != std::string::npos;
      }
    }
  }
  ASSERT_TRUE(worker_started) << "no worker under the CLI's daemon; CLI said:\n"
                              << Slurp(cli_log);
  const std::vector<pid_t> workers = ChildrenOf(daemon);

  ASSERT_EQ(kill(cli, signal), 0);
  int status = 0;
  ASSERT_EQ(waitpid(cli, &status, 0), cli);

  // Gone within a bounded wait: SIGTERM reaches the daemon, which stops its
  // worker (within its stop grace period) and exits.
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    gone = !Alive(daemon);
    for (pid_t w : workers) gone = gone && !Alive(w);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!gone) {
    kill(daemon, SIGKILL);
    for (pid_t w : workers) kill(w, SIGKILL);
  }
  ASSERT_TRUE(gone) << "the private gpubenchd " << daemon << " outlived the CLI (signal "
                    << signal << ")\n"
                    << Slurp(dir + "/data/gpubenchd-run.log");
  // A later `gpubench run` on this directory starts its own daemon rather
  // than finding the old one serving it.
  EXPECT_TRUE(absl::IsNotFound(AddressOfDaemonServing(dir + "/data").status()))
      << AddressOfDaemonServing(dir + "/data").status();
}

INSTANTIATE_TEST_SUITE_P(Signals, LocalDaemonDiesWithTheCli,
                         ::testing::Values(SIGKILL, SIGTERM, SIGINT),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == SIGKILL   ? std::string("Sigkill")
                                  : info.param == SIGTERM ? std::string("Sigterm")
                                                          : std::string("Sigint");
                         });

}  // namespace
}  // namespace gpubench::client
