#include "launcher/cpu_cores.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>

#include "launcher/fingerprint.h"

namespace gpubench::cpu_cores {
namespace {

// The CPUs in this thread's affinity mask (the main thread's is the
// process's); 0 where it cannot be read. The mask grows until the kernel's
// fits (EINVAL: too small), so a host past CPU_SETSIZE (1024) counts too.
int AffinityCpus() {
  for (int cpus = CPU_SETSIZE; cpus <= (1 << 20); cpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(cpus);
    if (set == nullptr) return 0;
    const size_t size = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(size, set);
    const int rc = sched_getaffinity(0, size, set);
    const int error = errno;
    const int count = rc == 0 ? CPU_COUNT_S(size, set) : 0;
    CPU_FREE(set);
    if (rc == 0) return count;
    if (error != EINVAL) return 0;
  }
  return 0;
}

// "1.5", "0.25": a quota as people write it.
std::string Cores(double cores) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", cores);
  return text;
}

std::string Plural(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

UsableCpus UsableCpusFrom(int affinity_cpus, const std::string& root) {
  UsableCpus u;
  u.affinity_cpus = std::max(0, affinity_cpus);
  u.quota_cores = fingerprint::CpuQuotaCores(root + "/proc/self/cgroup", root + "/sys/fs/cgroup");
  int count = std::max(1, u.affinity_cpus);
  u.basis = u.affinity_cpus > 0 ? "affinity " + std::to_string(u.affinity_cpus)
                                : std::string("affinity unreadable");
  if (!u.quota_cores) {
    u.basis += ", cgroup quota unreadable";
  } else if (*u.quota_cores <= 0) {
    u.basis += ", no cgroup quota";
  } else {
    // A quota of 1.5 cores keeps 2 threads busy for three quarters of each
    // period: rounded up, the quota is never left idle.
    const int quota_cpus = std::max(1, static_cast<int>(std::ceil(*u.quota_cores - 1e-9)));
    count = std::min(count, quota_cpus);
    u.basis += ", cgroup quota " + Cores(*u.quota_cores) +
               (*u.quota_cores == 1 ? " CPU" : " CPUs");
  }
  u.count = count;
  u.reason = Plural(count, "CPU", "CPUs") + " (" + u.basis + ")";
  return u;
}

UsableCpus UsableCpusOfThisProcess() { return UsableCpusFrom(AffinityCpus(), ""); }

CpuThreads CpuThreadsFor(int requested, int loader_threads, int ranks, const UsableCpus& usable) {
  CpuThreads t;
  if (requested > 0) {
    t.count = requested;
    t.reason = std::to_string(requested) + ": spec.cpu_threads";
    return t;
  }
  // OpenMP's threads spin a while after each parallel region: threads past
  // the CPUs would take them from the step, the loaders and the other ranks.
  const int loaders = std::max(0, loader_threads);
  const int shared_by = std::max(1, ranks);
  const int left = usable.count / shared_by - loaders;
  t.count = std::max(1, left);
  t.reason = std::to_string(t.count) + ": the CPUs this worker may use (" + usable.basis + ")";
  if (shared_by > 1) t.reason += " shared by " + std::to_string(shared_by) + " ranks";
  t.reason += ", less " + Plural(loaders, "loader thread", "loader threads");
  if (left < 1) t.reason += ", at least 1";
  return t;
}

}  // namespace gpubench::cpu_cores
