#include "launcher/telemetry.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ios>
#include <iterator>
#include <set>
#include <sstream>
#include <utility>

#include "launcher/nvml.h"

namespace gpubench::telemetry {
namespace {

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
  // A process that ends between the open and the read makes read(2) fail
  // with ESRCH, which libstdc++'s streambuf throws (an istreambuf_iterator
  // does not catch it as the stream's own reads do).
  std::string stat;
  try {
    stat.assign(std::istreambuf_iterator<char>(in), {});
  } catch (const std::ios_base::failure&) {
    return false;
  }
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
    std::shared_ptr<nvml::Library> library = nvml::Library::Open(why);
    if (library == nullptr) {
      *why = "telemetry unavailable: " + *why;
      return nullptr;
    }
    const nvml::Api& api = library->api();
    const std::pair<bool, const char*> kNeeded[] = {
        {api.utilization != nullptr, "nvmlDeviceGetUtilizationRates"},
        {api.memory != nullptr, "nvmlDeviceGetMemoryInfo"},
        {api.clock != nullptr, "nvmlDeviceGetClockInfo"},
        {api.power != nullptr, "nvmlDeviceGetPowerUsage"},
        {api.temperature != nullptr, "nvmlDeviceGetTemperature"}};
    for (const auto& [bound, name] : kNeeded) {
      if (!bound) {
        *why = std::string("telemetry unavailable: NVML lacks ") + name;
        return nullptr;
      }
    }
    nvml::Device device = nullptr;
    if (!library->Find(device_id, index, &device, why)) {
      *why = "telemetry unavailable: " + *why;
      return nullptr;
    }
    return std::unique_ptr<Source>(new NvmlSource(std::move(library), device));
  }

  std::string name() const override { return "nvml"; }

  bool Read(Sample* s) override {
    nvml::Utilization util{};
    if (api_.utilization(device_, &util) == nvml::kSuccess) {
      s->gpu_utilization_pct = util.gpu;
      s->memory_utilization_pct = util.memory;
    }
    nvml::Memory memory{};
    if (api_.memory(device_, &memory) == nvml::kSuccess) s->memory_used_bytes = memory.used;
    unsigned int v = 0;
    if (api_.clock(device_, nvml::kClockSm, &v) == nvml::kSuccess) s->sm_clock_mhz = v;
    if (api_.clock(device_, nvml::kClockMem, &v) == nvml::kSuccess) s->memory_clock_mhz = v;
    if (api_.power(device_, &v) == nvml::kSuccess) s->power_w = v / 1000.0f;  // mW
    if (api_.temperature(device_, nvml::kTemperatureGpu, &v) == nvml::kSuccess) {
      s->temperature_c = v;
    }
    unsigned long long reasons = 0;
    if (api_.throttle && api_.throttle(device_, &reasons) == nvml::kSuccess) {
      s->throttle_reasons_mask = reasons;
    }
    if (api_.pcie_throughput &&
        api_.pcie_throughput(device_, nvml::kPcieRx, &v) == nvml::kSuccess) {
      s->pcie_rx_bytes_per_s = v * 1024.0;  // KB/s
    }
    if (api_.pcie_throughput &&
        api_.pcie_throughput(device_, nvml::kPcieTx, &v) == nvml::kSuccess) {
      s->pcie_tx_bytes_per_s = v * 1024.0;
    }
    if (api_.processes) s->gpu_processes = OtherProcesses();
    return true;
  }

  Health ReadHealth() override {
    Health h;
    unsigned long long ecc = 0;
    if (api_.total_ecc_errors &&
        api_.total_ecc_errors(device_, nvml::kEccUncorrected, nvml::kVolatileEcc, &ecc) ==
            nvml::kSuccess) {
      h.ecc_known = true;
      h.ecc_uncorrected = ecc;
    }
    unsigned int corrected = 0, uncorrected = 0, pending = 0, failed = 0;
    if (api_.remapped_rows &&
        api_.remapped_rows(device_, &corrected, &uncorrected, &pending, &failed) ==
            nvml::kSuccess) {
      h.rows_known = true;
      h.rows_uncorrectable = uncorrected;
      h.remap_pending = pending != 0;
      h.remap_failed = failed != 0;
    }
    return h;
  }

  bool WatchesXids() const override { return events_ != nullptr; }

  void TakeXids(std::vector<uint64_t>* xids) override {
    if (events_ == nullptr) return;
    nvml::EventData event{};
    // At most a few hundred a reading: a storm of them is told by its count.
    for (int i = 0; i < 256 && api_.event_set_wait(events_, &event, 0) == nvml::kSuccess; ++i) {
      if ((event.type & nvml::kEventXid) != 0) xids->push_back(event.data);
    }
  }

  ~NvmlSource() override {
    if (events_ != nullptr) api_.event_set_free(events_);
  }

 private:
  NvmlSource(std::shared_ptr<nvml::Library> library, nvml::Device device)
      : library_(std::move(library)),
        api_(library_->api()),
        device_(device),
        pids_(16 * api_.process_stride, 0) {
    // XIDs of this GPU, where the driver lets this process listen.
    if (!api_.event_set_create || !api_.register_events || !api_.event_set_wait ||
        !api_.event_set_free) {
      return;
    }
    if (api_.event_set_create(&events_) != nvml::kSuccess) {
      events_ = nullptr;
    } else if (api_.register_events(device_, nvml::kEventXid, events_) != nvml::kSuccess) {
      api_.event_set_free(events_);
      events_ = nullptr;
    }
  }

  // Compute processes on the GPU besides the job's own (OwnProcessGroup):
  // NVML's PIDs against this process and its group. Where none of them is
  // this process (a container: NVML gives the host's PIDs), or they cannot
  // be read, the count less one, since this worker holds a context on the
  // GPU while it measures.
  int OtherProcesses() {
    const size_t stride = api_.process_stride;
    unsigned int count = static_cast<unsigned int>(pids_.size() / stride);
    nvml::Return rc = api_.processes(device_, &count, pids_.empty() ? nullptr : pids_.data());
    if (rc == nvml::kInsufficientSize) {
      pids_.assign((count + 8) * stride, 0);  // room for a few more starting meanwhile
      count = static_cast<unsigned int>(pids_.size() / stride);
      rc = api_.processes(device_, &count, pids_.data());
    }
    if (rc != nvml::kSuccess && rc != nvml::kInsufficientSize) return 0;
    const int fewer = count > 0 ? static_cast<int>(count) - 1 : 0;
    if (rc != nvml::kSuccess) return fewer;
    // The PID leads each entry, whatever the struct's version.
    std::set<pid_t> pids;
    for (unsigned int i = 0; i < count; ++i) {
      unsigned int pid = 0;
      std::memcpy(&pid, pids_.data() + i * stride, sizeof(pid));
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

  const std::shared_ptr<nvml::Library> library_;
  const nvml::Api& api_;
  const nvml::Device device_;
  const pid_t own_group_ = OwnProcessGroup();
  // Room for NVML's process entries: each api_.process_stride bytes, the
  // PID first.
  std::vector<unsigned char> pids_;
  nvml::EventSet events_ = nullptr;  // XIDs, where NVML lets us listen
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
  if (source_) health_before_ = source_->ReadHealth();
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
  if (source_) {
    source_->TakeXids(&xids_);
    series.health_before = health_before_;
    series.health_after = source_->ReadHealth();
    series.xids_watched = source_->WatchesXids();
    series.xids = std::move(xids_);
  }
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
    if (source_) source_->TakeXids(&xids_);
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stop_; });
  }
}

}  // namespace gpubench::telemetry
