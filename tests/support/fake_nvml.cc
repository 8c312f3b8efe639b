// A stand-in for libnvidia-ml.so.1 on machines without an NVIDIA driver: one
// GPU with fixed readings and an H100 SXM's setup, so that the code reading
// NVML (the daemon's gauges, the runs' fingerprints) runs end to end in
// tests. Loaded through GPUBENCH_NVML_LIBRARY. Its power limit is
// $FAKE_NVML_POWER_LIMIT_MW when set (700000 otherwise). On GPU hosts the
// real library is read (bench/ and the GPU runs).
//
// With $FAKE_NVML_STATE set, the GPU's power limit and clock lock live in
// that file ("POWER_MW LOCKED_MHZ"), so that every process loading the
// library (the daemon that sets them, the worker that reads them) sees one
// GPU; each set call is appended to $FAKE_NVML_STATE.log ("power 420000",
// "lock 1410", "unlock"). $FAKE_NVML_DENY_SET makes the set calls fail as a
// caller without root's permission does; $FAKE_NVML_NO_LOCK makes clock
// locks fail as on a GPU that has none.
//
// Health: the uncorrected ECC count is 0 and rises by one a reading with
// $FAKE_NVML_ECC_RISING; a remap is pending with $FAKE_NVML_REMAP_PENDING;
// $FAKE_NVML_XID=N raises XID N once, to the first listener that waits.
#include <cstdio>
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

// The shared state: the power limit (mW) and the locked clock (MHz, 0 free).
struct FakeState {
  unsigned int power_mw = 700000;
  unsigned int locked_mhz = 0;
};
static FakeState ReadState() {
  FakeState s;
  if (const char* set = std::getenv("FAKE_NVML_POWER_LIMIT_MW")) s.power_mw = std::atoi(set);
  const char* path = std::getenv("FAKE_NVML_STATE");
  if (path == nullptr) return s;
  if (FILE* f = std::fopen(path, "r")) {
    if (std::fscanf(f, "%u %u", &s.power_mw, &s.locked_mhz) != 2) s = FakeState();
    std::fclose(f);
  }
  return s;
}
static int WriteState(const FakeState& s, const char* what, unsigned int value) {
  if (std::getenv("FAKE_NVML_DENY_SET") != nullptr) return 4;  // NVML_ERROR_NO_PERMISSION
  const char* path = std::getenv("FAKE_NVML_STATE");
  if (path == nullptr) return 3;  // NVML_ERROR_NOT_SUPPORTED
  if (FILE* f = std::fopen(path, "w")) {
    std::fprintf(f, "%u %u\n", s.power_mw, s.locked_mhz);
    std::fclose(f);
  }
  char log[4096];
  std::snprintf(log, sizeof(log), "%s.log", path);
  if (FILE* f = std::fopen(log, "a")) {
    std::fprintf(f, value > 0 ? "%s %u\n" : "%s\n", what, value);
    std::fclose(f);
  }
  return 0;
}

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
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, nvmlDevice_st** device) {
  if (std::strcmp(bus, "00000000:1B:00.0") != 0) return 6;
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
  const unsigned int locked = ReadState().locked_mhz;
  *mhz = type == 1 ? (locked > 0 ? locked : 1980) : 2619;  // SM, memory
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
  *milliwatts = ReadState().power_mw;
  return 0;
}
int nvmlDeviceGetPowerManagementLimit(nvmlDevice_st*, unsigned int* milliwatts) {
  *milliwatts = ReadState().power_mw;
  return 0;
}
int nvmlDeviceSetPowerManagementLimit(nvmlDevice_st*, unsigned int milliwatts) {
  FakeState s = ReadState();
  s.power_mw = milliwatts;
  return WriteState(s, "power", milliwatts);
}
int nvmlDeviceSetGpuLockedClocks(nvmlDevice_st*, unsigned int low, unsigned int high) {
  if (low != high || high > 1980) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  if (std::getenv("FAKE_NVML_NO_LOCK") != nullptr) return 3;  // NVML_ERROR_NOT_SUPPORTED
  FakeState s = ReadState();
  s.locked_mhz = high;
  return WriteState(s, "lock", high);
}
int nvmlDeviceResetGpuLockedClocks(nvmlDevice_st*) {
  FakeState s = ReadState();
  s.locked_mhz = 0;
  return WriteState(s, "unlock", 0);
}
int nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_st*, int type, unsigned int* mhz) {
  *mhz = type == 2 ? 2619 : 1755;  // memory, graphics
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

// Health.
int nvmlDeviceGetTotalEccErrors(nvmlDevice_st*, int type, int counter, unsigned long long* n) {
  if (type != 1 || counter != 0) return 2;  // uncorrected, volatile: all gpubench asks
  static unsigned long long readings = 0;
  *n = std::getenv("FAKE_NVML_ECC_RISING") != nullptr ? readings++ : 0;
  return 0;
}
int nvmlDeviceGetRemappedRows(nvmlDevice_st*, unsigned int* corrected, unsigned int* uncorrected,
                              unsigned int* pending, unsigned int* failed) {
  const bool remap = std::getenv("FAKE_NVML_REMAP_PENDING") != nullptr;
  *corrected = 0;
  *uncorrected = remap ? 1 : 0;
  *pending = remap ? 1 : 0;
  *failed = 0;
  return 0;
}
struct nvmlEventSet_st {
  bool raised = false;
};
struct EventData {
  nvmlDevice_st* device;
  unsigned long long type, data;
  unsigned int gpu_instance, compute_instance;
};
int nvmlEventSetCreate(nvmlEventSet_st** set) {
  *set = new nvmlEventSet_st;
  return 0;
}
int nvmlDeviceRegisterEvents(nvmlDevice_st*, unsigned long long types, nvmlEventSet_st*) {
  return types == 0x8 ? 0 : 3;  // XIDs only
}
int nvmlEventSetWait_v2(nvmlEventSet_st* set, EventData* event, unsigned int) {
  const char* xid = std::getenv("FAKE_NVML_XID");
  if (xid == nullptr || set->raised) return 10;  // NVML_ERROR_TIMEOUT
  set->raised = true;
  *event = EventData{&g_gpu, 0x8, std::strtoull(xid, nullptr, 10), 0xFFFFFFFF, 0xFFFFFFFF};
  return 0;
}
int nvmlEventSetFree(nvmlEventSet_st* set) {
  delete set;
  return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_st*, unsigned int* count, void*) {
  *count = 0;
  return 0;
}

}  // extern "C"
