// gpubench-worker: runs one job in its own process. Reads a length-delimited
// WorkerRequest on stdin and writes WorkerEvents on stdout. SIGTERM or
// SIGINT stops it at the next iteration boundary, keeping partial results.
//   gpubench-worker            serve one request
//   gpubench-worker --probe    print what LibTorch sees, as JSON
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "absl/flags/flag.h"
#include "common/flags.h"
#include "common/spec.h"
#include "common/version.h"
#include "worker/worker.h"

ABSL_FLAG(bool, probe, false, "print what LibTorch sees (devices, versions) as JSON, and exit");

namespace {

std::atomic<bool> g_cancel{false};

void OnStopSignal(int) { g_cancel.store(true); }

}  // namespace

int main(int argc, char** argv) {
  gpubench::FlagParser parser;
  auto positional = parser.Parse(argc, argv);
  if (!positional.ok() || !positional->empty() || parser.help_requested()) {
    (parser.help_requested() ? std::cout : std::cerr)
        << (positional.ok() ? "" : std::string(positional.status().message()) + "\n")
        << "usage: gpubench-worker [--probe | --version]   (serves one WorkerRequest on stdin)\n"
        << gpubench::FlagsHelp("worker/main.cc");
    return parser.help_requested() && positional.ok() ? 0 : 2;
  }
  if (parser.version_requested()) {
    const gpubench::v1::HostInfo probed = gpubench::worker::ProbeHost();
    std::cout << gpubench::VersionText("gpubench-worker", &probed);
    return 0;
  }
  if (absl::GetFlag(FLAGS_probe)) {
    std::cout << gpubench::MessageToJson(gpubench::worker::ProbeHost()) << "\n";
    return 0;
  }
  std::signal(SIGTERM, OnStopSignal);
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGPIPE, SIG_IGN);
  // The protocol owns the original stdout; anything a library prints goes to
  // stderr, where the parent keeps the tail for crash reports.
  const int protocol_fd = dup(STDOUT_FILENO);
  dup2(STDERR_FILENO, STDOUT_FILENO);
  const absl::Status status =
      gpubench::worker::ServeOnce(STDIN_FILENO, protocol_fd, &g_cancel);
  if (!status.ok()) {
    std::cerr << "gpubench-worker: " << status << "\n";
    return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
