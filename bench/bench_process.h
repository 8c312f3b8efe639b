// What the benchmarks that drive a real daemon share: a gpubenchd child
// process, and readings of a process from /proc (memory, CPU time) and of
// the machine (load average).
#ifndef GPUBENCH_BENCH_BENCH_PROCESS_H_
#define GPUBENCH_BENCH_BENCH_PROCESS_H_

#include <sys/types.h>

#include <string>

namespace gpubench::bench {

// The binary name beside this executable (gpubenchd beside load_bench).
std::string BesideSelf(const std::string& name);

// A gpubenchd child on 127.0.0.1, port chosen by the daemon and read back
// from --port-file. Not thread-safe.
class DaemonChild {
 public:
  // Starts the daemon with its data in data_dir and waits (up to 60 s: it
  // probes devices with the worker first) until it serves.
  bool Start(const std::string& daemon, const std::string& worker, const std::string& data_dir);
  bool Alive();
  // SIGTERM (a clean shutdown: running jobs are stopped and requeued), then
  // SIGKILL after 60 s. Returns how it ended, e.g. "exit 0", "signal 9".
  std::string Stop();
  std::string Describe() const;
  bool clean_exit() const;

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  const std::string& log_path() const { return log_path_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int status_ = 0;
  bool exited_ = false;
  std::string log_path_;
};

// "VmRSS 41.2 MiB, VmHWM (peak) 45.0 MiB, 37 threads" from /proc/<pid>/status.
std::string MemoryOf(pid_t pid);

// CPU seconds (user + system) the process has used, from /proc/<pid>/stat;
// -1 when unknown. Its children are other processes and are not counted.
double CpuSecondsOf(pid_t pid);

// This process's CPU seconds (user + system).
double OwnCpuSeconds();

// The first line of /proc/loadavg: the machine may be shared, and the
// figures mean little without it.
std::string LoadAverage();

}  // namespace gpubench::bench

#endif  // GPUBENCH_BENCH_BENCH_PROCESS_H_
