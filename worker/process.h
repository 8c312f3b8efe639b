// Starts gpubench-worker as a child process and talks to it over pipes.
// Used by the daemon and by the CLI's local mode. Torch-free.
#ifndef GPUBENCH_WORKER_PROCESS_H_
#define GPUBENCH_WORKER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "gpubench/v1/worker.pb.h"
#include "worker/ipc.h"

namespace gpubench::worker {

// How a worker process ended.
struct ExitInfo {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal killed it
  std::string stderr_tail;  // last lines it wrote to stderr

  bool ok() const { return signal == 0 && exit_code == 0; }
  // "exit 3", "signal 9 (Killed)".
  std::string Describe() const;
};

// Limits set in the child before it runs the worker. Memory is not an
// rlimit: CUDA reserves far more address space than it uses, so RLIMIT_AS
// would break it; the daemon watches RssBytes() instead.
struct WorkerLimits {
  int64_t max_open_files = 4096;  // RLIMIT_NOFILE (0: inherit)
  bool core_dumps = false;        // a GPU process's core can be gigabytes
};

// One child process. Next() and Wait() are for one thread; Stop(), Kill()
// and RssBytes() may be called from any thread.
class WorkerProcess {
 public:
  // Starts worker_path with limits, writes request to its stdin and closes it.
  static absl::StatusOr<std::unique_ptr<WorkerProcess>> Start(
      const std::string& worker_path, const v1::WorkerRequest& request,
      const WorkerLimits& limits = {});
  ~WorkerProcess();  // kills and reaps the child if still running

  // The next event; false when the worker closed its stdout (it exited or
  // crashed: see Wait()). DataLoss for a garbled stream.
  absl::StatusOr<bool> Next(v1::WorkerEvent* event);

  void Stop();  // SIGTERM: stop at the next iteration boundary
  void Kill();  // SIGKILL

  // Reaps the child; call after Next() returned false.
  ExitInfo Wait();

  pid_t pid() const { return pid_; }

  // The child's resident set (VmRSS) now, bytes; 0 once it is gone.
  int64_t RssBytes() const;

 private:
  WorkerProcess(pid_t pid, int events_fd, int stderr_fd);
  void DrainStderr();

  const pid_t pid_;
  const int events_fd_;
  const int stderr_fd_;
  ipc::MessageReader reader_;
  std::thread stderr_thread_;
  std::mutex mu_;
  std::string stderr_tail_;  // guarded by mu_
  std::mutex reap_mu_;  // orders the reap before any later signal
  bool reaped_ = false;  // guarded by reap_mu_
  ExitInfo exit_;
};

// The gpubench-worker binary beside the running executable, or
// $GPUBENCH_WORKER when set.
std::string DefaultWorkerPath();

}  // namespace gpubench::worker

#endif  // GPUBENCH_WORKER_PROCESS_H_
