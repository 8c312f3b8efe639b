// What this host's devices and CPU offer, as the worker's --probe and each
// run report them.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/version.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "worker/engine/cuda_support.h"
#include "worker/engine/engine.h"

namespace gpubench::engine {

std::string CpuBlas() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (absl::StrContains(path, "openblas")) {
      const size_t dir_end = path.rfind('/');
      const size_t dir_start = path.rfind('/', dir_end - 1);
      return absl::StrCat("OpenBLAS (", path.substr(dir_start + 1, dir_end - dir_start - 1),
                          ")");
    }
    if (absl::StrContains(path, "libblis")) return "BLIS";
    if (absl::StrContains(path, "libmkl")) return "MKL";
    if (absl::StrContains(path, "/blas/libblas.so")) return "reference BLAS (netlib; slow)";
  }
  // Linked in: what LibTorch was built with.
  const std::string config = at::show_config();
  const size_t at = config.find("BLAS_INFO=");
  if (at != std::string::npos) {
    const size_t end = config.find_first_of(", \n", at + 10);
    return config.substr(at + 10, end == std::string::npos ? end : end - at - 10);
  }
  return "unknown";
}

fingerprint::Fingerprint FingerprintOf(const std::string& device) {
  fingerprint::Fingerprint f;
  f.torch_version = TORCH_VERSION;
  f.blas = CpuBlas();
  fingerprint::ReadHost("", &f);
  if (!absl::StartsWith(device, "cuda")) return f;
  std::string runtime, cudnn;
  cuda::Versions(&runtime, &cudnn);
  if (!runtime.empty()) f.cuda_runtime_version = runtime;
  if (!cudnn.empty()) f.cudnn_version = cudnn;
  const size_t colon = device.find(':');
  const int index = colon == std::string::npos ? 0 : std::atoi(device.c_str() + colon + 1);
  std::string why;  // nothing of the GPU's is filled without NVML
  fingerprint::ReadGpu(cuda::PciBusId(index), index, &f, &why);
  return f;
}

DeviceProbe ProbeDevices(int cpu_threads) {
  DeviceProbe probe;
  probe.torch_version = TORCH_VERSION;
  probe.mps_available = at::hasMPS();
  probe.cpu_blas = CpuBlas();
  if (cpu_threads > 0) at::set_num_threads(cpu_threads);
  probe.cpu_threads = at::get_num_threads();
  cuda::Probe(&probe);
  return probe;
}

void SetCpuThreads(const RunConfig& config, bool on_cpu, RunOutcome* out) {
  // LibTorch's own default counts neither the affinity mask nor the cgroup
  // quota (1.13: the online CPUs halved on x86-64, 1 on a 2-CPU VM).
  if (on_cpu && config.cpu_threads > 0) {
    at::set_num_threads(config.cpu_threads);
    out->cpu_threads_reason = config.cpu_threads_reason;
    out->fingerprint.cpu_threads = config.cpu_threads;
  }
  out->cpu_threads = at::get_num_threads();
}

std::string CpuIsa() {
  static const char* const kExtensions[] = {
      "avx",         "avx2",        "fma",         "f16c",        "avx512f",    "avx512bw",
      "avx512vl",    "avx512dq",    "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
      "amx_bf16",    "amx_int8",    "avx_vnni",    "asimd",       "sve"};
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(cpuinfo, line)) {
    if (absl::StartsWith(line, "flags") || absl::StartsWith(line, "Features")) {
      for (absl::string_view f : absl::StrSplit(line.substr(line.find(':') + 1), ' ',
                                                absl::SkipEmpty())) {
        flags.insert(std::string(f));
      }
      break;
    }
  }
  std::vector<std::string> have;
  for (const char* e : kExtensions) {
    if (flags.count(e)) have.push_back(e);
  }
  return absl::StrJoin(have, " ");
}

}  // namespace gpubench::engine
