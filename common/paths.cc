#include "common/paths.h"

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gpubench {

std::string DefaultDataDir() {
  if (const char* d = std::getenv("GPUBENCH_DATA_DIR"); d && *d) return d;
  if (std::getenv("INVOCATION_ID")) return "/var/lib/gpubench";
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) {
    return absl::StrCat(x, "/gpubench");
  }
  const char* home = std::getenv("HOME");
  return absl::StrCat(home ? home : ".", "/.local/share/gpubench");
}

std::string ModelPath(const std::string& model_dir, const std::string& sha256) {
  return absl::StrCat(model_dir, "/", sha256);
}

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (path.empty() || realpath(path.c_str(), buf) == nullptr) return "";
  return buf;
}

bool IsWithin(const std::string& path, const std::string& ancestor) {
  if (ancestor == "/") return true;
  return path == ancestor || absl::StartsWith(path, ancestor + "/");
}

bool ResolvesWithin(const std::string& path, const std::vector<std::string>& roots) {
  const std::string real = RealPath(path);
  if (real.empty()) return false;
  for (const std::string& given : roots) {
    const std::string root = RealPath(given);
    if (!root.empty() && IsWithin(real, root)) return true;
  }
  return false;
}

void RemoveTree(const std::string& path) {
  nftw(path.c_str(),
       [](const char* p, const struct stat*, int, struct FTW*) {
         std::remove(p);  // files, then (FTW_DEPTH) their emptied folders
         return 0;
       },
       16, FTW_DEPTH | FTW_PHYS);
}

std::string TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp == '/' ? tmp : "/tmp";
}

absl::StatusOr<std::string> ResolveModelPath(const std::string& path,
                                             const std::vector<std::string>& roots,
                                             const std::string& field) {
  const absl::Status refused = absl::PermissionDeniedError(absl::StrCat(
      field, ": not a model file under an allowed model root; the daemon's operator "
      "names those with --model-root, or upload the model (gpubench model upload)"));
  const std::string real = RealPath(path);
  struct stat st;
  if (real.empty() || stat(real.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return refused;
  return ResolvesWithin(real, roots) ? absl::StatusOr<std::string>(real) : refused;
}

absl::StatusOr<std::string> CanonicalDir(const std::string& dir) {
  const std::string real = RealPath(dir);
  struct stat st;
  if (real.empty() || stat(real.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": not an existing directory"));
  }
  return real;
}

absl::Status MakeDirs(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string prefix = dir.substr(0, pos);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create directory ", prefix, ": ", std::strerror(errno)));
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(dir, " is not a directory"));
  }
  return absl::OkStatus();
}

std::string InstalledBinary(const std::string& name, const char* env_var) {
  if (const char* env = std::getenv(env_var); env && *env) return env;
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return name;
  std::string dir(self, n);
  dir.resize(dir.rfind('/') + 1);
  return dir + name;
}

namespace {

std::string LockPath(const std::string& dir) { return dir + "/gpubenchd.lock"; }

std::string ReadAll(int fd) {
  std::string text;
  char buf[512];
  ssize_t n;
  off_t offset = 0;
  while ((n = pread(fd, buf, sizeof(buf), offset)) > 0) {
    text.append(buf, n);
    offset += n;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::string& dir) {
  // O_CLOEXEC: workers must not inherit the lock and outlive it.
  const int fd = open(LockPath(dir).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open ", LockPath(dir), ": ", std::strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = ReadAll(fd);
    close(fd);
    if (error == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat(
          "another gpubenchd serves ", dir, holder.empty() ? "" : " on ", holder,
          "; one daemon per data directory"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("cannot lock ", LockPath(dir), ": ", std::strerror(error)));
  }
  if (ftruncate(fd, 0) != 0) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write ", LockPath(dir), ": ", std::strerror(errno)));
  }
  return std::unique_ptr<DataDirLock>(new DataDirLock(fd));
}

DataDirLock::~DataDirLock() { close(fd_); }

absl::Status DataDirLock::SetAddress(const std::string& address) {
  const std::string line = address + "\n";
  if (ftruncate(fd_, 0) != 0 ||
      pwrite(fd_, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write the daemon's lock file: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> AddressOfDaemonServing(const std::string& dir) {
  const int fd = open(LockPath(dir).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat("no daemon serves ", dir));
  if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
    close(fd);  // releases the probe's lock too
    return absl::NotFoundError(absl::StrCat("no daemon serves ", dir));
  }
  const std::string address = ReadAll(fd);
  close(fd);
  if (address.empty()) {
    return absl::UnavailableError(absl::StrCat("the daemon of ", dir, " is starting"));
  }
  return address;
}

}  // namespace gpubench
