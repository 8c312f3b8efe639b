#include "launcher/telemetry.h"

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace gpubench::telemetry {
namespace {

// The slice of NVML's C ABI used here (nvml.h is not needed to build).
using nvmlReturn_t = int;
constexpr nvmlReturn_t kNvmlSuccess = 0;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlClockMem = 2;
constexpr int kNvmlTemperatureGpu = 0;
constexpr int kNvmlPcieTx = 0;
constexpr int kNvmlPcieRx = 1;

constexpr nvmlReturn_t kNvmlInsufficientSize = 7;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The fields of /proc/[pid]/stat used here.
struct ProcStat {
  pid_t pgrp = 0;           // field 5
  long long cpu_ticks = 0;  // utime (14) + stime (15), clock ticks
  long long rss_pages = 0;  // field 24
};

// False where the file cannot be read (the process is gone).
bool ReadProcStat(const std::string& path, ProcStat* out) {
  std::ifstream in(path);
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  // The command (field 2) may hold spaces and parentheses: fields resume
  // after its last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 > stat.size()) return false;
  std::istringstream fields(stat.substr(close + 2));
  std::string skip;
  long long pgrp = 0, utime = 0, stime = 0;
  fields >> skip >> skip >> pgrp;  // state (3), ppid (4), pgrp (5)
  for (int i = 6; i <= 13; ++i) fields >> skip;
  fields >> utime >> stime;
  for (int i = 16; i <= 23; ++i) fields >> skip;
  if (!(fields >> out->rss_pages)) return false;
  out->pgrp = static_cast<pid_t>(pgrp);
  out->cpu_ticks = utime + stime;
  return true;
}

// The process group of pid, or 0 where it cannot be read (gone, or not in
// this PID namespace).
pid_t ProcessGroupOf(pid_t pid) {
  ProcStat stat;
  return ReadProcStat("/proc/" + std::to_string(pid) + "/stat", &stat) ? stat.pgrp : 0;
}

class NvmlSource : public Source {
 public:
  static std::unique_ptr<Source> Open(const std::string& device_id, int index,
                                      std::string* why) {
    const char* env = std::getenv("GPUBENCH_NVML_LIBRARY");
    const std::string library = env && *env ? env : "libnvidia-ml.so.1";
    void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* error = dlerror();
      *why = "telemetry unavailable: cannot load " + library + " (" +
             (error ? error : "no NVIDIA driver?") + ")";
      return nullptr;
    }
    auto source = std::unique_ptr<NvmlSource>(new NvmlSource(lib));
    if (!source->Bind(why)) return nullptr;
    if (source->init_() != kNvmlSuccess) {
      *why = "telemetry unavailable: nvmlInit failed";
      return nullptr;
    }
    source->initialised_ = true;
    nvmlReturn_t rc = 1;
    if (device_id.rfind("GPU-", 0) == 0 && source->by_uuid_) {
      rc = source->by_uuid_(device_id.c_str(), &source->device_);
    } else if (!device_id.empty() && source->by_pci_) {
      rc = source->by_pci_(device_id.c_str(), &source->device_);
    }
    if (rc != kNvmlSuccess) rc = source->by_index_(index, &source->device_);
    if (rc != kNvmlSuccess) {
      *why = "telemetry unavailable: NVML does not know GPU " + std::to_string(index);
      return nullptr;
    }
    return source;
  }

  ~NvmlSource() override {
    if (initialised_) shutdown_();
    dlclose(lib_);
  }

  std::string name() const override { return "nvml"; }

  bool Read(Sample* s) override {
    nvmlUtilization_t util{};
    if (utilization_(device_, &util) == kNvmlSuccess) {
      s->gpu_utilization_pct = util.gpu;
      s->memory_utilization_pct = util.memory;
    }
    nvmlMemory_t memory{};
    if (memory_(device_, &memory) == kNvmlSuccess) s->memory_used_bytes = memory.used;
    unsigned int v = 0;
    if (clock_(device_, kNvmlClockSm, &v) == kNvmlSuccess) s->sm_clock_mhz = v;
    if (clock_(device_, kNvmlClockMem, &v) == kNvmlSuccess) s->memory_clock_mhz = v;
    if (power_(device_, &v) == kNvmlSuccess) s->power_w = v / 1000.0f;  // mW
    if (temperature_(device_, kNvmlTemperatureGpu, &v) == kNvmlSuccess) s->temperature_c = v;
    unsigned long long reasons = 0;
    if (throttle_ && throttle_(device_, &reasons) == kNvmlSuccess) {
      s->throttle_reasons_mask = reasons;
    }
    if (pcie_ && pcie_(device_, kNvmlPcieRx, &v) == kNvmlSuccess) {
      s->pcie_rx_bytes_per_s = v * 1024.0;  // KB/s
    }
    if (pcie_ && pcie_(device_, kNvmlPcieTx, &v) == kNvmlSuccess) {
      s->pcie_tx_bytes_per_s = v * 1024.0;
    }
    if (processes_) s->gpu_processes = OtherProcesses();
    return true;
  }

 private:
  explicit NvmlSource(void* lib) : lib_(lib) {}

  template <typename F>
  bool Symbol(const char* name, F* out, bool required, std::string* why) {
    *out = reinterpret_cast<F>(dlsym(lib_, name));
    if (*out == nullptr && required) {
      *why = std::string("telemetry unavailable: NVML lacks ") + name;
      return false;
    }
    return true;
  }

  bool Bind(std::string* why) {
    if (!Symbol("nvmlInit_v2", &init_, true, why) ||
        !Symbol("nvmlShutdown", &shutdown_, true, why) ||
        !Symbol("nvmlDeviceGetHandleByIndex_v2", &by_index_, true, why) ||
        !Symbol("nvmlDeviceGetUtilizationRates", &utilization_, true, why) ||
        !Symbol("nvmlDeviceGetMemoryInfo", &memory_, true, why) ||
        !Symbol("nvmlDeviceGetClockInfo", &clock_, true, why) ||
        !Symbol("nvmlDeviceGetPowerUsage", &power_, true, why) ||
        !Symbol("nvmlDeviceGetTemperature", &temperature_, true, why)) {
      return false;
    }
    Symbol("nvmlDeviceGetHandleByPciBusId_v2", &by_pci_, false, why);
    Symbol("nvmlDeviceGetHandleByUUID", &by_uuid_, false, why);
    Symbol("nvmlDeviceGetPcieThroughput", &pcie_, false, why);
    // Renamed "ClocksEventReasons" in newer drivers; the old name stays.
    Symbol("nvmlDeviceGetCurrentClocksEventReasons", &throttle_, false, why);
    if (throttle_ == nullptr) {
      Symbol("nvmlDeviceGetCurrentClocksThrottleReasons", &throttle_, false, why);
    }
    // The _v2 and _v3 calls fill nvmlProcessInfo_v2_t (PID, memory, GPU
    // and compute instance), the first one nvmlProcessInfo_v1_t.
    const std::pair<const char*, size_t> kProcessCalls[] = {
        {"nvmlDeviceGetComputeRunningProcesses_v3", 24},
        {"nvmlDeviceGetComputeRunningProcesses_v2", 24},
        {"nvmlDeviceGetComputeRunningProcesses", 16}};
    for (const auto& [name, stride] : kProcessCalls) {
      if (processes_ != nullptr) break;
      Symbol(name, &processes_, false, why);
      stride_ = stride;
    }
    pids_.assign(16 * stride_, 0);
    return true;
  }

  // Compute processes on the GPU besides the job's own (OwnProcessGroup):
  // NVML's PIDs against this process and its group. Where none of them is
  // this process (a container: NVML gives the host's PIDs), or they cannot
  // be read, the count less one, since this worker holds a context on the
  // GPU while it measures.
  int OtherProcesses() {
    unsigned int count = static_cast<unsigned int>(pids_.size() / stride_);
    nvmlReturn_t rc = processes_(device_, &count, pids_.empty() ? nullptr : pids_.data());
    if (rc == kNvmlInsufficientSize) {
      pids_.assign((count + 8) * stride_, 0);  // room for a few more starting meanwhile
      count = static_cast<unsigned int>(pids_.size() / stride_);
      rc = processes_(device_, &count, pids_.data());
    }
    if (rc != kNvmlSuccess && rc != kNvmlInsufficientSize) return 0;
    const int fewer = count > 0 ? static_cast<int>(count) - 1 : 0;
    if (rc != kNvmlSuccess) return fewer;
    // The PID leads each entry, whatever the struct's version.
    std::set<pid_t> pids;
    for (unsigned int i = 0; i < count; ++i) {
      unsigned int pid = 0;
      std::memcpy(&pid, pids_.data() + i * stride_, sizeof(pid));
      // Zero or a repeat: a layout this code does not know.
      if (pid == 0 || !pids.insert(static_cast<pid_t>(pid)).second) return fewer;
    }
    const pid_t self = getpid();
    if (pids.count(self) == 0) return fewer;
    int others = 0;
    for (pid_t pid : pids) {
      if (pid == self) continue;
      // A process that is gone since NVML listed it, or one of another PID
      // namespace, reads as group 0: another's.
      if (own_group_ == 0 || ProcessGroupOf(pid) != own_group_) ++others;
    }
    return others;
  }

  void* const lib_;
  const pid_t own_group_ = OwnProcessGroup();
  // Room for nvmlProcessInfo entries: each stride_ bytes, the PID first.
  std::vector<unsigned char> pids_;
  size_t stride_ = 24;
  bool initialised_ = false;
  nvmlDevice_t device_ = nullptr;
  nvmlReturn_t (*init_)() = nullptr;
  nvmlReturn_t (*shutdown_)() = nullptr;
  nvmlReturn_t (*by_index_)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_pci_)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_uuid_)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*utilization_)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory_)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*clock_)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*power_)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*temperature_)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*throttle_)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*pcie_)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*processes_)(nvmlDevice_t, unsigned int*, void*) = nullptr;
};

