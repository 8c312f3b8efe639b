#include "launcher/process.h"

#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/environment.h"
#include "common/paths.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/delimited_message_util.h"
#include "launcher/telemetry.h"

namespace gpubench::worker {
namespace {

constexpr size_t kStderrTailBytes = 4096;

absl::Status Errno(const char* what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace

std::string ExitInfo::Describe() const {
  if (signal != 0) return absl::StrCat("signal ", signal, " (", strsignal(signal), ")");
  return absl::StrCat("exit ", exit_code);
}

absl::StatusOr<v1::RunAs> WorkerUser(const std::string& name) {
  std::vector<char> buffer(1 << 16);
  passwd entry;
  passwd* found = nullptr;
  if (getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--worker-user: no user named \"", name, "\""));
  }
  if (found->pw_uid == 0) {
    return absl::InvalidArgumentError("--worker-user: must not be root");
  }
  if (geteuid() != 0) {
    return absl::FailedPreconditionError(
        "--worker-user: only a daemon started as root may start workers as another user");
  }
  v1::RunAs run_as;
  run_as.set_name(name);
  run_as.set_uid(found->pw_uid);
  run_as.set_gid(found->pw_gid);
  int count = 64;
  std::vector<gid_t> groups(count);
  if (getgrouplist(name.c_str(), found->pw_gid, groups.data(), &count) < 0) {
    groups.resize(count);
    getgrouplist(name.c_str(), found->pw_gid, groups.data(), &count);
  }
  for (int i = 0; i < count; ++i) run_as.add_groups(groups[i]);
  return run_as;
}

absl::Status WorkerUserReaches(const v1::RunAs& run_as, const std::string& dir) {
  std::vector<gid_t> groups(run_as.groups().begin(), run_as.groups().end());
  const pid_t pid = fork();
  if (pid < 0) return Errno("fork");
  if (pid == 0) {
    const bool became = setgroups(groups.size(), groups.data()) == 0 &&
                        setresgid(run_as.gid(), run_as.gid(), run_as.gid()) == 0 &&
                        setresuid(run_as.uid(), run_as.uid(), run_as.uid()) == 0;
    _exit(became && access(dir.c_str(), X_OK) == 0 ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "--worker-user: ", run_as.name(), " cannot reach ", dir,
      " (its workers' scratch folders); give the data directory a path that user may pass "
      "(not under a 0700 home such as /root)"));
}

std::string DefaultWorkerPath() { return InstalledBinary("gpubench-worker", "GPUBENCH_WORKER"); }

namespace {

// The worker's scratch folder (its TMPDIR, the one place it writes), owned
// by the user it runs as.
absl::StatusOr<std::string> MakeScratch(const WorkerLimits& limits) {
  std::string scratch = (limits.scratch_root.empty() ? TempDir() : limits.scratch_root) +
                        "/worker-XXXXXX";
  if (mkdtemp(scratch.data()) == nullptr) return Errno(("mkdtemp " + scratch).c_str());
  if (limits.run_as && chown(scratch.c_str(), limits.run_as->uid(), limits.run_as->gid()) != 0) {
    const absl::Status failed = Errno(("chown " + scratch).c_str());
    RemoveTree(scratch);
    return failed;
  }
  return scratch;
}

// request with the confinement the worker applies to itself.
v1::WorkerRequest Confined(const v1::WorkerRequest& request, const WorkerLimits& limits,
                           const std::string& scratch) {
  v1::WorkerRequest confined = request;
  v1::WorkerConfinement* confinement = confined.mutable_confinement();
  confinement->set_enabled(limits.confine || confinement->probes_size() > 0);
  confinement->set_scratch_dir(scratch);
  for (const std::string& p : limits.protected_paths) confinement->add_protected_paths(p);
  for (const std::string& p : limits.read_paths) confinement->add_read_paths(p);
  if (limits.run_as) *confinement->mutable_run_as() = *limits.run_as;
  return confined;
}

// In the forked child, async-signal-safe calls only: the job's process
// group, the limits, the pipes as stdin, stdout and stderr, no other
// descriptor, then the worker. Never returns.
[[noreturn]] void ExecWorker(const std::string& worker_path, char* const* envp, const int in[2],
                             const int out[2], const int err[2], pid_t group,
                             const WorkerLimits& limits) {
  // The worker dies with the thread that started it (a daemon killed with
  // SIGKILL must not leave a worker holding the GPU).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The job's group, so that its telemetry tells the job's processes from
  // the others; a new one where that group is gone (EPERM). The parent
  // does the same, as a shell does, so that the group is set whichever
  // runs first.
  if (group <= 0 || setpgid(0, group) != 0) setpgid(0, 0);
  if (limits.max_open_files > 0) {
    const struct rlimit files = {static_cast<rlim_t>(limits.max_open_files),
                                 static_cast<rlim_t>(limits.max_open_files)};
    setrlimit(RLIMIT_NOFILE, &files);
  }
  if (!limits.core_dumps) {
    const struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
  }
  dup2(in[0], STDIN_FILENO);
  dup2(out[1], STDOUT_FILENO);
  dup2(err[1], STDERR_FILENO);
  // Landlock checks opens, not descriptors already open: the worker
  // inherits none of the daemon's (an upload being written, the store).
  closefrom(3);
  char* const argv[] = {const_cast<char*>(worker_path.c_str()), nullptr};
  execve(worker_path.c_str(), argv, envp);
  _exit(127);
}

// The request, length-delimited, written fully (it is small next to a pipe
// buffer anyway); a worker that died meanwhile is reported by Next and Wait.
void WriteRequest(int fd, const v1::WorkerRequest& request) {
  std::string bytes;
  google::protobuf::io::StringOutputStream sink(&bytes);
  google::protobuf::util::SerializeDelimitedToZeroCopyStream(request, &sink);
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += n;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerProcess>> WorkerProcess::Start(
    const std::string& worker_path, const v1::WorkerRequest& request,
    const WorkerLimits& limits) {
  if (access(worker_path.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("worker binary ", worker_path, " is not executable"));
  }
  // The scratch folder, the request that names it and the environment
  // that points every cache at it, all built before the fork.
  absl::StatusOr<std::string> made = MakeScratch(limits);
  if (!made.ok()) return made.status();
  const std::string scratch = *made;
  // Only what a worker needs of the daemon's environment (docs/security.md).
  std::vector<std::string> env = WorkerEnvironmentWith({
      {"TMPDIR", scratch},
      {"TMP", scratch},
      {"TEMP", scratch},
      {"XDG_CACHE_HOME", scratch + "/cache"},
      {"CUDA_CACHE_PATH", scratch + "/cuda"},
      {"TRITON_HOME", scratch},
      {telemetry::kJobProcessGroupEnv, "1"},
  });
  const std::vector<char*> envp = EnvironmentPointers(env);
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    const absl::Status failed = Errno("pipe");
    RemoveTree(scratch);
    return failed;
  }
  const pid_t group = request.process_group();
  const pid_t pid = fork();
  if (pid < 0) {
    const absl::Status failed = Errno("fork");
    RemoveTree(scratch);
    return failed;
  }
  if (pid == 0) ExecWorker(worker_path, envp.data(), in, out, err, group, limits);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // EACCES once the child has run exec: it set its group itself.
  if (group <= 0 || setpgid(pid, group) != 0) setpgid(pid, pid);
  pid_t pgid = getpgid(pid);
  if (pgid < 0) pgid = pid;  // already gone; its group went with it
  WriteRequest(in[1], Confined(request, limits, scratch));
  close(in[1]);
  return std::unique_ptr<WorkerProcess>(new WorkerProcess(pid, pgid, out[0], err[0], scratch));
}

namespace {

// VmRSS of pid and of every process below it (a worker's compiler, execution
// aot), in bytes; 0 for a process that is gone.
int64_t TreeRssBytes(pid_t pid, int depth) {
  int64_t bytes = 0;
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) bytes = std::atoll(line.c_str() + 6) * 1024;  // kB
  }
  if (depth >= 4) return bytes;
  std::ifstream children(absl::StrCat("/proc/", pid, "/task/", pid, "/children"));
  for (pid_t child; children >> child;) bytes += TreeRssBytes(child, depth + 1);
  return bytes;
}

}  // namespace

