// Where gpubench keeps its files.
#ifndef GPUBENCH_COMMON_PATHS_H_
#define GPUBENCH_COMMON_PATHS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpubench {

// $GPUBENCH_DATA_DIR; else /var/lib/gpubench under systemd ($INVOCATION_ID
// set); else $XDG_DATA_HOME/gpubench; else ~/.local/share/gpubench.
std::string DefaultDataDir();

// Where an uploaded model with this sha256 lives under model_dir.
std::string ModelPath(const std::string& model_dir, const std::string& sha256);

// The canonical path (symlinks and ".." resolved) of a regular file that
// lies under one of roots (directories, canonicalized here). Any failure,
// whether the file is missing, unreadable, not a regular file or outside
// every root, is the same PermissionDenied naming `field`, so that the answer
// does not tell whether a path exists. An empty roots refuses every path.
absl::StatusOr<std::string> ResolveModelPath(const std::string& path,
                                             const std::vector<std::string>& roots,
                                             const std::string& field);

// The canonical path of an existing directory, for --model-root.
// InvalidArgument naming the directory otherwise.
absl::StatusOr<std::string> CanonicalDir(const std::string& dir);

// Creates dir and its parents (mode 0755). FailedPrecondition naming the
// path when it cannot.
absl::Status MakeDirs(const std::string& dir);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_PATHS_H_
