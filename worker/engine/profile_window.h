// The profiled window: a few more steps after the timed ones under LibTorch's
// profiler, so profiling never distorts the reported figures. It gives the
// operator table, the trace (Kineto's own where the build has it; elsewhere,
// Debian's 1.13, one made of the CPU operators), and for the roofline the
// bytes allocated on the run's device, the kernel time and, with
// count_flops, the FLOPs the profiler counts, per step.
#ifndef GPUBENCH_WORKER_ENGINE_PROFILE_WINDOW_H_
#define GPUBENCH_WORKER_ENGINE_PROFILE_WINDOW_H_

#include <torch/torch.h>

#include <atomic>
#include <cstdint>

#include "worker/engine/types.h"
#include "worker/engine/workload.h"

namespace gpubench::engine {

// Profiles at most m.profile_iterations steps of workload into out
// (profiled_*, profile, trace_json, profile_error), none but the first once
// the run's bound (deadline_ns, on measure::SteadyClock) would pass; none at
// all where it passed while measuring. A rank of a distributed run that
// fails here throws: its peers would wait in a collective.
void ProfileWindow(Workload* workload, const MeasureConfig& m, const torch::Device& device,
                   bool count_flops, int64_t deadline_ns, const std::atomic<bool>* cancel,
                   measure::RunState* state, RunOutcome* out);

}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_PROFILE_WINDOW_H_
