#include "launcher/fingerprint.h"

#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "launcher/nvml.h"

namespace gpubench::fingerprint {
namespace {

// The first line of a file, without its end; empty where it cannot be read.
std::optional<std::string> FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  return line;
}

// "13.0" from 13000, "12.4" from 12040: CUDA's encoding of a version.
std::string CudaVersion(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// The GPU's setup through one open NVML and one device.
class GpuReader {
 public:
  GpuReader(const nvml::Api& api, nvml::Device device) : api_(api), device_(device) {}

  void Read(Fingerprint* f) const {
    char text[128] = {};
    if (api_.driver_version && api_.driver_version(text, sizeof(text)) == nvml::kSuccess) {
      f->driver_version = text;
    }
    int cuda = 0;
    if (api_.cuda_driver_version && api_.cuda_driver_version(&cuda) == nvml::kSuccess) {
      f->cuda_driver_version = CudaVersion(cuda);
    }
    f->gpu_name = Text(api_.name);
    f->gpu_uuid = Text(api_.uuid);
    f->gpu_serial = Text(api_.serial);
    f->board_part_number = Text(api_.board_part_number);
    f->vbios_version = Text(api_.vbios_version);
    int current = 0, pending = 0;
    if (api_.ecc_mode && api_.ecc_mode(device_, &current, &pending) == nvml::kSuccess) {
      f->ecc_enabled = current == 1;
    }
    unsigned int mig = 0, mig_pending = 0;
    if (api_.mig_mode && api_.mig_mode(device_, &mig, &mig_pending) == nvml::kSuccess) {
      f->mig_enabled = mig == 1;
    }
    if (api_.persistence_mode && api_.persistence_mode(device_, &current) == nvml::kSuccess) {
      f->persistence_mode = current == 1;
    }
    f->power_limit_w = Watts(api_.enforced_power_limit);
    if (!f->power_limit_w) f->power_limit_w = Watts(api_.power_limit);
    f->power_limit_default_w = Watts(api_.default_power_limit);
    unsigned int low = 0, high = 0;
    if (api_.power_limit_constraints &&
        api_.power_limit_constraints(device_, &low, &high) == nvml::kSuccess) {
      f->power_limit_min_w = low / 1000.0;
      f->power_limit_max_w = high / 1000.0;
    }
    f->applications_graphics_clock_mhz = Clock(api_.applications_clock, nvml::kClockGraphics);
    f->applications_memory_clock_mhz = Clock(api_.applications_clock, nvml::kClockMem);
    f->max_sm_clock_mhz = Clock(api_.max_clock, nvml::kClockSm);
    f->max_memory_clock_mhz = Clock(api_.max_clock, nvml::kClockMem);
    f->pcie_generation = Number(api_.pcie_generation);
    f->pcie_width = Number(api_.pcie_width);
    f->pcie_max_generation = Number(api_.pcie_max_generation);
    f->pcie_max_width = Number(api_.pcie_max_width);
    ReadNvLinks(f);
  }

 private:
  using TextCall = nvml::Return (*)(nvml::Device, char*, unsigned int);
  using NumberCall = nvml::Return (*)(nvml::Device, unsigned int*);
  using ClockCall = nvml::Return (*)(nvml::Device, int, unsigned int*);

  std::optional<std::string> Text(TextCall call) const {
    char text[128] = {};
    if (call == nullptr || call(device_, text, sizeof(text)) != nvml::kSuccess) return {};
    return std::string(text);
  }
  std::optional<int> Number(NumberCall call) const {
    unsigned int v = 0;
    if (call == nullptr || call(device_, &v) != nvml::kSuccess) return {};
    return static_cast<int>(v);
  }
  std::optional<double> Watts(NumberCall call) const {  // from mW
    unsigned int mw = 0;
    if (call == nullptr || call(device_, &mw) != nvml::kSuccess) return {};
    return mw / 1000.0;
  }
  std::optional<int> Clock(ClockCall call, int type) const {
    unsigned int mhz = 0;
    if (call == nullptr || call(device_, type, &mhz) != nvml::kSuccess) return {};
    return static_cast<int>(mhz);
  }

  // Each link NVML answers for counts; none answering (a PCIe card) leaves
  // both counts empty.
  void ReadNvLinks(Fingerprint* f) const {
    if (api_.nvlink_state == nullptr) return;
    int links = 0, active = 0;
    for (unsigned int link = 0; link < nvml::kMaxNvLinks; ++link) {
      int up = 0;
      if (api_.nvlink_state(device_, link, &up) != nvml::kSuccess) continue;
      ++links;
      if (up == 1) ++active;
    }
    if (links == 0) return;
    f->nvlink_links = links;
    f->nvlink_active = active;
  }

  const nvml::Api& api_;
  const nvml::Device device_;
};

// Every CPU's scaling governor: the one name, or each with its count.
std::optional<std::string> Governors(const std::string& root) {
  const std::string cpus = root + "/sys/devices/system/cpu";
  DIR* dir = opendir(cpus.c_str());
  if (dir == nullptr) return std::nullopt;
  std::map<std::string, int> counts;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.size() < 4 || name.compare(0, 3, "cpu") != 0 ||
        name.find_first_not_of("0123456789", 3) != std::string::npos) {
      continue;
    }
    if (auto g = FirstLine(cpus + "/" + name + "/cpufreq/scaling_governor"); g && !g->empty()) {
      ++counts[*g];
    }
  }
  closedir(dir);
  if (counts.empty()) return std::nullopt;
  if (counts.size() == 1) return counts.begin()->first;
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [name, n] : counts) by_count.push_back({-n, name});
  std::sort(by_count.begin(), by_count.end());
  std::string out;
  for (const auto& [n, name] : by_count) {
    if (!out.empty()) out += ", ";
    out += name + " (" + std::to_string(-n) + ")";
  }
  return out;
}

