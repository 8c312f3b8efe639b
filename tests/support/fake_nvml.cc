// A stand-in for libnvidia-ml.so.1 on machines without an NVIDIA driver: one
// GPU with fixed readings, so that the code reading NVML (the daemon's
// gauges) runs end to end in tests. Loaded through GPUBENCH_NVML_LIBRARY.
// On GPU hosts the real library is read (bench/ and the GPU runs).
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
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_st*, unsigned int* count, void*) {
  *count = 0;
  return 0;
}

}  // extern "C"
