// Starts gpubench-worker as a child process and talks to it over pipes, and
// the Worker / WorkerLauncher interfaces the daemon's job runner drives.
// Torch-free.
#ifndef GPUBENCH_LAUNCHER_PROCESS_H_
#define GPUBENCH_LAUNCHER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "gpubench/v1/worker.pb.h"
#include "launcher/ipc.h"

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
  // Each worker gets a private scratch folder (0700) under scratch_root
  // (empty: TempDir()), its TMPDIR and caches, removed once it is gone.
  std::string scratch_root;
  // The worker confines itself (launcher/confine.h) and fails rather than run
  // unconfined. Off only where the host cannot and the operator allowed it.
  bool confine = true;
  std::vector<std::string> protected_paths;  // data directory, token file, TLS key
  std::vector<std::string> read_paths;       // further folders workers may read
  // gpubenchd --worker-user: each worker becomes this user once it has
  // opened its models (WorkerConfinement.run_as); its scratch folder is
  // made its own. Unset: workers stay the daemon's user.
  std::optional<v1::RunAs> run_as;
};

// The user named name, for WorkerLimits::run_as: its uid, gid and
// supplementary groups. InvalidArgument naming --worker-user for an unknown
// user or root; FailedPrecondition where this process may not switch users
// (it is not root).
absl::StatusOr<v1::RunAs> WorkerUser(const std::string& name);

// OK if run_as may pass every folder down to dir and dir itself (a worker
// reaches its scratch folder under dir by its absolute path), tried in a
// child that becomes run_as; else FailedPrecondition naming --worker-user.
absl::Status WorkerUserReaches(const v1::RunAs& run_as, const std::string& dir);

// A running worker as the daemon's job runner sees it: a stream of events
// and a way to stop it. Next() and Wait() are for one thread; Stop(), Kill()
// and RssBytes() may be called from any thread.
class Worker {
 public:
  virtual ~Worker() = default;
  // The next event; false when the worker closed its stream (it exited or
  // crashed: see Wait()). DataLoss for a garbled stream.
  virtual absl::StatusOr<bool> Next(v1::WorkerEvent* event) = 0;
  virtual void Stop() = 0;  // stop at the next iteration boundary
  virtual void Kill() = 0;  // now
  // How it ended; call after Next() returned false (or after Kill()).
  virtual ExitInfo Wait() = 0;
  // Its resident set now, bytes; 0 once it is gone.
  virtual int64_t RssBytes() const = 0;
  // What its scratch folder holds now, bytes on disk (0: none).
  virtual int64_t ScratchBytes() const { return 0; }
  // The process group its processes run in (WorkerRequest.process_group),
  // for the job's next workers to join; 0 where it has none of its own.
  virtual pid_t ProcessGroup() const { return 0; }
};

// Starts workers: gpubench-worker processes in the daemon (ProcessLauncher),
// scripted ones in tests.
class WorkerLauncher {
 public:
  virtual ~WorkerLauncher() = default;
  virtual absl::StatusOr<std::unique_ptr<Worker>> Start(const v1::WorkerRequest& request) = 0;
};

// One child process.
class WorkerProcess : public Worker {
 public:
  // Starts worker_path with limits, writes request (with its confinement
  // and scratch folder filled in) to its stdin and closes it. The child
  // runs in process group request.process_group(), or leads a new one where
  // that is 0 or gone (never in the caller's group), with
  // telemetry::kJobProcessGroupEnv set.
  static absl::StatusOr<std::unique_ptr<WorkerProcess>> Start(
      const std::string& worker_path, const v1::WorkerRequest& request,
      const WorkerLimits& limits = {});
  ~WorkerProcess() override;  // kills and reaps the child if still running

  absl::StatusOr<bool> Next(v1::WorkerEvent* event) override;
  void Stop() override;  // SIGTERM
  void Kill() override;  // SIGKILL
  ExitInfo Wait() override;  // reaps the child
  // The child's VmRSS and its own children's (the compiler of execution aot).
  int64_t RssBytes() const override;
  // The blocks its scratch folder's files take, walked without following
  // links; a folder of more than a million entries counts as full.
  int64_t ScratchBytes() const override;
  pid_t ProcessGroup() const override { return pgid_; }

  pid_t pid() const { return pid_; }

 private:
  WorkerProcess(pid_t pid, pid_t pgid, int events_fd, int stderr_fd, std::string scratch_dir);
  void DrainStderr();

  const pid_t pid_;
  const pid_t pgid_;
  const std::string scratch_dir_;  // removed after the reap
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

// Starts gpubench-worker processes from one binary, with limits.
class ProcessLauncher : public WorkerLauncher {
 public:
  ProcessLauncher(std::string worker_path, WorkerLimits limits)
      : worker_path_(std::move(worker_path)), limits_(limits) {}
  absl::StatusOr<std::unique_ptr<Worker>> Start(const v1::WorkerRequest& request) override {
    auto process = WorkerProcess::Start(worker_path_, request, limits_);
    if (!process.ok()) return process.status();
    return std::unique_ptr<Worker>(std::move(*process));
  }

 private:
  const std::string worker_path_;
  const WorkerLimits limits_;
};

// The gpubench-worker binary beside the running executable, or
// $GPUBENCH_WORKER when set.
std::string DefaultWorkerPath();

}  // namespace gpubench::worker

#endif  // GPUBENCH_LAUNCHER_PROCESS_H_
