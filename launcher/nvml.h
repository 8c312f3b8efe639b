// NVML, NVIDIA's management library, loaded at run time (libnvidia-ml.so.1,
// or $GPUBENCH_NVML_LIBRARY), so that the binaries start on hosts without a
// driver and build without nvml.h. The slice of its C ABI gpubench calls:
// the telemetry's readings and the fingerprint's setup. Torch-free and
// proto-free.
#ifndef GPUBENCH_LAUNCHER_NVML_H_
#define GPUBENCH_LAUNCHER_NVML_H_

#include <memory>
#include <string>

namespace gpubench::nvml {

using Return = int;
inline constexpr Return kSuccess = 0;
inline constexpr Return kNotSupported = 3;
inline constexpr Return kNoPermission = 4;
inline constexpr Return kInsufficientSize = 7;

struct DeviceStruct;
using Device = DeviceStruct*;
struct EventSetStruct;
using EventSet = EventSetStruct*;

struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// Clock types (nvmlClockType_t) and other enumerations used here.
inline constexpr int kClockGraphics = 0;
inline constexpr int kClockSm = 1;
inline constexpr int kClockMem = 2;
inline constexpr int kTemperatureGpu = 0;
inline constexpr int kPcieTx = 0;
inline constexpr int kPcieRx = 1;
inline constexpr int kMaxNvLinks = 18;  // NVML_NVLINK_MAX_LINKS
inline constexpr int kEccUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
inline constexpr int kVolatileEcc = 0;     // NVML_VOLATILE_ECC: since the driver loaded
inline constexpr unsigned long long kEventXid = 0x8;  // nvmlEventTypeXidCriticalError
inline constexpr Return kTimeout = 10;                // NVML_ERROR_TIMEOUT

// nvmlEventData_t as nvmlEventSetWait_v2 fills it.
struct EventData {
  Device device;
  unsigned long long type;
  unsigned long long data;  // the XID, for kEventXid
  unsigned int gpu_instance;
  unsigned int compute_instance;
};

// NVML's functions, bound by name; null where this driver lacks one. The
// Get calls return kSuccess or an NVML error (3: not supported).
struct Api {
  Return (*init)() = nullptr;
  Return (*shutdown)() = nullptr;
  Return (*by_index)(unsigned int, Device*) = nullptr;
  Return (*by_pci)(const char*, Device*) = nullptr;
  Return (*by_uuid)(const char*, Device*) = nullptr;
  // Readings.
  Return (*utilization)(Device, Utilization*) = nullptr;
  Return (*memory)(Device, Memory*) = nullptr;
  Return (*clock)(Device, int, unsigned int*) = nullptr;
  Return (*power)(Device, unsigned int*) = nullptr;  // mW
  Return (*temperature)(Device, int, unsigned int*) = nullptr;
  Return (*throttle)(Device, unsigned long long*) = nullptr;
  Return (*pcie_throughput)(Device, int, unsigned int*) = nullptr;  // KB/s
  Return (*processes)(Device, unsigned int*, void*) = nullptr;
  size_t process_stride = 24;  // bytes of each entry processes fills
  // Setup.
  Return (*driver_version)(char*, unsigned int) = nullptr;
  Return (*cuda_driver_version)(int*) = nullptr;  // 13000 for 13.0
  Return (*name)(Device, char*, unsigned int) = nullptr;
  Return (*vbios_version)(Device, char*, unsigned int) = nullptr;
  Return (*serial)(Device, char*, unsigned int) = nullptr;
  Return (*uuid)(Device, char*, unsigned int) = nullptr;
  Return (*board_part_number)(Device, char*, unsigned int) = nullptr;
  Return (*ecc_mode)(Device, int*, int*) = nullptr;  // current, pending
  Return (*mig_mode)(Device, unsigned int*, unsigned int*) = nullptr;
  Return (*persistence_mode)(Device, int*) = nullptr;
  Return (*power_limit)(Device, unsigned int*) = nullptr;  // mW, each
  Return (*default_power_limit)(Device, unsigned int*) = nullptr;
  Return (*enforced_power_limit)(Device, unsigned int*) = nullptr;
  Return (*power_limit_constraints)(Device, unsigned int*, unsigned int*) = nullptr;
  Return (*applications_clock)(Device, int, unsigned int*) = nullptr;  // MHz
  Return (*max_clock)(Device, int, unsigned int*) = nullptr;
  Return (*pcie_generation)(Device, unsigned int*) = nullptr;
  Return (*pcie_width)(Device, unsigned int*) = nullptr;
  Return (*pcie_max_generation)(Device, unsigned int*) = nullptr;
  Return (*pcie_max_width)(Device, unsigned int*) = nullptr;
  Return (*nvlink_state)(Device, unsigned int, int*) = nullptr;  // link, active
  Return (*default_applications_clock)(Device, int, unsigned int*) = nullptr;  // MHz
  // Health, read before and after a run: ECC counts (error type, counter
  // type), remapped rows (corrected, uncorrected, pending, failed), XIDs.
  Return (*total_ecc_errors)(Device, int, int, unsigned long long*) = nullptr;
  Return (*remapped_rows)(Device, unsigned int*, unsigned int*, unsigned int*,
                          unsigned int*) = nullptr;
  Return (*event_set_create)(EventSet*) = nullptr;
  Return (*register_events)(Device, unsigned long long, EventSet) = nullptr;
  Return (*event_set_wait)(EventSet, EventData*, unsigned int) = nullptr;  // timeout ms
  Return (*event_set_free)(EventSet) = nullptr;
  // Control (root, or the driver's permission), used only where the
  // operator allowed clock control.
  Return (*set_power_limit)(Device, unsigned int) = nullptr;  // mW
  Return (*set_locked_clocks)(Device, unsigned int, unsigned int) = nullptr;  // min, max MHz
  Return (*reset_locked_clocks)(Device) = nullptr;
};

// The library, loaded and initialised: shut down and unloaded when the last
// holder lets go. NVML counts its initialisations, so several may be open.
class Library {
 public:
  // nullptr with *why set where the library will not load or initialise.
  static std::shared_ptr<Library> Open(std::string* why);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const Api& api() const { return api_; }

  // The GPU with this UUID ("GPU-8c1f...") or PCI bus id ("0000:1b:00.0"),
  // or where device_id is empty the one of NVML's index; false with *why
  // set where none is.
  bool Find(const std::string& device_id, int index, Device* out, std::string* why) const;

 private:
  explicit Library(void* handle) : handle_(handle) {}
  void Bind();

  void* const handle_;
  bool initialised_ = false;
  Api api_;
};

}  // namespace gpubench::nvml

#endif  // GPUBENCH_LAUNCHER_NVML_H_
