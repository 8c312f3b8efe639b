// A run's environment fingerprint: what its figures depend on besides its
// spec. The GPU's setup from NVML (driver, firmware, modes, power limits,
// clocks, links), the NCCL this process loaded, and the host's CPU policy
// (kernel, frequency governor, the cgroup's CPU quota). A field is empty
// where the host cannot tell: never guessed. Torch-free and proto-free;
// the engine adds LibTorch's versions and convert.cc maps it to
// gpubench.v1.Fingerprint.
#ifndef GPUBENCH_LAUNCHER_FINGERPRINT_H_
#define GPUBENCH_LAUNCHER_FINGERPRINT_H_

#include <optional>
#include <string>

namespace gpubench::fingerprint {

struct Fingerprint {
  // Software.
  std::optional<std::string> driver_version;       // "580.159.04"
  std::optional<std::string> cuda_driver_version;  // the driver's CUDA, "13.0"
  std::optional<std::string> cuda_runtime_version;  // LibTorch's, "13.0"
  std::optional<std::string> cudnn_version;
  std::optional<std::string> nccl_version;          // "2.27.5"
  std::optional<std::string> torch_version;
  std::optional<std::string> blas;                  // the CPU's BLAS
  // The GPU.
  std::optional<std::string> gpu_name, gpu_uuid, gpu_serial, board_part_number;
  std::optional<std::string> vbios_version;
  std::optional<bool> ecc_enabled, mig_enabled, persistence_mode;
  std::optional<double> power_limit_w;          // the enforced limit
  std::optional<double> power_limit_default_w;  // the board's default
  std::optional<double> power_limit_min_w, power_limit_max_w;  // what may be set
  std::optional<int> applications_graphics_clock_mhz, applications_memory_clock_mhz;
  std::optional<int> max_sm_clock_mhz, max_memory_clock_mhz;
  std::optional<int> pcie_generation, pcie_width, pcie_max_generation, pcie_max_width;
  std::optional<int> nvlink_active, nvlink_links;  // links up, links the GPU has
  // The host.
  std::optional<std::string> kernel;        // uname's release
  std::optional<std::string> cpu_governor;  // "performance", or "performance (12), powersave (4)"
  // The CPU quota of this process's cgroup (the least over its
  // ancestors), in cores; 0 when unlimited.
  std::optional<double> cpu_quota_cores;
  // A CPU run's LibTorch intra-op threads (the engine's, as the run starts).
  std::optional<int> cpu_threads;
};

// The GPU's setup through NVML (the GPU of this UUID or PCI bus id, else of
// NVML's index), and the driver's versions. Where NVML will not load or
// does not know the GPU, nothing of it is filled and *why says so.
void ReadGpu(const std::string& device_id, int index, Fingerprint* out, std::string* why);

// The host's: the kernel, every CPU's frequency governor, the cgroup's CPU
// quota, and the version of the NCCL loaded into this process. root stands
// for / (a test's tree); "" reads the host's own /proc and /sys.
void ReadHost(const std::string& root, Fingerprint* out);

// The CPU quota in cores (0: unlimited) of the process whose
// /proc/PID/cgroup is cgroup_file, under the cgroup tree mounted at
// cgroup_root: the least of quota / period over its cgroup and ancestors,
// from cpu.max (v2) or, where only v1's cpu controller is mounted, from
// cpu.cfs_quota_us and cpu.cfs_period_us. Empty where neither can be read.
std::optional<double> CpuQuotaCores(const std::string& cgroup_file,
                                    const std::string& cgroup_root);

}  // namespace gpubench::fingerprint

#endif  // GPUBENCH_LAUNCHER_FINGERPRINT_H_
