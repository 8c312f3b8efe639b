// The limits the job manager's files share (job_manager.cc, and the
// runner's lane_passes.cc). Not for other files.
#ifndef GPUBENCH_SERVER_JOB_MANAGER_INTERNAL_H_
#define GPUBENCH_SERVER_JOB_MANAGER_INTERNAL_H_

#include <cstddef>
#include <cstdint>


namespace gpubench::server {

// A profiled window's Chrome trace is kept up to this size: a model with
// millions of operators per step would otherwise fill the store in one run.
inline constexpr size_t kMaxTraceBytes = size_t{256} << 20;

// The room a typical run needs (record, samples, telemetry), probed before
// taking jobs again after a run could not be stored.
inline constexpr int64_t kRunProbeBytes = 256 << 10;

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_JOB_MANAGER_INTERNAL_H_
