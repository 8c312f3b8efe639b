#include "common/paths.h"

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
