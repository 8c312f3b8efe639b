#include "worker/confinement_probes.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/paths.h"
#include "launcher/ipc.h"

namespace gpubench::worker {
namespace {

// What one probe tried and how it went.
struct Outcome {
  std::string what;  // "read  ", "write ", "start ", "uring ", "conn  ", "sock  "
  std::string path;
  bool allowed = false;
  int error = 0;
};

Outcome StartProcess() {
  Outcome o{"start ", "a child process"};
  const pid_t pid = fork();
  o.error = errno;
  if (pid == 0) _exit(0);
  o.allowed = pid > 0;
  if (o.allowed) waitpid(pid, nullptr, 0);
  return o;
}

Outcome SetUpIoUring() {
  Outcome o{"uring ", "io_uring_setup"};
  uint64_t params[16] = {};  // struct io_uring_params, 120 bytes
  const long fd = syscall(__NR_io_uring_setup, 1, params);
  o.error = errno;
  o.allowed = fd >= 0;
  if (fd >= 0) close(static_cast<int>(fd));
  return o;
}

Outcome ConnectUnix(const std::string& path) {
  Outcome o{"conn  ", path};
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, sizeof(address.sun_path) - 1);
  o.allowed =
      fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  o.error = errno;
  if (fd >= 0) close(fd);
  return o;
}

Outcome OpenSocket(const std::string& family_name) {
  Outcome o{"sock  ", family_name};
  const int family = family_name == "unix"    ? AF_UNIX
                     : family_name == "inet6" ? AF_INET6
                                              : AF_INET;
  const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  o.error = errno;
  o.allowed = fd >= 0;
  if (fd >= 0) close(fd);
  return o;
}

// Reads a file, or writes one: a new file in a folder (removed again), or
// an existing file opened to append (which truncates and changes nothing).
Outcome OpenPath(const std::string& path, bool write) {
  Outcome o{write ? "write " : "read  ", path};
  int fd = -1;
  struct stat st;
  if (!write) {
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } else if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    o.path += "/gpubench-confinement-check";
    fd = open(o.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) unlink(o.path.c_str());
  } else {
    fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  }
  o.error = errno;
  o.allowed = fd >= 0;
  if (fd >= 0) close(fd);
  return o;
}

Outcome Try(const v1::ConfinementProbe& probe) {
  const std::string path = probe.path() == "$TMPDIR" ? TempDir() : probe.path();
  switch (probe.kind()) {
    case v1::ConfinementProbe::START_PROCESS:
      return StartProcess();
    case v1::ConfinementProbe::IO_URING:
      return SetUpIoUring();
    case v1::ConfinementProbe::CONNECT_UNIX:
      return ConnectUnix(path);
    case v1::ConfinementProbe::OPEN_SOCKET:
      return OpenSocket(path);
    default:
      return OpenPath(path, probe.write());
  }
}

}  // namespace

absl::Status ReportProbes(const v1::WorkerConfinement& confinement, int out_fd) {
  ipc::MessageWriter writer(out_fd);
  int unexpected = 0;
  auto say = [&](const char* verdict, const std::string& text) {
    v1::WorkerEvent event;
    event.mutable_log()->set_text(absl::StrCat(verdict, text));
    return writer.Write(event);
  };
  auto report = [&](bool as_expected, const std::string& text) {
    if (!as_expected) ++unexpected;
    return say(as_expected ? "ok          " : "UNEXPECTED  ", text);
  };
  const bool as_user = !confinement.has_run_as() || getuid() == confinement.run_as().uid();
  if (auto s = report(as_user, absl::StrCat("runs as uid ", getuid(), ", gid ", getgid()));
      !s.ok()) {
    return s;
  }
  for (const v1::ConfinementProbe& probe : confinement.probes()) {
    const Outcome o = Try(probe);
    // A path that is not there was never put to the confinement: its
    // denial proves nothing, so it is no "ok".
    if (probe.kind() == v1::ConfinementProbe::OPEN && !o.allowed && (o.error == ENOENT || o.error == ENOTDIR)) {
      if (auto s = say("not checked ", absl::StrCat(o.what, o.path, " (does not exist)"));
          !s.ok()) {
        return s;
      }
      continue;
    }
    const std::string text =
        absl::StrCat(o.what, o.allowed ? "allowed " : "denied  ", o.path,
                     o.allowed ? "" : absl::StrCat(" (", std::strerror(o.error), ")"));
    if (auto s = report(o.allowed == probe.expect_allowed(), text); !s.ok()) return s;
  }
  v1::WorkerEvent done;
  done.mutable_done()->set_runs_executed(0);
  if (auto s = writer.Write(done); !s.ok()) return s;
  if (unexpected > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(unexpected, " confinement check(s) did not go as expected"));
  }
  return absl::OkStatus();
}

}  // namespace gpubench::worker