int64_t WorkerProcess::RssBytes() const { return TreeRssBytes(pid_, 0); }

namespace {
thread_local int64_t tree_bytes = 0;
thread_local int64_t tree_entries = 0;
}  // namespace

int64_t WorkerProcess::ScratchBytes() const {
  tree_bytes = 0;
  tree_entries = 0;
  nftw(scratch_dir_.c_str(),
       [](const char*, const struct stat* st, int, struct FTW*) {
         tree_bytes += static_cast<int64_t>(st->st_blocks) * 512;
         return ++tree_entries > 1000000 ? 1 : 0;
       },
       16, FTW_PHYS);
  return tree_entries > 1000000 ? INT64_MAX : tree_bytes;
}

WorkerProcess::WorkerProcess(pid_t pid, pid_t pgid, int events_fd, int stderr_fd,
                             std::string scratch_dir)
    : pid_(pid),
      pgid_(pgid),
      scratch_dir_(std::move(scratch_dir)),
      events_fd_(events_fd),
      stderr_fd_(stderr_fd),
      reader_(events_fd) {
  stderr_thread_ = std::thread([this] { DrainStderr(); });
}

WorkerProcess::~WorkerProcess() {
  if (!reaped_) {
    Kill();
    Wait();
  }
  if (stderr_thread_.joinable()) stderr_thread_.join();
  close(events_fd_);
  close(stderr_fd_);
  // Its children (execution aot's compiler) die with it (PDEATHSIG).
  RemoveTree(scratch_dir_);
}