// This process's CPU seconds (user + system) and RSS from /proc/self/stat.
bool ReadSelfStat(double* cpu_s, int64_t* rss_bytes) {
  ProcStat stat;
  if (!ReadProcStat("/proc/self/stat", &stat)) return false;
  *rss_bytes = stat.rss_pages * sysconf(_SC_PAGESIZE);
  *cpu_s = static_cast<double>(stat.cpu_ticks) / sysconf(_SC_CLK_TCK);
  return true;
}

// Busy seconds of the whole host (/proc/stat's first line: user, nice,
// system, irq, softirq, steal; not idle or iowait); false where it cannot
// be read.
bool ReadHostBusySeconds(double* host_busy_s) {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
            steal = 0;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      cpu != "cpu") {
    return false;
  }
  *host_busy_s = static_cast<double>(user + nice + system + irq + softirq + steal) /
                 sysconf(_SC_CLK_TCK);
  return true;
}

// CPU time and RSS of this process from /proc/self/stat.
class HostSource : public Source {
 public:
  // A first reading sets the baseline, so the first sample has a CPU figure.
  HostSource() {
    Sample ignored;
    Read(&ignored);
  }
  std::string name() const override { return "host"; }
  bool Read(Sample* s) override {
    double cpu_s = 0;
    if (!ReadSelfStat(&cpu_s, &s->host_rss_bytes)) return false;
    const int64_t now = NowMs();
    if (last_ms_ > 0 && now > last_ms_) {
      s->host_cpu_utilization_pct =
          static_cast<float>(100.0 * (cpu_s - last_cpu_s_) / ((now - last_ms_) / 1e3));
    }
    last_cpu_s_ = cpu_s;
    last_ms_ = now;
    return true;
  }

