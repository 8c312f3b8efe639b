// Whether a run was measured on a quiet host: the contended flag the daemon
// sets from what the worker and the daemon saw (result.proto's Contention),
// and whether a run may serve as a baseline (compare, the nightly rule).
#ifndef GPUBENCH_COMMON_CONTENTION_H_
#define GPUBENCH_COMMON_CONTENTION_H_

#include <string>

#include "gpubench/v1/result.pb.h"

namespace gpubench {

// Other processes' CPU work, in cores on average over the measured window,
// above which a run counts as contended.
inline constexpr double kContendedOtherCores = 0.5;

// Jobs beside, other processes on the GPU, or more than kContendedOtherCores
// of other CPU work. The job's own processes (a distributed run's other
// ranks, a cuda:all job's other lanes: Contention.job_cpu_cores) are none
// of these: the worker leaves them out.
bool IsContended(const v1::Contention& contention);

// Why a run must not be a baseline: "contended (...)" or "throttled (...)"
// for thermal reasons (hw_slowdown, sw_thermal, hw_thermal, hw_power_brake;
// a power cap is where a GPU under full load normally runs, so it does not
// count). Empty when it may.
std::string NotABaselineBecause(const v1::Run& run);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_CONTENTION_H_
