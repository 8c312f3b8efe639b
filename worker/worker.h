// The body of gpubench-worker: reads one WorkerRequest, runs every point of
// its sweep through the engine, and writes WorkerEvents. Torch-free: it talks
// to the engine through plain types.
#ifndef GPUBENCH_WORKER_WORKER_H_
#define GPUBENCH_WORKER_WORKER_H_

#include <atomic>
#include <string>

#include "absl/status/status.h"
#include "gpubench/v1/worker.pb.h"

namespace gpubench::worker {

// Reads one WorkerRequest from in_fd, confines this process (unless the
// request says not to; it must have one thread), and runs the request,
// writing events to out_fd: for each run RunStarted, RunProgress per window,
// RunFinished (with samples); then WorkerDone. A run that runs out of memory
// skips the larger batch sizes of the same config
// (RUN_STATE_SKIPPED_AFTER_OOM). *cancel stops at the next iteration
// boundary. Errors: InvalidArgument for a bad spec, Unavailable when the
// parent closed the pipe, FailedPrecondition when it cannot confine itself.
absl::Status ServeOnce(int in_fd, int out_fd, const std::atomic<bool>* cancel);

// The host as LibTorch sees it (torch, CUDA, cuDNN, GPUs, MPS), plus the
// gpubench version; the daemon adds OS, CPU and memory.
v1::HostInfo ProbeHost();

}  // namespace gpubench::worker

#endif  // GPUBENCH_WORKER_WORKER_H_
