#include "server/job_planner.h"

#include <algorithm>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/paths.h"
#include "common/spec.h"
#include "common/spec_schema.h"
#include "common/workload_registry.h"
#include "server/job_queue.h"

namespace gpubench::server {

namespace {

// Ranks of a distributed run on the CPU, at most (and no more than cores).
constexpr int kMaxCpuRanks = 16;
// A CPU collective's message times its ranks, at most.
constexpr int64_t kMaxCpuCollectiveBytes = int64_t{4} << 30;

// A config's device as a lease: auto and cuda resolved.
std::string DeviceLease(const v1::RunConfig& c, const v1::HostInfo& host) {
  const std::string& d = c.device();
  if (d.empty() || d == "auto") {
    return host.gpus_size() > 0 ? "cuda:0" : host.mps_available() ? "mps" : "cpu";
  }
  return d == "cuda" ? "cuda:0" : d;
}

// A distributed point on device cuda (or auto on a GPU host): its ranks take
// any world_size of the host's GPUs, chosen when the job starts. On cuda:N
// (one rank) it takes that GPU, on the CPU the CPU.
bool TakesAnyGpus(const v1::RunConfig& c, const std::string& lease) {
  return IsDistributedWorkload(c.workload()) && absl::StartsWith(lease, "cuda:") &&
         !absl::StartsWith(c.device(), "cuda:");
}

// Where a run's device is not on this host (cuda:N past its GPUs, mps
// without Metal) or its precision does not run there (fp16 on the CPU),
// INVALID_ARGUMENT naming the field, at submit rather than in a worker.
absl::Status CheckOnHost(const v1::JobSpec& spec, const v1::RunConfig& c,
                         const v1::HostInfo& host) {
  const std::string device = DeviceLease(c, host);
  const std::string device_field =
      spec.sweep().device_size() > 0 ? "spec.sweep.device" : "spec.base.device";
  if (absl::StartsWith(device, "cuda:") && !TakesAnyGpus(c, device)) {
    int index = 0;
    if (!absl::SimpleAtoi(device.substr(5), &index) || index >= host.gpus_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          device_field, ": ", c.device(), " is not on this host, which has ", host.gpus_size(),
          " GPU(s)", host.gpus_size() == 0 ? "; use cpu" : ""));
    }
  }
  if (c.params().has_peer_device() && c.params().peer_device() >= host.gpus_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        spec.sweep().peer_device_size() > 0 ? "spec.sweep.peer_device"
                                            : "spec.base.params.peer_device",
        ": cuda:", c.params().peer_device(), " is not on this host, which has ",
        host.gpus_size(), " GPU(s)"));
  }
  if (device == "mps" && !host.mps_available()) {
    return absl::InvalidArgumentError(
        absl::StrCat(device_field, ": mps is not on this host (Apple Silicon only)"));
  }
  if (device == "cpu" && c.precision() == v1::PRECISION_FP16) {
    return absl::InvalidArgumentError(absl::StrCat(
        spec.sweep().precision_size() > 0 ? "spec.sweep.precision" : "spec.base.precision",
        ": fp16 does not run on the CPU; use bf16 or fp32 there"));
  }
  return absl::OkStatus();
}

// What the runs set that means nothing where they run: a parameter their
// workload does not read, a GPU setting on the CPU. Noted, not refused;
// each note once.
std::vector<std::string> NotesOn(const std::vector<v1::RunConfig>& runs,
                                 const v1::HostInfo& host) {
  std::set<std::string> seen;
  std::vector<std::string> notes;
  auto note = [&](std::string text) {
    if (seen.insert(text).second) notes.push_back(std::move(text));
  };
  for (const v1::RunConfig& c : runs) {
    for (const std::string& p : UnreadParams(c)) {
      note(absl::StrCat("params.", p, " means nothing for ", c.workload(),
                        ", which does not read it (gpubench workloads ", c.workload(), ")"));
    }
    if (DeviceLease(c, host) != "cpu") continue;
    if (c.precision() == v1::PRECISION_TF32 || c.precision() == v1::PRECISION_FP32_DEFAULT) {
      note(absl::StrCat("precision ", EnumShortName(v1::Precision_descriptor(), c.precision()),
                        " means nothing on the CPU: it runs fp32 there"));
    }
    if (c.cudnn_benchmark()) note("cudnn_benchmark means nothing on the CPU: there is no cuDNN");
    if (c.input_source() == v1::INPUT_SOURCE_HOST &&
        (c.pipeline().pinned_memory() || c.pipeline().non_blocking())) {
      note("pinned memory and non_blocking mean nothing on the CPU: no batch is copied to a "
           "device");
    }
  }
  return notes;
}

}  // namespace

