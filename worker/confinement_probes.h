// gpubenchd --check-confinement, in the worker: each probe tried once,
// confined, and reported.
#ifndef GPUBENCH_WORKER_CONFINEMENT_PROBES_H_
#define GPUBENCH_WORKER_CONFINEMENT_PROBES_H_

#include "absl/status/status.h"
#include "gpubench/v1/worker.pb.h"

namespace gpubench::worker {

// Writes a log event per probe to out_fd ("ok" or "UNEXPECTED", then
// "allowed PATH" or "denied PATH (why)"), the first saying which user the
// worker runs as, then a done event. FailedPrecondition when any went
// otherwise than expected.
absl::Status ReportProbes(const v1::WorkerConfinement& confinement, int out_fd);

}  // namespace gpubench::worker

#endif  // GPUBENCH_WORKER_CONFINEMENT_PROBES_H_
