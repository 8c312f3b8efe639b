#include "worker/run_as.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gpubench::worker {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::FailedPreconditionError(absl::StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace

absl::Status CopyForUser(const std::string& from, const std::string& to,
                         const v1::RunAs& run_as) {
  const int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return Errno("opening " + from);
  const int out = open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
  if (out < 0) {
    const absl::Status failed = Errno("making " + to);
    close(in);
    return failed;
  }
  absl::Status status;
  struct stat st;
  if (fstat(in, &st) != 0) status = Errno("reading " + from);
  for (off_t left = status.ok() ? st.st_size : 0; left > 0;) {
    const ssize_t n = sendfile(out, in, nullptr, static_cast<size_t>(left));
    if (n <= 0) {
      status = n < 0 ? Errno("copying " + from) : absl::DataLossError(from + " shrank");
      break;
    }
    left -= n;
  }
  if (status.ok() && fchown(out, run_as.uid(), run_as.gid()) != 0) status = Errno("chown " + to);
  close(in);
  close(out);
  if (!status.ok()) unlink(to.c_str());
  return status;
}

absl::StatusOr<HeldModels> HoldModels(const std::map<std::string, bool>& paths_is_package,
                                      const std::string& scratch_dir, const v1::RunAs& run_as) {
  HeldModels held;
  int copies = 0;
  for (const auto& [path, is_package] : paths_is_package) {
    if (is_package) {
      const std::string copy = absl::StrCat(scratch_dir, "/model-", copies++, ".pt2");
      if (auto s = CopyForUser(path, copy, run_as); !s.ok()) return s;
      held.copies[path] = copy;
      continue;
    }
    // Kept open across the switch, not across an exec (there is none).
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Errno("opening " + path);
    held.fds[path] = fd;
  }
  return held;
}

absl::Status BecomeUser(const v1::RunAs& run_as) {
  if (run_as.uid() == 0) return absl::InvalidArgumentError("run_as: refusing uid 0");
  const pid_t parent = getppid();
  std::vector<gid_t> groups(run_as.groups().begin(), run_as.groups().end());
  if (setgroups(groups.size(), groups.data()) != 0) return Errno("setgroups");
  if (setresgid(run_as.gid(), run_as.gid(), run_as.gid()) != 0) return Errno("setresgid");
  if (setresuid(run_as.uid(), run_as.uid(), run_as.uid()) != 0) return Errno("setresuid");
  // Never back: a uid 0 could regain the daemon's user.
  if (setresuid(0, 0, 0) == 0) {
    return absl::FailedPreconditionError("run_as: the worker could become root again");
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return absl::AbortedError("the daemon is gone");
  return absl::OkStatus();
}

}  // namespace gpubench::worker
