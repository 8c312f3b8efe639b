// The benchmark engine's entry points: run one sweep point with LibTorch and
// measure it, probe the host, join a distributed group. Public header in
// plain C++ (no torch, no protobuf): the worker's torch-free code calls it and
// converts to and from gpubench.v1 messages. What a run returns, and the other
// types the engine's files share, are in types.h.
#ifndef GPUBENCH_WORKER_ENGINE_ENGINE_H_
#define GPUBENCH_WORKER_ENGINE_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "launcher/fingerprint.h"
#include "worker/engine/config.h"
#include "worker/engine/types.h"

namespace gpubench::engine {

// Runs one sweep point: builds the workload, warms up, measures, then
// profiles and checks numerics where asked. measure.max_time_ms bounds it
// from the first step to the profiled window's end (measure::Measure,
// measure::ProfiledSteps); the numerics check (one step) comes after it.
// Never throws: LibTorch errors become kFailed (or kOutOfMemory when the
// device ran out of memory) with the error text. *cancel stops it at the next
// iteration boundary (kCancelled, partial figures kept). *state, when set,
// follows its phases (warmup, measure, profile, numerics) for a
// measure::Heartbeat on another thread. Runs on the calling thread; one run at
// a time per process.
RunOutcome RunOne(const RunConfig& config, const MeasureConfig& measure,
                  const measure::ProgressFn& progress,
                  const std::atomic<bool>* cancel, measure::RunState* state = nullptr);

// Rank 0 of a distributed run (ddp, collective), before its first such run:
// opens the rendezvous store (c10d's TCPStore) on address (an IPv4 address)
// at port (0: one the system picks), for world_size ranks, and returns the
// port, which the other ranks' RunConfig::store_port names. The store lives
// as long as the process. Unavailable where it cannot listen.
absl::StatusOr<int> OpenRendezvous(int world_size, const std::string& address = "127.0.0.1",
                                   int port = 0);

// Ends this process's distributed group (its communicators, their threads,
// the store) once its runs are done; nothing without one. Never throws.
void CloseGroup();

// cpu_threads: LibTorch's intra-op threads, set before the probe reads them
// (the default a CPU run gets, so that the probe reports it); 0 keeps
// LibTorch's own.
DeviceProbe ProbeDevices(int cpu_threads);

// The environment a run on device starts in: LibTorch's versions (CUDA
// runtime, cuDNN, BLAS), the host's (kernel, governors, CPU quota, NCCL),
// and on a CUDA device its GPU's setup through NVML.
fingerprint::Fingerprint FingerprintOf(const std::string& device);

// The BLAS the CPU's matrix products run on: the library LibTorch loaded for
// it (Debian's takes whatever libblas.so.3 points at: Netlib's reference
// BLAS unless an optimised one is installed), else the one it was built
// with (the wheel links MKL in). E.g. "OpenBLAS (openblas-pthread)",
// "reference BLAS (netlib; slow)", "mkl".
std::string CpuBlas();

// A run's intra-op threads: on the CPU, where the worker chose a count
// (RunConfig::cpu_threads), LibTorch's set to it (with OpenMP the count is
// the calling thread's: call it on the thread that runs the run), with its
// reason and fingerprint; elsewhere LibTorch's as they are. Sets
// out->cpu_threads to the count in effect. Throws what LibTorch throws.
void SetCpuThreads(const RunConfig& config, bool on_cpu, RunOutcome* out);

// The instruction-set extensions Inductor's CPU code may use that this
// host's CPU has, in a fixed order ("avx2 avx512f avx512_bf16 amx_tile").
std::string CpuIsa();

// Trainable parameters of the built-in model config names (defaults
// applied), built on the CPU; InvalidArgument as CreateModel.
absl::StatusOr<int64_t> ModelParameterCount(const RunConfig& config);

// Writes to path, in the format Python's torch.load reads, every parameter
// and buffer of the built-in model config names (defaults applied, weights
// from seed 0) by its module name, with "__input__" (one batch) and
// "__output__" (the model's output on it, eval mode, fp32 on the CPU): what
// the model's Python twin must reproduce from the same weights.
absl::Status SaveModelCheckpoint(const RunConfig& config, const std::string& path);

// What an AOTInductor package for device_name must be compiled for: "cpu"
// with the CPU's vector extensions ("cpu avx2 fma avx512f"), or "cuda sm_90"
// (the architecture of the GPU that device_name resolves to); with this
// LibTorch's version, e.g. "cuda sm_90 torch 2.11.0".
// InvalidArgument for a device that is not there.
absl::StatusOr<std::string> CompileTarget(const std::string& device_name);

}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_ENGINE_H_