// The version of the NCCL this process loaded (LibTorch's), if any.
std::optional<std::string> LoadedNcclVersion() {
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  int v = 0;
  if (get == nullptr || get(&v) != 0 || v <= 0) return std::nullopt;
  // NCCL_VERSION(X, Y, Z): X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z before.
  const int major = v >= 10000 ? v / 10000 : v / 1000;
  const int minor = v >= 10000 ? (v / 100) % 100 : (v / 100) % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

// The least quota, in cores, of the cgroup at root + path and its
// ancestors up to root: quota(dir) gives one level's (0: none there).
// 0 when no level has one.
template <typename Quota>
double LeastQuota(const std::string& root, std::string path, Quota quota) {
  if (path.find("..") != std::string::npos) return 0;
  double least = 0;
  while (true) {
    const double cores = quota(root + path);
    if (cores > 0 && (least == 0 || cores < least)) least = cores;
    if (path.empty() || path == "/") return least;
    path = path.substr(0, path.rfind('/'));
  }
}

}  // namespace

void ReadGpu(const std::string& device_id, int index, Fingerprint* out, std::string* why) {
  std::shared_ptr<nvml::Library> library = nvml::Library::Open(why);
  nvml::Device device = nullptr;
  if (library == nullptr || !library->Find(device_id, index, &device, why)) return;
  GpuReader(library->api(), device).Read(out);
}

void ReadHost(const std::string& root, Fingerprint* out) {
  if (auto release = FirstLine(root + "/proc/sys/kernel/osrelease"); release && !release->empty()) {
    out->kernel = *release;
  }
  out->cpu_governor = Governors(root);
  out->cpu_quota_cores = CpuQuotaCores(root + "/proc/self/cgroup", root + "/sys/fs/cgroup");
  if (root.empty()) out->nccl_version = LoadedNcclVersion();
}

std::optional<double> CpuQuotaCores(const std::string& cgroup_file,
                                    const std::string& cgroup_root) {
  // "0::PATH" (v2), or "ID:CONTROLLERS:PATH" with cpu among the
  // controllers (v1).
  std::ifstream in(cgroup_file);
  std::string line, v2_path, v1_controllers, v1_path;
  bool v2 = false, v1 = false;
  while (std::getline(in, line)) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string id = line.substr(0, first);
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (id == "0" && controllers.empty()) {
      v2 = true;
      v2_path = path;
    }
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) {
      if (name == "cpu") {
        v1 = true;
        v1_controllers = controllers;
        v1_path = path;
      }
    }
  }
  // v2's tree has cgroup.controllers at its root, empty where no
  // controller is enabled.
  if (v2 && std::ifstream(cgroup_root + "/cgroup.controllers").is_open()) {
    return LeastQuota(cgroup_root, v2_path, [](const std::string& dir) {
      std::istringstream fields(FirstLine(dir + "/cpu.max").value_or(""));
      std::string quota;
      double period = 0;
      if (!(fields >> quota >> period) || quota == "max" || period <= 0) return 0.0;
      char* end = nullptr;
      const double q = std::strtod(quota.c_str(), &end);
      return *end == '\0' && q > 0 ? q / period : 0.0;
    });
  }
  if (!v1) return std::nullopt;
  // Mounted under its controllers' names ("cpu,cpuacct"), or "cpu".
  std::string base = cgroup_root + "/" + v1_controllers;
  if (!FirstLine(base + "/cpu.cfs_period_us")) base = cgroup_root + "/cpu";
  if (!FirstLine(base + "/cpu.cfs_period_us")) return std::nullopt;
  return LeastQuota(base, v1_path, [](const std::string& dir) {
    const double quota = std::atof(FirstLine(dir + "/cpu.cfs_quota_us").value_or("-1").c_str());
    const double period = std::atof(FirstLine(dir + "/cpu.cfs_period_us").value_or("0").c_str());
    return quota > 0 && period > 0 ? quota / period : 0.0;  // -1: unlimited
  });
}

}  // namespace gpubench::fingerprint