absl::Status NoProbeIn(const std::vector<v1::RunConfig>& runs) {
  for (const v1::RunConfig& c : runs) {
    if (!c.probe().empty()) {
      return absl::InvalidArgumentError(
          "spec.base.probe: set by gpubench probe only (the daemon's own probe suite, "
          "RunProbe); a submitted or scheduled spec may not name a fleet probe");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<JobPlanner::Needs> JobPlanner::LeasesOf(const v1::Job& job) const {
  auto plan = store_->jobs().GetPlan(job.job_id());
  if (!plan.ok()) return plan.status();
  return LeasesOf(job, {plan->runs().begin(), plan->runs().end()});
}

JobPlanner::Needs JobPlanner::LeasesOf(const v1::Job& job,
                                       const std::vector<v1::RunConfig>& configs) const {
  Needs needs;
  std::set<std::string>& leases = needs.leases;
  const bool exclusive =
      job.spec().has_exclusive() ? job.spec().exclusive() : !job.schedule_id().empty();
  if (exclusive) leases.insert(JobQueue::kWholeHost);
  for (const v1::RunConfig& c : configs) {
    std::string d = DeviceLease(c, host_);
    if (TakesAnyGpus(c, d)) {
      needs.any_gpus = std::max(needs.any_gpus, c.world_size());
      continue;
    }
    leases.insert(d);
    if (c.params().has_peer_device()) leases.insert(GpuLease(c.params().peer_device()));
    // A CPU figure measured beside a GPU job's host thread is a figure of both.
    if (d == "cpu") leases.insert(JobQueue::kWholeHost);
    // A run that reaches other devices (a peer GPU) runs alone too.
    if (TakesHost(c)) leases.insert(JobQueue::kWholeHost);
  }
  return needs;
}

absl::Status JobPlanner::ExpandEveryGpu(v1::JobSpec* spec) const {
  const bool in_base = spec->base().device() == kEveryGpu;
  const bool in_sweep = std::find(spec->sweep().device().begin(), spec->sweep().device().end(),
                                  kEveryGpu) != spec->sweep().device().end();
  if (!in_base && !in_sweep) return absl::OkStatus();
  if (host_.gpus_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        in_sweep ? "spec.sweep.device" : "spec.base.device", ": ", kEveryGpu,
        " runs on each GPU of the host, and this host has none"));
  }
  std::vector<std::string> devices;
  if (in_sweep) {
    for (const std::string& d : spec->sweep().device()) {
      if (d != kEveryGpu) devices.push_back(d);
    }
  }
  for (int i = 0; i < host_.gpus_size(); ++i) {
    const std::string gpu = GpuLease(i);
    if (std::find(devices.begin(), devices.end(), gpu) == devices.end()) devices.push_back(gpu);
  }
  spec->mutable_sweep()->clear_device();
  for (const std::string& d : devices) spec->mutable_sweep()->add_device(d);
  if (in_base) spec->mutable_base()->set_device(GpuLease(0));
  spec->set_parallel_devices(true);
  return absl::OkStatus();
}

std::vector<JobPlanner::Lane> JobPlanner::LanesOf(const v1::Job& job,
                                                  const std::vector<v1::RunConfig>& configs,
                                                  const std::set<std::string>& leases) const {
  // The job's GPUs, lowest first: a distributed group's ranks take them in
  // order.
  std::vector<std::string> gpus;
  for (int i = 0; i < 64; ++i) {
    if (leases.count(GpuLease(i))) gpus.push_back(GpuLease(i));
  }
  std::vector<Lane> lanes;
  std::map<std::string, size_t> by_key;
  for (int i = 0; i < static_cast<int>(configs.size()); ++i) {
    const v1::RunConfig& c = configs[i];
    const std::string device = DeviceLease(c, host_);
    std::string key;
    v1::RankAssignment rank;
    if (IsDistributedWorkload(c.workload())) {
      const int k = std::max(1, c.world_size());
      rank.set_world_size(k);
      for (int r = 0; r < k; ++r) {
        if (r == 1 && c.params().has_peer_device() &&
            IsWorkload(c.workload(), WorkloadId::kCollective)) {
          rank.add_devices(GpuLease(c.params().peer_device()));  // a named pair
        } else if (!TakesAnyGpus(c, device)) {
          rank.add_devices(device);  // the CPU, a named GPU (and its pair's peer)
        } else {
          rank.add_devices(r < static_cast<int>(gpus.size()) ? gpus[r] : GpuLease(r));
        }
      }
      key = absl::StrCat("ranks ", absl::StrJoin(rank.devices(), ","));
    } else if (job.spec().parallel_devices()) {
      key = absl::StrCat("device ", device);
    }
    auto [it, added] = by_key.emplace(key, lanes.size());
    if (added) {
      Lane lane;
      lane.rank = rank;
      // Only GPUs run side by side: a CPU run beside them would measure both.
      lane.parallel = job.spec().parallel_devices() && rank.world_size() == 0 &&
                      absl::StartsWith(device, "cuda:");
      lanes.push_back(std::move(lane));
    }
    lanes[it->second].indices.push_back(i);
  }
  return lanes;
}

absl::Status JobPlanner::CheckModels(const std::vector<v1::RunConfig>& configs,
                                     v1::WorkerRequest* request) const {
  for (const v1::RunConfig& c : configs) {
    if (!IsWorkload(c.workload(), WorkloadId::kTorchscript)) continue;
    const std::string& sha256 = c.params().model_sha256();
    if (sha256.empty()) {
      auto resolved = ResolveModelPath(c.params().model_path(), options_.model_roots,
                                       "spec.base.params.model_path");
      if (!resolved.ok()) return resolved.status();
      // A model root above the data directory or a key does not make them
      // models (a worker could not read them anyway): the same refusal.
      if (ResolvesWithin(*resolved, options_.protected_paths)) {
        return ResolveModelPath("", {}, "spec.base.params.model_path").status();
      }
      continue;
    }
    auto model = store_->models().Get(sha256);
    if (absl::IsNotFound(model.status())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.base.params.model_sha256: no model ", sha256,
          " on this daemon; upload it first (gpubench model upload)"));
    }
    if (!model.ok()) return model.status();
    if (model->format() == v1::MODEL_FORMAT_AOTI_PACKAGE &&
        model->uploader_role() != v1::ROLE_ADMIN && !options_.allow_uploaded_aoti) {
      return absl::PermissionDeniedError(absl::StrCat(
          "spec.base.params.model_sha256: ", sha256,
          " is an AOTInductor package (native code) uploaded without the admin role; "
          "an admin must upload it, or the operator must start gpubenchd with "
          "--allow-uploaded-aoti"));
    }
    if (request) (*request->mutable_model_formats())[sha256] = model->format();
  }
  return absl::OkStatus();
}