 private:
  double last_cpu_s_ = 0;
  int64_t last_ms_ = 0;
};

void Accumulate(Field* f, double v, int n) {
  f->mean += (v - f->mean) / n;
  f->max = n == 1 ? v : std::max(f->max, v);
}

}  // namespace

std::vector<std::string> ThrottleReasonNames(uint64_t mask) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {0x1, "gpu_idle"},           {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},        {0x10, "sync_boost"},         {0x20, "sw_thermal"},
      {0x40, "hw_thermal"},        {0x80, "hw_power_brake"},     {0x100, "display_clocks"}};
  std::vector<std::string> names;
  for (const auto& [bit, name] : kNames) {
    if (mask & bit) names.push_back(name);
  }
  return names;
}

bool IsThermalOrPowerThrottle(uint64_t mask) {
  return (mask & (kThrottleSwPowerCap | kThrottleHwSlowdown | kThrottleSwThermal |
                  kThrottleHwThermal | kThrottleHwPowerBrake)) != 0;
}

Summary Summarize(const Series& series, double samples_per_s, double window_ms) {
  Summary s;
  s.unavailable_reason = series.unavailable_reason;
  s.available = !series.samples.empty();
  s.sample_count = series.samples.size();
  uint64_t seen = 0;
  int n = 0;
  for (const Sample& x : series.samples) {
    ++n;
    Accumulate(&s.gpu_utilization_pct, x.gpu_utilization_pct, n);
    Accumulate(&s.memory_utilization_pct, x.memory_utilization_pct, n);
    Accumulate(&s.memory_used_bytes, x.memory_used_bytes, n);
    Accumulate(&s.sm_clock_mhz, x.sm_clock_mhz, n);
    Accumulate(&s.memory_clock_mhz, x.memory_clock_mhz, n);
    Accumulate(&s.power_w, x.power_w, n);
    Accumulate(&s.temperature_c, x.temperature_c, n);
    Accumulate(&s.pcie_rx_bytes_per_s, x.pcie_rx_bytes_per_s, n);
    Accumulate(&s.pcie_tx_bytes_per_s, x.pcie_tx_bytes_per_s, n);
    Accumulate(&s.host_cpu_utilization_pct, x.host_cpu_utilization_pct, n);
    seen |= x.throttle_reasons_mask;
    s.gpu_processes = std::max(s.gpu_processes, x.gpu_processes);
  }
  double joules = 0;
  for (size_t i = 1; i < series.samples.size(); ++i) {
    const Sample& a = series.samples[i - 1];
    const Sample& b = series.samples[i];
    joules += (a.power_w + b.power_w) / 2 * (b.offset_ms - a.offset_ms) / 1e3;
  }
  double mean_power_w = s.power_w.mean;  // one reading, or readings at one instant
  if (series.samples.size() > 1) {
    const double span_s =
        (series.samples.back().offset_ms - series.samples.front().offset_ms) / 1e3;
    if (span_s > 0) mean_power_w = joules / span_s;
  }
  if (mean_power_w > 0) {
    s.energy_j = mean_power_w * window_ms / 1e3;
    s.samples_per_joule = samples_per_s / mean_power_w;
  }
  s.throttled = IsThermalOrPowerThrottle(seen);
  s.throttle_reasons = ThrottleReasonNames(seen);
  return s;
}

