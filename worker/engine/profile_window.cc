#include "worker/engine/profile_window.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "worker/engine/compat.h"

namespace gpubench::engine {
namespace {

namespace autograd_prof = torch::autograd::profiler;

// What a profiled window's events add up to, per window.
struct ProfiledTotals {
  std::vector<profile::Event> events;  // the operators and kernels, memory events left out
  double allocated_bytes = 0;          // allocated on the run's device
  double device_us = 0;                // kernel time
  double flops = 0;                    // what the profiler counts, with count_flops
};

ProfiledTotals Collect(const autograd_prof::ProfilerResult& result, const torch::Device& device,
                       bool count_flops) {
  ProfiledTotals t;
  for (const auto& e : result.events()) {
    if (count_flops) t.flops += static_cast<double>(e.flops());
    if (e.name() == "[memory]") {
      if (e.nBytes() > 0 && e.deviceType() == device.type()) t.allocated_bytes += e.nBytes();
      continue;
    }
    // A GPU user annotation ("nccl:all_reduce" on the collective's stream)
    // spans device work that its kernels report themselves: counted, it
    // doubled a ddp run's all-reduce time. libkineto::ActivityType's
    // GPU_USER_ANNOTATION, 2 in every LibTorch from 1.13 to 2.11.
    constexpr uint8_t kGpuUserAnnotation = 2;
    if (e.activityType() == kGpuUserAnnotation) continue;
    profile::Event ev;
    ev.name = e.name();
    ev.device = e.deviceType() != c10::DeviceType::CPU;
    ev.thread = e.startThreadId();
    ev.correlation = e.correlationId();
#if GPUBENCH_TORCH_AT_LEAST(2, 1)
    ev.start_us = e.startNs() / 1e3;
    ev.duration_us = e.durationNs() / 1e3;
#else
    ev.start_us = e.startUs();
    ev.duration_us = e.durationUs();
#endif
    if (ev.device) t.device_us += ev.duration_us;
    t.events.push_back(std::move(ev));
  }
  return t;
}

// Kineto's own trace (with device activities and flows) where it can write
// one; else one made of events. In TMPDIR: a confined worker's scratch
// folder, the one place it writes.
std::string TraceOf(autograd_prof::ProfilerResult* result,
                    const std::vector<profile::Event>& events) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = absl::StrCat(tmp != nullptr && *tmp == '/' ? tmp : "/tmp",
                                        "/gpubench-trace-", getpid(), ".json");
  std::string trace;
  try {
    result->save(path);
    std::ifstream in(path);
    trace.assign(std::istreambuf_iterator<char>(in), {});
  } catch (const std::exception&) {
  }
  std::remove(path.c_str());
  return trace.empty() ? profile::ChromeTrace(events) : trace;
}

}  // namespace

void ProfileWindow(Workload* workload, const MeasureConfig& m, const torch::Device& device,
                   bool count_flops, int64_t deadline_ns, const std::atomic<bool>* cancel,
                   measure::RunState* state, RunOutcome* out) {
  namespace prof = torch::profiler::impl;
  // The bound already passed while measuring (a step longer than what was
  // left): a profiled step would pass it by one more step. Ranks would
  // have to agree first; they keep the one step ProfiledSteps gives.
  if (!workload->distributed() && measure::SteadyClock()->NowNs() >= deadline_ns) {
    out->profile_error =
        "not profiled: max_time_ms passed while measuring; raise --max-time-ms to leave "
        "time for the profiled window";
    return;
  }
  workload->BeginRange("profiled window", 0);
  struct EndRange {
    Workload* w;
    ~EndRange() { w->EndRange(); }
  } end_range{workload};
  bool enabled = false;
  try {
    prof::ProfilerConfig config(prof::ProfilerState::KINETO, m.profile_shapes || count_flops,
                                /*profile_memory=*/true, /*with_stack=*/false, count_flops);
    std::set<prof::ActivityType> activities = {prof::ActivityType::CPU};
    if (device.is_cuda()) activities.insert(prof::ActivityType::CUDA);
    autograd_prof::prepareProfiler(config, activities);
    autograd_prof::enableProfiler(config, activities);
    enabled = true;
    std::vector<double> ignored;
    auto steps = measure::ProfiledSteps(m.profile_iterations, deadline_ns, measure::SteadyClock(),
                                        workload, cancel, state);
    if (!steps.ok()) throw std::runtime_error(std::string(steps.status().message()));
    // Every figure below is per step that ran, not per step asked for.
    const int n = *steps;
    out->profiled_iterations = n;
    workload->Flush(&ignored).IgnoreError();
    enabled = false;
    std::unique_ptr<autograd_prof::ProfilerResult> result = autograd_prof::disableProfiler();
    const ProfiledTotals totals = Collect(*result, device, count_flops);
    out->profiled_allocated_bytes = totals.allocated_bytes / n;
    out->profiled_flops = totals.flops / n;
    out->profiled_device_ms = totals.device_us / 1e3 / n;
    out->profile = profile::BuildTable(totals.events, m.profile_top_operators);
    out->trace_json = TraceOf(result.get(), totals.events);
  } catch (const std::exception& e) {
    // Never leave the profiler on for the sweep's later runs.
    if (enabled) {
      try {
        autograd_prof::disableProfiler();
      } catch (const std::exception&) {
      }
    }
    // A rank of a distributed run that left the window early would leave
    // its peers waiting in a collective: the run fails, and the daemon
    // stops the group.
    if (workload->distributed()) throw;
    out->profile_error = "profiling failed: " + MessageOf(e);
  }
}

}  // namespace gpubench::engine
