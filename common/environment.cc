#include "common/environment.h"

#include <unistd.h>

#include <utility>

namespace gpubench {

std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (set.count(entry.substr(0, entry.find('='))) == 0) env.push_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

bool WorkerMayInherit(const std::string& name) {
  static const char* const kNames[] = {
      "PATH", "HOME", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME", "LD_LIBRARY_PATH",
      "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "GPUBENCH_NVML_LIBRARY", "GPUBENCH_PYTHON_DIR"};
  static const char* const kPrefixes[] = {
      "LC_",     "CUDA_",   "NVIDIA_", "NCCL_",   "NVSHMEM_",    "TORCH_",  "PYTORCH_",
      "TORCHINDUCTOR_", "TRITON_", "CUDNN_", "CUBLAS_", "CUBLASLT_", "OMP_", "GOMP_",
      "KMP_",    "MKL_",    "OPENBLAS_", "GLOO_", "GPUBENCH_INJECT_"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  for (const char* p : kPrefixes) {
    if (name.rfind(p, 0) == 0) return true;
  }
  return false;
}

std::vector<std::string> WorkerEnvironmentWith(const std::map<std::string, std::string>& set) {
  std::vector<std::string> env;
  for (std::string& entry : EnvironmentWith(set)) {
    const std::string name = entry.substr(0, entry.find('='));
    if (set.count(name) > 0 || WorkerMayInherit(name)) env.push_back(std::move(entry));
  }
  return env;
}

std::vector<char*> EnvironmentPointers(std::vector<std::string>& entries) {
  std::vector<char*> pointers;
  for (std::string& e : entries) pointers.push_back(e.data());
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace gpubench
