// The daemon's options for its job runner: where workers and models are,
// their limits, the queue's bounds, retention and clock control. Filled by
// gpubenchd's flags (main.cc); read by the job manager and its planner and
// runner.
#ifndef GPUBENCH_SERVER_DAEMON_OPTIONS_H_
#define GPUBENCH_SERVER_DAEMON_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gpubench/v1/worker.pb.h"
#include "launcher/process.h"
#include "server/job_clock.h"
#include "storage/store.h"

namespace gpubench {
class ClockControl;  // launcher/clock_control.h
}

namespace gpubench::server {

struct DaemonOptions {
  JobClock* clock = nullptr;          // null: the real one (tests give a manual one)
  std::string worker_path;            // the gpubench-worker binary
  std::string model_dir;              // uploaded models, by sha256
  std::vector<std::string> model_roots;  // canonical dirs params.model_path may name
  bool allow_uploaded_aoti = false;   // run AOTI uploads from non-admin uploaders
  v1::AotSettings aot;                // how execution aot compiles (python, cache)
  int64_t worker_max_rss_bytes = 0;   // a worker above is killed, its run failed (0: none)
  int64_t worker_max_scratch_bytes = 0;  // a worker whose scratch folder holds more: the same
  worker::WorkerLimits worker_limits;  // rlimits set in each worker
  int max_queue = 1000;               // queued jobs; beyond: RESOURCE_EXHAUSTED
  int max_queued_per_submitter = 0;   // one submitter's queued jobs (0: max_queue / 2)
  int64_t max_job_seconds = 24 * 3600;  // bounds JobSpec.timeout_s (and is its default)
  int64_t stop_grace_ms = 10000;      // SIGTERM, then SIGKILL after this
  int max_requeues = 1;               // times an interrupted job is requeued
  // "IPv4:PORT" on the network between hosts where a pair across hosts
  // meets (RunHostPair); empty: no such pair runs here.
  std::string pair_address;
  storage::RetentionLimits retention;  // applied after every job ends
  // Sets and undoes the GPU power limits and clock locks runs ask for; null
  // where the operator did not allow it (such specs are refused at submit).
  ClockControl* clock_control = nullptr;
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_DAEMON_OPTIONS_H_