void WorkerProcess::DrainStderr() {
  char buf[4096];
  while (true) {
    const ssize_t n = read(stderr_fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    stderr_tail_.append(buf, n);
    if (stderr_tail_.size() > 2 * kStderrTailBytes) {
      stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
    }
  }
}

absl::StatusOr<bool> WorkerProcess::Next(v1::WorkerEvent* event) {
  return reader_.Read(event);
}

void WorkerProcess::Stop() {
  std::lock_guard<std::mutex> lock(reap_mu_);
  if (!reaped_) kill(pid_, SIGTERM);
}

void WorkerProcess::Kill() {
  std::lock_guard<std::mutex> lock(reap_mu_);
  if (!reaped_) kill(pid_, SIGKILL);
}

ExitInfo WorkerProcess::Wait() {
  {
    std::lock_guard<std::mutex> lock(reap_mu_);
    if (reaped_) return exit_;
  }
  // Wait for the exit without reaping, then reap under the lock that Stop
  // and Kill take: a signal never reaches a pid the kernel has reused.
  siginfo_t info;
  while (waitid(P_PID, pid_, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  int status = 0;
  {
    std::lock_guard<std::mutex> lock(reap_mu_);
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  if (stderr_thread_.joinable()) stderr_thread_.join();
  if (WIFSIGNALED(status)) exit_.signal = WTERMSIG(status);
  if (WIFEXITED(status)) exit_.exit_code = WEXITSTATUS(status);
  std::lock_guard<std::mutex> lock(mu_);
  std::string tail = stderr_tail_;
  if (tail.size() > kStderrTailBytes) tail.erase(0, tail.size() - kStderrTailBytes);
  exit_.stderr_tail = tail;
  return exit_;
}

}  // namespace gpubench::worker
