// `gpubench run` without a daemon: a child gpubenchd on a private unix
// socket in the data directory, through which the job goes like any other.
#ifndef GPUBENCH_CLIENT_LOCAL_DAEMON_H_
#define GPUBENCH_CLIENT_LOCAL_DAEMON_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpubench::client {

struct LocalDaemonOptions {
  std::string daemon_path;  // the gpubenchd binary
  std::string data_dir;
  std::vector<std::string> extra_args;  // e.g. --worker PATH
};

// A gpubenchd child process that lives as long as this object, and no longer
// than the thread that started it (PR_SET_PDEATHSIG: SIGTERM when the CLI is
// killed), so start it on the main thread. Its log goes to
// DATA_DIR/gpubenchd-run.log.
class LocalDaemon {
 public:
  // Starts the daemon and waits until it serves. FailedPrecondition with the
  // tail of its log when it exits first (e.g. another daemon holds the data
  // directory: use that one instead, see AddressOfDaemonServing).
  static absl::StatusOr<std::unique_ptr<LocalDaemon>> Start(const LocalDaemonOptions& options);
  // Stops the daemon (SIGTERM) and waits for it.
  ~LocalDaemon();
  LocalDaemon(const LocalDaemon&) = delete;
  LocalDaemon& operator=(const LocalDaemon&) = delete;

  // Where it serves: "unix:DATA_DIR/gpubenchd-run.sock", or loopback when
  // that path is too long for a unix socket.
  const std::string& address() const { return address_; }

 private:
  LocalDaemon(pid_t pid, std::string address) : pid_(pid), address_(std::move(address)) {}
  const pid_t pid_;
  const std::string address_;
};

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_LOCAL_DAEMON_H_
