// A stand-in for libnvidia-ml.so.1 on machines without an NVIDIA driver: one
// GPU with fixed readings and an H100 SXM's setup, so that the code reading
// NVML (the daemon's gauges, the runs' fingerprints) runs end to end in
// tests. Loaded through GPUBENCH_NVML_LIBRARY. Its power limit is
// $FAKE_NVML_POWER_LIMIT_MW when set (700000 otherwise). On GPU hosts the
// real library is read (bench/ and the GPU runs).
#include <cstdlib>
#include <cstring>

extern "C" {

struct nvmlDevice_st {
  int index;
};
static nvmlDevice_st g_gpu{0};
struct Utilization {
  unsigned int gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_st** device) {
  if (index != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &g_gpu;
  return 0;
}
int nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_st** device) {
  if (std::strcmp(uuid, "GPU-fake-0") != 0) return 6;  // NVML_ERROR_NOT_FOUND
  *device = &g_gpu;
  return 0;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_st*, Utilization* u) {
  u->gpu = 87;
  u->memory = 41;
  return 0;
}
int nvmlDeviceGetMemoryInfo(nvmlDevice_st*, Memory* m) {
  m->total = 80ull << 30;
  m->used = 3ull << 30;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetClockInfo(nvmlDevice_st*, int type, unsigned int* mhz) {
  *mhz = type == 1 ? 1980 : 2619;  // SM, memory
  return 0;
}
int nvmlDeviceGetPowerUsage(nvmlDevice_st*, unsigned int* milliwatts) {
  *milliwatts = 412500;
  return 0;
}
int nvmlDeviceGetTemperature(nvmlDevice_st*, int, unsigned int* celsius) {
  *celsius = 54;
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_st*, unsigned long long* reasons) {
  *reasons = 0x4;  // sw_power_cap
  return 0;
}
int nvmlDeviceGetPcieThroughput(nvmlDevice_st*, int, unsigned int* kb_per_s) {
  *kb_per_s = 1000;
  return 0;
}
// The setup.
static int Text(const char* value, char* out, unsigned int length) {
  if (std::strlen(value) + 1 > length) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::strcpy(out, value);
  return 0;
}
int nvmlSystemGetDriverVersion(char* out, unsigned int length) {
  return Text("580.159.04", out, length);
}
int nvmlSystemGetCudaDriverVersion_v2(int* version) {
  *version = 13000;
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_st*, char* out, unsigned int length) {
  return Text("NVIDIA H100 80GB HBM3", out, length);
}
int nvmlDeviceGetUUID(nvmlDevice_st*, char* out, unsigned int length) {
  return Text("GPU-fake-0", out, length);
}
int nvmlDeviceGetSerial(nvmlDevice_st*, char* out, unsigned int length) {
  return Text("1650123456789", out, length);
}
int nvmlDeviceGetVbiosVersion(nvmlDevice_st*, char* out, unsigned int length) {
  return Text("96.00.99.00.01", out, length);
}
int nvmlDeviceGetBoardPartNumber(nvmlDevice_st*, char*, unsigned int) {
  return 3;  // NVML_ERROR_NOT_SUPPORTED: left out of the fingerprint
}
int nvmlDeviceGetEccMode(nvmlDevice_st*, int* current, int* pending) {
  *current = *pending = 1;
  return 0;
}
int nvmlDeviceGetMigMode(nvmlDevice_st*, unsigned int* current, unsigned int* pending) {
  *current = *pending = 0;
  return 0;
}
int nvmlDeviceGetPersistenceMode(nvmlDevice_st*, int* mode) {
  *mode = 1;
  return 0;
}
int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_st*, unsigned int* milliwatts) {
  const char* set = std::getenv("FAKE_NVML_POWER_LIMIT_MW");
  *milliwatts = set != nullptr ? static_cast<unsigned int>(std::atoi(set)) : 700000;
  return 0;
}
int nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_st*, unsigned int* milliwatts) {
  *milliwatts = 700000;
  return 0;
}
int nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_st*, unsigned int* low,
                                                 unsigned int* high) {
  *low = 200000;
  *high = 700000;
  return 0;
}
int nvmlDeviceGetApplicationsClock(nvmlDevice_st*, int type, unsigned int* mhz) {
  *mhz = type == 2 ? 2619 : 1980;  // memory, graphics
  return 0;
}
int nvmlDeviceGetMaxClockInfo(nvmlDevice_st*, int type, unsigned int* mhz) {
  *mhz = type == 2 ? 2619 : 1980;
  return 0;
}
int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_st*, unsigned int* v) {
  *v = 5;
  return 0;
}
int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_st*, unsigned int* v) {
  *v = 16;
  return 0;
}
int nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_st*, unsigned int* v) {
  *v = 5;
  return 0;
}
int nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_st*, unsigned int* v) {
  *v = 16;
  return 0;
}
// 18 links, the last two down.
int nvmlDeviceGetNvLinkState(nvmlDevice_st*, unsigned int link, int* active) {
  if (link >= 18) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *active = link < 16 ? 1 : 0;
  return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_st*, unsigned int* count, void*) {
  *count = 0;
  return 0;
}

}  // extern "C"
