// Compiled execution (execution aot): the AOTInductor package of a built-in
// model, compiled on this host by the project's Python twin of the model
// (worker/python/gpubench_models, run by the host's Python with torch) and
// cached by everything that changes the compiled code. Torch-free: the
// engine loads the package (engine.cc, CompiledModel).
#ifndef GPUBENCH_WORKER_AOT_H_
#define GPUBENCH_WORKER_AOT_H_

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpubench/v1/worker.pb.h"
#include "launcher/confine.h"
#include "worker/engine/config.h"

namespace gpubench::worker {

struct AotPackage {
  std::string path;           // the .pt2 file
  double compile_ms = 0;      // 0 when cached
  bool cached = false;        // compiled by an earlier run
  bool temporary = false;     // no cache: the caller removes path after the run
};

// The model arguments of `python -m gpubench_models.aot` for config
// (defaults applied): the workload, every model parameter, the batch size,
// precision and channels_last; a language model's generation (prompt and new
// tokens: the cache's length) and attention backend; a serving run's
// longest prompt and output (0 and 0 for any other mode).
std::vector<std::string> AotModelArgs(const engine::RunConfig& config);

// The cache file name (hex sha256) of config's package: the workload and
// every parameter of its model, the batch size, precision, channels_last,
// the target (engine::CompileTarget: device kind, GPU architecture, torch
// version) and the Python twin's own source digest.
std::string AotCacheKey(const engine::RunConfig& config, const std::string& target,
                        const std::string& twin_digest);

// The folder holding the gpubench_models package: $GPUBENCH_PYTHON_DIR,
// else share/gpubench/python beside the installed binaries, else this
// source tree's worker/python.
std::string PythonDir();

// Compiles packages for one worker, in a compile server: a process forked
// while the worker still has one thread and no Landlock domain, since a
// compiler started from inside the worker's domain could not run (it needs
// execve, and CUDA writes its own /proc/PID). Each compile runs in a domain
// of its own (with a compiler policy): it reads the system, Python and the
// twins, and writes only its work folder; the server moves the package into
// the cache. Thread-compatible.
class AotCompiler {
 public:
  // Forks the server. Call while the process has one thread. With
  // compiler_policy (SystemPolicy and the protected paths; the compiler's
  // Python, the twins, its work folder and its /proc/PID are added), every
  // compile is confined; without, none is.
  // With hand_to (a worker that becomes another user, who cannot read the
  // cache), each reply names a copy in a folder of its own under
  // hand_to_dir, owned by that user, which the worker removes after the run.
  static absl::StatusOr<std::unique_ptr<AotCompiler>> Start(
      const v1::AotSettings& settings, std::optional<ConfinementPolicy> compiler_policy,
      std::optional<v1::RunAs> hand_to = std::nullopt, const std::string& hand_to_dir = "");

  // Ends the server and reaps it.
  ~AotCompiler();

  // The package for config (defaults applied, execution aot), from the cache
  // or compiled now by `python -m gpubench_models.aot`. Errors name what to
  // do: FailedPrecondition for a Python without torch (or none at all), and
  // the compiler's own reason when the model does not export. *cancel (may
  // be null) stops a compile in progress (Cancelled), and every later one.
  // Evicts the least recently used packages beyond settings.cache_bytes.
  absl::StatusOr<AotPackage> Ensure(const engine::RunConfig& config,
                                    const std::string& target,
                                    const std::atomic<bool>* cancel);

  AotCompiler(const AotCompiler&) = delete;
  AotCompiler& operator=(const AotCompiler&) = delete;

 private:
  AotCompiler(pid_t pid, int requests_fd, int cancel_fd);

  const pid_t pid_;
  const int requests_fd_;  // requests out, replies in
  const int cancel_fd_;    // a byte: stop compiling
  bool cancelled_ = false;
};

// The read-and-execute folders a confined compile needs beyond the system's:
// those of its Python (settings.python, else python3 on PATH) and of the C++
// compilers Inductor may run ($CXX, $CC, g++, c++, gcc, cc, clang++ on
// PATH), each the folder of its binary and the prefix above it, as named (a
// virtual environment) and as resolved; and $CUDA_HOME. Never a home folder.
std::vector<std::string> CompilerTrees(const v1::AotSettings& settings);

}  // namespace gpubench::worker

#endif  // GPUBENCH_WORKER_AOT_H_
