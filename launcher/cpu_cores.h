// The CPUs this process may use (its affinity mask, capped by its cgroup's
// CPU quota), and the intra-op threads a CPU run takes of them. LibTorch's
// own default counts neither (Debian's 1.13: the online CPUs halved on
// x86-64, as if every core had two hyper-threads, so 1 on a 2-CPU VM), so
// the worker sets the count itself. Torch-free and proto-free; thread-safe
// (no state).
#ifndef GPUBENCH_LAUNCHER_CPU_CORES_H_
#define GPUBENCH_LAUNCHER_CPU_CORES_H_

#include <optional>
#include <string>

namespace gpubench::cpu_cores {

// What a process may run on.
struct UsableCpus {
  int count = 1;                      // at least 1
  int affinity_cpus = 0;              // CPUs in its affinity mask; 0 where unreadable
  std::optional<double> quota_cores;  // its cgroup's quota; 0 unlimited, empty unreadable
  std::string basis;                  // "affinity 2, no cgroup quota"
  std::string reason;                 // "2 CPUs (affinity 2, no cgroup quota)"
};

// The CPUs of an affinity mask that holds affinity_cpus (0: unreadable,
// counted as 1), capped by the cgroup CPU quota of the process whose
// cgroup file is root/proc/self/cgroup under the tree root/sys/fs/cgroup
// (fingerprint::CpuQuotaCores: v2's cpu.max or v1's cfs files, the least
// over the cgroup and its ancestors), the quota rounded up: 1.5 cores is 2
// CPUs, 0.5 is 1. root stands for / (a test's tree); "" reads the host's.
UsableCpus UsableCpusFrom(int affinity_cpus, const std::string& root);

// This process's: its sched_getaffinity mask and its cgroup's quota.
UsableCpus UsableCpusOfThisProcess();

// LibTorch's intra-op threads for a CPU run, and why.
struct CpuThreads {
  int count = 1;
  // "2: the CPUs this worker may use (affinity 2, no cgroup quota), less 0
  // loader threads", "1: spec.cpu_threads".
  std::string reason;
};

// requested (spec.cpu_threads) where above 0; else usable's count, shared
// by a distributed run's ranks (each a worker of this host with the same
// CPUs), less the run's host loader threads (which take CPUs of their own
// while the step runs), at least 1. ranks below 2: one.
CpuThreads CpuThreadsFor(int requested, int loader_threads, int ranks, const UsableCpus& usable);

}  // namespace gpubench::cpu_cores

#endif  // GPUBENCH_LAUNCHER_CPU_CORES_H_
