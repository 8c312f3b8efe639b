// Where a profiled window's device time went, by Holistic Trace Analysis'
// rules (HTA 0.5.0, whose figures tests/report/hta_agreement.py holds these
// to): its reading of a trace (with two ProfilerSteps or more, the work
// launched in the last step left out), its temporal breakdown (the span from
// the first device event to the last: idle where no stream is busy, compute
// where a compute kernel runs), its idle split per stream (a gap is the
// host's when the next launch began after the previous work ended, else
// another kernel's when under 30 µs, else other) and its launch delays.
// Times are the file's, not rounded: HTA by default rounds each start up and
// each end down to whole µs, which takes up to 2 µs from every event (a
// CUDA-graph decode of 1-4 µs kernels: 80% compute read as 52%) and can make
// a duration negative (HTA 0.5.0 then stops on an assertion); the agreement
// test runs HTA with HTA_DISABLE_NS_ROUNDING=1, its switch for that.
// Beyond HTA: the non-compute time split into communication, memory and
// other, communication's overlap with compute, and the top kernels.
#ifndef GPUBENCH_REPORT_TRACE_BREAKDOWN_H_
#define GPUBENCH_REPORT_TRACE_BREAKDOWN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "report/trace_events.h"

namespace gpubench::report {

// HTA 0.5.0's get_kernel_type: "communication", "memory", "computation" or
// "other".
std::string KernelType(const std::string& name);

struct IdleSplit {
  int64_t stream = -1;
  double host_wait_us = 0, kernel_wait_us = 0, other_us = 0;
};

struct KernelRow {
  std::string name;
  int64_t count = 0;
  double total_us = 0;
};

struct Breakdown {
  int64_t seen = 0;           // the trace's events
  int64_t device_events = 0;  // stream events counted
  // The temporal breakdown (µs): span = idle + compute + non_compute.
  double span_us = 0, idle_us = 0, compute_us = 0, non_compute_us = 0;
  // non_compute split: communication, then memory, then the rest, each
  // where no earlier kind runs.
  double communication_us = 0, memory_us = 0, other_us = 0;
  // Of communication's union, the part under compute, µs.
  double communication_total_us = 0, communication_overlap_us = 0;
  std::vector<IdleSplit> idle;  // per stream, by stream number
  // Launches (cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync,
  // cudaMemsetAsync) matched to their work; graph launches apart.
  int64_t launches = 0, graph_launched = 0, kernels = 0, short_kernels = 0;  // < 10 µs
  double median_launch_delay_us = 0;
  std::vector<KernelRow> top;  // by total time, descending
  double Pct(double us) const { return span_us > 0 ? 100.0 * us / span_us : 0; }
  // The device's own work: busy but not in communication, where a rank of a
  // distributed run waits for the slowest.
  double WorkUs() const { return compute_us + memory_us + other_us; }
};

// The breakdown of the events (as TraceReader kept them, taken over: they
// are filtered and sorted in place); top_n kernels.
Breakdown BreakDown(TraceEvents trace, int top_n);

// A kernel's name for a table: without "void ", its argument list,
// "(anonymous namespace)::" and "at::native::", and cut to width characters
// ("..." last) where still longer: cuDNN's names keep their tile sizes at
// 110.
std::string ShortKernelName(const std::string& name, size_t width = 110);

// One rank's breakdown of a distributed run's profiled window.
struct RankBreakdown {
  int rank = 0;
  Breakdown b;
};

// The rank the others wait for: its collectives end with theirs but start
// last, so it spends the least time in communication (without any, the
// most work, Breakdown::WorkUs); ranks.size() where there are fewer than two
// or they arrive together (DescribeSlowest).
size_t SlowestRank(const std::vector<RankBreakdown>& ranks);

// The slowest rank in words, set against the rank that waits most: "rank 1
// is the slowest: the others wait for it in communication (572 us there
// against 42749 on rank 0); it works ... and idles ...: its device has more
// to do" (or waits more, for its host; either where it is at least half the
// other's wait, else it reaches the collectives later in the step); "the
// ranks arrive together: ..."
// where their times in communication are within 2% of the span ("" for
// fewer than two ranks).
std::string DescribeSlowest(const std::vector<RankBreakdown>& ranks);

// One sentence naming the biggest share and what to try ("62% of the span
// is idle waiting on the host: launch-bound; try --execution cuda_graph").
std::string BiggestShare(const Breakdown& b);

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_TRACE_BREAKDOWN_H_