std::unique_ptr<Source> OpenNvml(const std::string& device_id, int index, std::string* why) {
  return NvmlSource::Open(device_id, index, why);
}

std::unique_ptr<Source> OpenHost() { return std::make_unique<HostSource>(); }

Sampler::Sampler(std::unique_ptr<Source> source, int64_t interval_ms)
    : source_(std::move(source)), interval_ms_(std::max<int64_t>(1, interval_ms)) {}

Sampler::~Sampler() { Stop(); }

pid_t OwnProcessGroup() {
  const char* env = std::getenv(kJobProcessGroupEnv);
  return env != nullptr && std::strcmp(env, "1") == 0 ? getpgrp() : 0;
}

bool GroupCpuSeconds(pid_t pgid, std::map<pid_t, double>* cpu_s_by_pid) {
  cpu_s_by_pid->clear();
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return false;
  const double ticks_per_s = static_cast<double>(sysconf(_SC_CLK_TCK));
  while (const dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    ProcStat stat;
    if (!ReadProcStat(std::string("/proc/") + entry->d_name + "/stat", &stat)) continue;
    if (stat.pgrp == pgid) (*cpu_s_by_pid)[static_cast<pid_t>(pid)] = stat.cpu_ticks / ticks_per_s;
  }
  closedir(proc);
  return true;
}

OtherCpuLoad::OtherCpuLoad(pid_t own_group) : own_group_(own_group), start_ms_(NowMs()) {
  if (!ReadHostBusySeconds(&busy_s_) || !ReadOwn(&own_s_)) busy_s_ = -1;
}

bool OtherCpuLoad::ReadOwn(std::map<pid_t, double>* own_s) const {
  // /proc unlisted leaves this process alone as its own.
  if (own_group_ <= 0 || !GroupCpuSeconds(own_group_, own_s)) own_s->clear();
  double self_s = 0;
  int64_t rss = 0;
  if (!ReadSelfStat(&self_s, &rss)) return false;
  (*own_s)[getpid()] = self_s;
  return true;
}

bool OtherCpuLoad::Read(double* cores, double* job_cores) const {
  double busy = 0;
  std::map<pid_t, double> own;
  const int64_t now = NowMs();
  if (busy_s_ < 0 || now <= start_ms_ || !ReadHostBusySeconds(&busy) || !ReadOwn(&own)) {
    return false;
  }
  // A process of the group that started inside the window spent all its
  // CPU time in it; one that ended inside it is not listed now, so its
  // part of the window counts as elsewhere.
  double own_s = 0, self_s = 0;
  for (const auto& [pid, cpu_s] : own) {
    const auto before = own_s_.find(pid);
    const double in_window = cpu_s - (before == own_s_.end() ? 0 : before->second);
    own_s += in_window;
    if (pid == getpid()) self_s = in_window;
  }
  const double window_s = (now - start_ms_) / 1e3;
  // Jiffies are coarse: a short window can come out a little below 0.
  *cores = std::max(0.0, ((busy - busy_s_) - own_s) / window_s);
  if (job_cores != nullptr) *job_cores = std::max(0.0, (own_s - self_s) / window_s);
  return true;
}

void Sampler::Start() {
  samples_.reserve(4096);
  other_load_ = std::make_unique<OtherCpuLoad>();
  thread_ = std::thread([this] { Loop(); });
}

Series Sampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Series series;
  series.source = source_ ? source_->name() : "";
  series.interval_ms = interval_ms_;
  series.samples = std::move(samples_);
  samples_.clear();
  if (other_load_ && !other_load_->Read(&series.other_cpu_cores, &series.job_cpu_cores)) {
    series.other_cpu_cores = -1;
    series.job_cpu_cores = 0;
  }
  other_load_.reset();
  return series;
}

void Sampler::Loop() {
  const int64_t start = NowMs();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    Sample s;
    s.offset_ms = NowMs() - start;
    if (source_ && source_->Read(&s)) samples_.push_back(s);
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stop_; });
  }
}

}  // namespace gpubench::telemetry
