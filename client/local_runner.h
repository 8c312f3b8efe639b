// Runs a job on this machine without a daemon: one gpubench-worker child,
// results stored in the local SQLite file as they arrive. The daemon path
// replaces this once gpubenchd serves SubmitJob.
#ifndef GPUBENCH_CLIENT_LOCAL_RUNNER_H_
#define GPUBENCH_CLIENT_LOCAL_RUNNER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpubench/v1/job.pb.h"
#include "gpubench/v1/worker.pb.h"
#include "storage/store.h"

namespace gpubench::client {

struct LocalJobResult {
  v1::Job job;
  std::vector<v1::Run> runs;  // with samples
};

// Validates spec, stores a job, runs it in a worker process, stores every
// run as it finishes and returns the finished job. on_event sees each worker
// event (for progress output). A worker crash ends the job FAILED with the
// exit status and stderr tail; runs stored before it are kept.
absl::StatusOr<LocalJobResult> RunLocalJob(
    const v1::JobSpec& spec, const std::string& worker_path,
    storage::Store* store,
    const std::function<void(const v1::WorkerEvent&)>& on_event);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_LOCAL_RUNNER_H_
