#include "client/local_daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"

namespace gpubench::client {
namespace {

// The last `bytes` of a file.
std::string Tail(const std::string& path, size_t bytes) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LocalDaemon>> LocalDaemon::Start(
    const LocalDaemonOptions& options) {
  if (access(options.daemon_path.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no gpubenchd at ", options.daemon_path, " (--daemon PATH or $GPUBENCH_DAEMON)"));
  }
  const std::string socket = options.data_dir + "/gpubenchd-run.sock";
  const std::string port_file = options.data_dir + "/gpubenchd-run.port";
  const std::string log = options.data_dir + "/gpubenchd-run.log";
  // A unix socket (private to the data directory's owner) where its path fits.
  const bool unix_socket = socket.size() < sizeof(sockaddr_un::sun_path);
  const std::string listen = unix_socket ? "unix:" + socket : "127.0.0.1:0";
  std::remove(port_file.c_str());
  if (unix_socket) std::remove(socket.c_str());

  std::vector<std::string> args = {options.daemon_path, "--data-dir", options.data_dir,
                                   "--listen", listen, "--port-file", port_file};
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat("cannot write ", log, ": ",
                                                      std::strerror(errno)));
  }
  const pid_t cli = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // The daemon is the CLI's, for this one job: it dies with the CLI however
    // the CLI ends (SIGKILL, or a signal that skips ~LocalDaemon), rather than
    // run on with its worker and keep the data directory. SIGTERM, so that it
    // stops its worker and lets the store go cleanly. The signal comes when
    // the forking thread ends: Start runs on the CLI's main thread. A CLI that
    // died before the prctl is caught by the parent check.
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != cli) _exit(127);
    const int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log_fd);
  // Wait until it serves (it writes the port file last), or exits.
  for (int i = 0;; ++i) {
    std::ifstream in(port_file);
    int port = 0;
    if (in >> port && port > 0) {
      return std::unique_ptr<LocalDaemon>(new LocalDaemon(
          pid, unix_socket ? listen : absl::StrCat("127.0.0.1:", port)));
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the local gpubenchd exited before serving (", log, "):\n", Tail(log, 2048)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(i < 100 ? 20 : 100));
  }
}

LocalDaemon::~LocalDaemon() {
  kill(pid_, SIGTERM);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace gpubench::client
