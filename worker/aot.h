// Compiled execution (execution aot): the AOTInductor package of a built-in
// model, compiled on this host by the project's Python twin of the model
// (worker/python/gpubench_models, run by the host's Python with torch) and
// cached by everything that changes the compiled code. Torch-free: the
// engine loads the package (engine.cc, CompiledModel).
#ifndef GPUBENCH_WORKER_AOT_H_
#define GPUBENCH_WORKER_AOT_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpubench/v1/worker.pb.h"
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
// precision and channels_last.
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

// The package for config (defaults applied, execution aot), from the cache
// or compiled now by `python -m gpubench_models.aot`. Errors name what to do:
// FailedPrecondition for a Python without torch (or none at all), and the
// compiler's own reason when the model does not export. *cancel (may be
// null) stops a compile in progress (Cancelled). Evicts the least recently
// used packages beyond settings.cache_bytes. Thread-compatible.
absl::StatusOr<AotPackage> EnsureAotPackage(const engine::RunConfig& config,
                                            const std::string& target,
                                            const v1::AotSettings& settings,
                                            const std::atomic<bool>* cancel);

}  // namespace gpubench::worker

#endif  // GPUBENCH_WORKER_AOT_H_
