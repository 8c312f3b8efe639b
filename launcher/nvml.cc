#include "launcher/nvml.h"

#include <dlfcn.h>

#include <cstdlib>
#include <utility>

namespace gpubench::nvml {
namespace {

template <typename F>
void Symbol(void* handle, const char* name, F* out) {
  if (*out == nullptr) *out = reinterpret_cast<F>(dlsym(handle, name));
}

}  // namespace

std::shared_ptr<Library> Library::Open(std::string* why) {
  const char* env = std::getenv("GPUBENCH_NVML_LIBRARY");
  const std::string name = env && *env ? env : "libnvidia-ml.so.1";
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    *why = "cannot load " + name + " (" + (error ? error : "no NVIDIA driver?") + ")";
    return nullptr;
  }
  std::shared_ptr<Library> library(new Library(handle));
  library->Bind();
  const Api& api = library->api_;
  if (api.init == nullptr || api.shutdown == nullptr || api.by_index == nullptr) {
    *why = name + " lacks nvmlInit_v2, nvmlShutdown or nvmlDeviceGetHandleByIndex_v2";
    return nullptr;
  }
  if (api.init() != kSuccess) {
    *why = "nvmlInit failed";
    return nullptr;
  }
  library->initialised_ = true;
  return library;
}

Library::~Library() {
  if (initialised_) api_.shutdown();
  dlclose(handle_);
}

void Library::Bind() {
  void* h = handle_;
  Symbol(h, "nvmlInit_v2", &api_.init);
  Symbol(h, "nvmlShutdown", &api_.shutdown);
  Symbol(h, "nvmlDeviceGetHandleByIndex_v2", &api_.by_index);
  Symbol(h, "nvmlDeviceGetHandleByPciBusId_v2", &api_.by_pci);
  Symbol(h, "nvmlDeviceGetHandleByUUID", &api_.by_uuid);
  Symbol(h, "nvmlDeviceGetUtilizationRates", &api_.utilization);
  Symbol(h, "nvmlDeviceGetMemoryInfo", &api_.memory);
  Symbol(h, "nvmlDeviceGetClockInfo", &api_.clock);
  Symbol(h, "nvmlDeviceGetPowerUsage", &api_.power);
  Symbol(h, "nvmlDeviceGetTemperature", &api_.temperature);
  // Renamed "ClocksEventReasons" in newer drivers; the old name stays.
  Symbol(h, "nvmlDeviceGetCurrentClocksEventReasons", &api_.throttle);
  Symbol(h, "nvmlDeviceGetCurrentClocksThrottleReasons", &api_.throttle);
  Symbol(h, "nvmlDeviceGetPcieThroughput", &api_.pcie_throughput);
  // The _v2 and _v3 calls fill nvmlProcessInfo_v2_t (PID, memory, GPU and
  // compute instance), the first one nvmlProcessInfo_v1_t.
  const std::pair<const char*, size_t> kProcessCalls[] = {
      {"nvmlDeviceGetComputeRunningProcesses_v3", 24},
      {"nvmlDeviceGetComputeRunningProcesses_v2", 24},
      {"nvmlDeviceGetComputeRunningProcesses", 16}};
  for (const auto& [name, stride] : kProcessCalls) {
    if (api_.processes != nullptr) break;
    Symbol(h, name, &api_.processes);
    api_.process_stride = stride;
  }
  Symbol(h, "nvmlSystemGetDriverVersion", &api_.driver_version);
  Symbol(h, "nvmlSystemGetCudaDriverVersion_v2", &api_.cuda_driver_version);
  Symbol(h, "nvmlSystemGetCudaDriverVersion", &api_.cuda_driver_version);
  Symbol(h, "nvmlDeviceGetName", &api_.name);
  Symbol(h, "nvmlDeviceGetVbiosVersion", &api_.vbios_version);
  Symbol(h, "nvmlDeviceGetSerial", &api_.serial);
  Symbol(h, "nvmlDeviceGetUUID", &api_.uuid);
  Symbol(h, "nvmlDeviceGetBoardPartNumber", &api_.board_part_number);
  Symbol(h, "nvmlDeviceGetEccMode", &api_.ecc_mode);
  Symbol(h, "nvmlDeviceGetMigMode", &api_.mig_mode);
  Symbol(h, "nvmlDeviceGetPersistenceMode", &api_.persistence_mode);
  Symbol(h, "nvmlDeviceGetPowerManagementLimit", &api_.power_limit);
  Symbol(h, "nvmlDeviceGetPowerManagementDefaultLimit", &api_.default_power_limit);
  Symbol(h, "nvmlDeviceGetEnforcedPowerLimit", &api_.enforced_power_limit);
  Symbol(h, "nvmlDeviceGetPowerManagementLimitConstraints", &api_.power_limit_constraints);
  Symbol(h, "nvmlDeviceGetApplicationsClock", &api_.applications_clock);
  Symbol(h, "nvmlDeviceGetMaxClockInfo", &api_.max_clock);
  Symbol(h, "nvmlDeviceGetCurrPcieLinkGeneration", &api_.pcie_generation);
  Symbol(h, "nvmlDeviceGetCurrPcieLinkWidth", &api_.pcie_width);
  Symbol(h, "nvmlDeviceGetMaxPcieLinkGeneration", &api_.pcie_max_generation);
  Symbol(h, "nvmlDeviceGetMaxPcieLinkWidth", &api_.pcie_max_width);
  Symbol(h, "nvmlDeviceGetNvLinkState", &api_.nvlink_state);
  Symbol(h, "nvmlDeviceGetDefaultApplicationsClock", &api_.default_applications_clock);
  Symbol(h, "nvmlDeviceGetTotalEccErrors", &api_.total_ecc_errors);
  Symbol(h, "nvmlDeviceGetRemappedRows", &api_.remapped_rows);
  Symbol(h, "nvmlEventSetCreate", &api_.event_set_create);
  Symbol(h, "nvmlDeviceRegisterEvents", &api_.register_events);
  Symbol(h, "nvmlEventSetWait_v2", &api_.event_set_wait);
  Symbol(h, "nvmlEventSetFree", &api_.event_set_free);
  Symbol(h, "nvmlDeviceSetPowerManagementLimit", &api_.set_power_limit);
  Symbol(h, "nvmlDeviceSetGpuLockedClocks", &api_.set_locked_clocks);
  Symbol(h, "nvmlDeviceResetGpuLockedClocks", &api_.reset_locked_clocks);
}

bool Library::Find(const std::string& device_id, int index, Device* out,
                   std::string* why) const {
  // A GPU named by UUID or bus id is that one or none: NVML's index is not
  // CUDA's where CUDA_VISIBLE_DEVICES reorders them.
  Return rc = 1;
  if (device_id.rfind("GPU-", 0) == 0 && api_.by_uuid) {
    rc = api_.by_uuid(device_id.c_str(), out);
  } else if (!device_id.empty() && api_.by_pci) {
    rc = api_.by_pci(device_id.c_str(), out);
  } else {
    rc = api_.by_index(static_cast<unsigned int>(index), out);
  }
  if (rc != kSuccess) {
    *why = "NVML does not know GPU " + (device_id.empty() ? std::to_string(index) : device_id);
    return false;
  }
  return true;
}

}  // namespace gpubench::nvml
