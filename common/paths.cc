#include "common/paths.h"

#include <limits.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

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

namespace {

// realpath(3) as a string; empty when it fails.
std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (path.empty() || realpath(path.c_str(), buf) == nullptr) return "";
  return buf;
}

}  // namespace

absl::StatusOr<std::string> ResolveModelPath(const std::string& path,
                                             const std::vector<std::string>& roots,
                                             const std::string& field) {
  const absl::Status refused = absl::PermissionDeniedError(absl::StrCat(
      field, ": not a model file under an allowed model root; the daemon's operator "
      "names those with --model-root, or upload the model (gpubench model upload)"));
  const std::string real = RealPath(path);
  struct stat st;
  if (real.empty() || stat(real.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return refused;
  for (const std::string& given : roots) {
    const std::string root = RealPath(given);
    if (root.empty()) continue;
    const std::string prefix = root.back() == '/' ? root : root + "/";
    if (real.compare(0, prefix.size(), prefix) == 0) return real;
  }
  return refused;
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

}  // namespace gpubench
