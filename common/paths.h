// Where gpubench keeps its files.
#ifndef GPUBENCH_COMMON_PATHS_H_
#define GPUBENCH_COMMON_PATHS_H_

#include <string>

#include "absl/status/status.h"

namespace gpubench {

// $GPUBENCH_DATA_DIR; else /var/lib/gpubench under systemd ($INVOCATION_ID
// set); else $XDG_DATA_HOME/gpubench; else ~/.local/share/gpubench.
std::string DefaultDataDir();

// Where an uploaded model with this sha256 lives under model_dir.
std::string ModelPath(const std::string& model_dir, const std::string& sha256);

// Creates dir and its parents (mode 0755). FailedPrecondition naming the
// path when it cannot.
absl::Status MakeDirs(const std::string& dir);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_PATHS_H_