std::string JobPlanner::DeviceOf(const v1::RunConfig& c) const { return DeviceLease(c, host_); }

absl::StatusOr<JobPlanner::Plan> JobPlanner::PlanJob(const v1::JobSpec& spec) const {
  // Before anything else, so that a forged probe is told why whatever else
  // the spec gets wrong; the expanded runs again, whatever set it.
  if (auto s = NoProbeIn({spec.base()}); !s.ok()) return s;
  auto plan = PlanSpec(spec);
  if (!plan.ok()) return plan.status();
  if (auto s = NoProbeIn(plan->runs); !s.ok()) return s;
  return plan;
}

absl::StatusOr<JobPlanner::Plan> JobPlanner::PlanSpec(const v1::JobSpec& submitted) const {
  Plan plan;
  plan.spec = submitted;
  const v1::JobSpec& spec = plan.spec;
  if (auto s = ExpandEveryGpu(&plan.spec); !s.ok()) return s;
  auto configs = ExpandSweep(spec);
  if (!configs.ok()) return configs.status();
  plan.runs = std::move(*configs);
  // The measurement, profiling and telemetry settings the worker will use,
  // stored with the job and shown by a dry run.
  FillSpecDefaults(&plan.spec);
  if (auto s = CheckModels(plan.runs, nullptr); !s.ok()) return s;
  for (const v1::RunConfig& c : plan.runs) {
    if (auto s = CheckOnHost(spec, c, host_); !s.ok()) return s;
    if (!options_.clock_control && (c.power_limit_w() != 0 || !c.gpu_clocks().empty())) {
      const bool power = c.power_limit_w() != 0;
      const bool swept = power ? spec.sweep().power_limit_w_size() > 0
                               : spec.sweep().gpu_clocks_size() > 0;
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.", swept ? "sweep." : "base.", power ? "power_limit_w" : "gpu_clocks",
          ": this daemon does not allow clock control; its operator starts gpubenchd with "
          "--allow-clock-control"));
    }
  }
  plan.notes = NotesOn(plan.runs, host_);
  if (spec.timeout_s() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.timeout_s: must be >= 0, got ", spec.timeout_s()));
  }
  v1::Job job;
  *job.mutable_spec() = spec;
  const Needs needs = LeasesOf(job, plan.runs);
  const char* ranks_field =
      spec.sweep().world_size_size() > 0 ? "spec.sweep.world_size" : "spec.base.world_size";
  if (needs.any_gpus > host_.gpus_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        ranks_field, ": ", needs.any_gpus, " ranks on cuda need as many GPUs; this host has ",
        host_.gpus_size()));
  }
  // Each rank is a worker with LibTorch loaded: on the CPU, no more of them
  // than the host has cores (and 16), each with a bounded message, or a
  // client could fill its memory.
  const int cpu_ranks = std::min<int>(kMaxCpuRanks, std::max(1u, std::thread::hardware_concurrency()));
  for (const v1::RunConfig& c : plan.runs) {
    if (!IsDistributedWorkload(c.workload())) continue;
    const std::string device = DeviceLease(c, host_);
    if (device == "mps") {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.base.device: ", c.workload(), " runs on cuda or cpu; this host's auto is mps"));
    }
    if (device != "cpu") continue;
    if (c.world_size() > cpu_ranks) {
      return absl::InvalidArgumentError(absl::StrCat(
          ranks_field, ": ", c.world_size(), " ranks on the CPU; this host takes at most ",
          cpu_ranks, " (one per core, 16 at most)"));
    }
    if (c.params().collective_bytes() * c.world_size() > kMaxCpuCollectiveBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.base.params.collective_bytes: ", c.params().collective_bytes(), " bytes on ",
          c.world_size(), " CPU ranks; at most ", kMaxCpuCollectiveBytes,
          " bytes over all ranks on the CPU"));
    }
  }
  return plan;
}

}  // namespace gpubench::server
