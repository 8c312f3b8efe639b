// The job planner: what a submitted spec becomes on this host before
// anything is queued (cuda:all rewritten, the sweep expanded, defaults
// filled, models and devices checked), which leases a job takes, and the
// lanes its runs are split into. The job manager's first collaborator;
// tested alone in job_planner_test.
#ifndef GPUBENCH_SERVER_JOB_PLANNER_H_
#define GPUBENCH_SERVER_JOB_PLANNER_H_

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpubench/v1/job.pb.h"
#include "gpubench/v1/worker.pb.h"
#include "storage/store.h"

namespace gpubench::server {

// A caller's runs never name a fleet probe: only the daemon's own suite
// (JobManager::SubmitProbeSuite) makes probe runs. InvalidArgument naming
// the field.
absl::Status NoProbeIn(const std::vector<v1::RunConfig>& runs);

// What the planner takes from the daemon's options.
struct PlannerOptions {
  std::vector<std::string> model_roots;      // where a params.model_path may resolve
  std::vector<std::string> protected_paths;  // never a model (data dir, keys)
  bool allow_uploaded_aoti = false;          // an AOTI package from a non-admin runs
  bool clock_control = false;                // power limits and clock locks allowed
};

// Thread-safe: const after construction. Reads the store (models, stored
// plans) and writes nothing.
class JobPlanner {
 public:
  JobPlanner(PlannerOptions options, storage::Store* store, v1::HostInfo host)
      : options_(std::move(options)), store_(store), host_(std::move(host)) {}

  // A spec as this host will run it: cuda:all rewritten into a lane per
  // GPU, the sweep expanded (defaults filled), and what a submit checks
  // before the store (InvalidArgument naming the field): the models it names
  // (CheckModels), the timeout, GPUs and CPU ranks this host can give, and
  // no fleet probe (spec.base.probe: only the daemon's own suite names one).
  struct Plan {
    v1::JobSpec spec;
    std::vector<v1::RunConfig> runs;
    std::vector<std::string> notes;  // settings that mean nothing where they run
    // A pair across hosts: the one rank this daemon runs (RunHostPair).
    std::optional<v1::RankAssignment> host_pair;
  };
  absl::StatusOr<Plan> PlanJob(const v1::JobSpec& spec) const;
  // PlanJob without the probe check: the daemon's own suite's specs, and
  // callers' after that check.
  absl::StatusOr<Plan> PlanSpec(const v1::JobSpec& spec) const;

  // Every model the runs name may be loaded: a model_path resolves into a
  // model root, an uploaded model exists, and an AOTI package came from an
  // admin (or the operator allows any). PermissionDenied or InvalidArgument
  // naming the field. Fills request's model formats when given.
  absl::Status CheckModels(const std::vector<v1::RunConfig>& configs,
                           v1::WorkerRequest* request) const;
  // A run's device on this host: auto and cuda resolved ("cuda:0", "cpu").
  std::string DeviceOf(const v1::RunConfig& c) const;

  // The devices (leases) a job's runs use: "cpu", "cuda:N", "mps", plus
  // JobQueue::kWholeHost for a job with a CPU run, one that reaches another
  // device (takes_host) or an exclusive one (spec.exclusive, by default a
  // schedule's job). Beyond them, a distributed point on device cuda wants
  // any world_size of the host's GPUs (any_gpus: the largest world_size).
  struct Needs {
    std::set<std::string> leases;
    int any_gpus = 0;
  };
  // Of a stored job: its stored plan's runs.
  absl::StatusOr<Needs> LeasesOf(const v1::Job& job) const;
  Needs LeasesOf(const v1::Job& job, const std::vector<v1::RunConfig>& configs) const;

  // The sweep's points as the job runs them: one lane per distributed group
  // (its world_size, its ranks' devices from the job's leases), and the
  // other points in one lane, or one lane per device with parallel_devices.
  struct Lane {
    std::vector<int> indices;
    v1::RankAssignment rank;  // world_size 0: not distributed
    bool parallel = false;    // runs beside the other parallel lanes
  };
  std::vector<Lane> LanesOf(const v1::Job& job, const std::vector<v1::RunConfig>& configs,
                            const std::set<std::string>& leases) const;

  const v1::HostInfo& host() const { return host_; }

 private:
  // Replaces device cuda:all by each of the host's GPUs (and sets
  // parallel_devices); InvalidArgument on a host without GPUs.
  absl::Status ExpandEveryGpu(v1::JobSpec* spec) const;

  const PlannerOptions options_;
  storage::Store* const store_;
  const v1::HostInfo host_;
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_JOB_PLANNER_H_
