// From profiler events to what users read: the top operators by self time,
// a category breakdown, and a Chrome trace for builds whose profiler cannot
// write one (LibTorch without Kineto). Torch-free; thread-compatible.
#ifndef GPUBENCH_WORKER_PROFILE_TABLE_H_
#define GPUBENCH_WORKER_PROFILE_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace gpubench::profile {

// One profiler event: a CPU operator (nested on its thread) or a device
// activity (a kernel or a memcpy; never nested).
struct Event {
  std::string name;
  bool device = false;  // a GPU activity
  uint64_t thread = 0;  // CPU events: the thread that ran it
  double start_us = 0;
  double duration_us = 0;
  // A device activity and the CUDA runtime call that launched it ("cuda..."
  // or "cu..." on the CPU) share this id (CUPTI's correlation id); 0: none.
  uint64_t correlation = 0;
};

struct OperatorRow {
  std::string name;
  int64_t count = 0;
  double self_time_us = 0;
  double share = 0;  // of the total self time, 0..1
  std::string category;
};

struct CategoryRow {
  std::string category;
  double self_time_us = 0;
  double share = 0;
};

// Names of device time that no aten:: operator launched.
inline constexpr char kGraphReplay[] = "(cuda graph replay)";
inline constexpr char kNoOperator[] = "(no operator)";

struct Table {
  bool device_times = false;  // rows are device activities, else CPU operators
  std::vector<OperatorRow> top;  // by self time, descending
  // With device times: device time by the operator that launched it (the
  // innermost aten:: operator open on the launching thread at the runtime
  // call; kGraphReplay for a CUDA graph's replay; else the innermost event
  // open, such as a collective's nccl:all_reduce; kNoOperator where none
  // was or its launch is not among events), count its calls that launched
  // any; the top_n, descending.
  std::vector<OperatorRow> launching;
  std::vector<CategoryRow> categories;  // every category seen, descending
};

// The category of an operator or kernel name: convolution, matmul, attention,
// normalization, elementwise, pooling, rnn, memcpy_h2d, memcpy_d2h,
// memcpy_d2d, optimizer or other.
std::string Categorize(const std::string& name);

// Builds the table: device activities when there are any (their time is
// device time), else CPU operators with self time = duration less the
// durations of the operators nested directly inside them on the same
// thread. Keeps the top_n rows; shares are of the whole window. A device
// activity takes the category of the operator that launched it (the
// innermost aten:: operator open on the launching thread at its runtime
// call), so that CPU and GPU profiles of one model line up category by
// category; copies, and kernels no operator launched (a CUDA graph's
// replay), go by their own names.

Table BuildTable(const std::vector<Event>& events, int top_n);

// A Chrome trace-event JSON ({"traceEvents": [...]}, complete "X" events)
// of the events, loadable by Perfetto and chrome://tracing.
std::string ChromeTrace(const std::vector<Event>& events);

// A distributed run's trace with the rank it is of, as PyTorch's profiler
// writes it and Holistic Trace Analysis reads a trace folder's ranks by:
// "distributedInfo": {"backend", "rank", "world_size"} first in the top
// object. A trace that already has one, or is no JSON object, is returned
// as it is.
std::string WithDistributedInfo(std::string trace, const std::string& backend, int rank,
                                int world_size);

}  // namespace gpubench::profile

#endif  // GPUBENCH_WORKER_PROFILE_TABLE_H_
