#include "server/host_probe.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/version.h"
#include "google/protobuf/util/json_util.h"

namespace gpubench::server {
namespace {

// The value after "key:" on the first matching line of a /proc file.
std::string ProcField(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      auto start = line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  }
  return "";
}

}  // namespace

v1::HostInfo ProbeMachine(const std::string& address) {
  v1::HostInfo host;
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  host.set_hostname(name);
  host.set_host_id(name);
  struct utsname u;
  if (uname(&u) == 0) {
    host.set_kernel(u.release);
    host.set_os(u.sysname);
  }
  std::string pretty = ProcField("/etc/os-release", "PRETTY_NAME");
  if (pretty.empty()) {
    std::ifstream in("/etc/os-release");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("PRETTY_NAME=", 0) == 0) pretty = line.substr(12);
    }
  }
  if (!pretty.empty()) {
    if (pretty.front() == '"') pretty = pretty.substr(1, pretty.size() - 2);
    host.set_os(pretty);
  }
  host.set_cpu_model(ProcField("/proc/cpuinfo", "model name"));
  host.set_cpu_cores(static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  host.set_memory_bytes(static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) *
                        sysconf(_SC_PAGE_SIZE));
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..." or
  // "... UNIX Open Kernel Module for x86_64  580.159.04 ...": the first word
  // after "Module" made of digits and dots.
  std::ifstream nvrm("/proc/driver/nvidia/version");
  std::string line;
  if (std::getline(nvrm, line)) {
    const size_t module = line.find("Module");
    std::istringstream words(module == std::string::npos ? ""
                                                         : line.substr(module));
    std::string word;
    while (words >> word) {
      if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) &&
          word.find('.') != std::string::npos &&
          word.find_first_not_of("0123456789.") == std::string::npos) {
        host.set_driver_version(word);
        break;
      }
    }
  }
  host.set_gpubench_version(kGpubenchVersion);
  host.set_address(address);
  *host.mutable_probe_time() = NowTimestamp();
  return host;
}

v1::HostInfo ProbeHost(const std::string& address,
                       const std::string& worker_path, std::string* warning) {
  v1::HostInfo host = ProbeMachine(address);
  const std::string command = absl::StrCat("'", worker_path, "' --probe 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  if (pipe) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) output.append(buf, n);
    const int rc = pclose(pipe);
    v1::HostInfo probed;
    const size_t brace = output.find('{');
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;
    if (rc == 0 && brace != std::string::npos &&
        google::protobuf::util::JsonStringToMessage(output.substr(brace),
                                                    &probed, options)
            .ok()) {
      host.set_torch_version(probed.torch_version());
      host.set_cuda_version(probed.cuda_version());
      host.set_cudnn_version(probed.cudnn_version());
      host.set_mps_available(probed.mps_available());
      host.set_cpu_blas(probed.cpu_blas());
      host.set_cpu_threads(probed.cpu_threads());
      *host.mutable_gpus() = probed.gpus();
      return host;
    }
  }
  *warning = absl::StrCat("cannot probe devices with ", worker_path, ": ",
                          output.substr(0, 500));
  return host;
}

}  // namespace gpubench::server
