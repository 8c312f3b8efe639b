// Where gpubench keeps its files.
#ifndef GPUBENCH_COMMON_PATHS_H_
#define GPUBENCH_COMMON_PATHS_H_

#include <memory>
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

// realpath(3): the canonical path of an existing path; empty when it fails.
std::string RealPath(const std::string& path);

// Whether canonical path is ancestor or lies below it ("/" holds every path).
bool IsWithin(const std::string& path, const std::string& ancestor);

// Whether path resolves (RealPath) at or below one of roots, each resolved
// too; a root that does not resolve holds nothing.
bool ResolvesWithin(const std::string& path, const std::vector<std::string>& roots);

// Removes path and everything under it, not following symbolic links.
// Best effort: what cannot be removed stays. (Not std::filesystem: the
// PyTorch wheel's libtorch_cpu.so exports its own copy of those symbols,
// built against another libstdc++, and a worker's calls bind to it.)
void RemoveTree(const std::string& path);

// $TMPDIR when set, else /tmp. A confined worker's TMPDIR is its scratch
// folder, the one place it may write.
std::string TempDir();

// A gpubench program: $env_var when set, else `name` beside this executable
// (/proc/self/exe), else `name` (found on PATH).
std::string InstalledBinary(const std::string& name, const char* env_var);

// The lock a daemon holds on its data directory (DIR/gpubenchd.lock, an
// flock held while the process lives), holding the address it serves: one
// daemon per directory, and `gpubench run` finds it. Not copyable.
class DataDirLock {
 public:
  // FailedPrecondition naming the address of the daemon that holds it.
  static absl::StatusOr<std::unique_ptr<DataDirLock>> Acquire(const std::string& dir);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

  // Records the address this daemon serves.
  absl::Status SetAddress(const std::string& address);

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  const int fd_;
};

// The address recorded by the daemon that holds dir's lock. NotFound when no
// daemon holds it; Unavailable while one is starting (no address yet).
absl::StatusOr<std::string> AddressOfDaemonServing(const std::string& dir);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_PATHS_H_
