#include "worker/worker.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/paths.h"
#include "common/spec.h"
#include "common/version.h"
#include "common/workload_registry.h"
#include "google/protobuf/util/time_util.h"
#include "worker/aot.h"
#include "launcher/confine.h"
#include "launcher/cpu_cores.h"
#include "worker/confinement_probes.h"
#include "worker/convert.h"
#include "worker/engine/engine.h"
#include "worker/heartbeat.h"
#include "worker/rank.h"
#include "launcher/ipc.h"
#include "worker/run_as.h"

namespace gpubench::worker {
namespace {

using google::protobuf::util::TimeUtil;

google::protobuf::Timestamp Now() {
  return NowTimestamp();
}

// Test hooks, read from the environment the daemon's operator gave it (a
// client cannot set them): GPUBENCH_INJECT_CRASH_AT_BATCH=N makes the worker
// die of SIGSEGV inside any run of batch size N, as a user model crashing
// inside LibTorch would; GPUBENCH_INJECT_HANG_AT_BATCH=N makes it ignore
// SIGTERM and hang there.
void MaybeInjectFault(int batch_size, int rank) {
  int at = 0, only_rank = -1;
  const char* crash = std::getenv("GPUBENCH_INJECT_CRASH_AT_BATCH");
  // GPUBENCH_INJECT_CRASH_RANK: only that rank of a distributed run crashes.
  const char* crash_rank = std::getenv("GPUBENCH_INJECT_CRASH_RANK");
  if (crash_rank != nullptr && absl::SimpleAtoi(crash_rank, &only_rank) && only_rank != rank) {
    crash = nullptr;
  }
  if (crash != nullptr && absl::SimpleAtoi(crash, &at) && at == batch_size) {
    const struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    std::signal(SIGSEGV, SIG_DFL);
    std::raise(SIGSEGV);
  }
  // GPUBENCH_INJECT_SCRATCH_BYTES=N: a run writes N bytes into the scratch
  // folder (TMPDIR) as it starts, as a model filling the disk would.
  const char* scratch = std::getenv("GPUBENCH_INJECT_SCRATCH_BYTES");
  int64_t bytes = 0;
  if (scratch != nullptr && absl::SimpleAtoi(scratch, &bytes) && bytes > 0) {
    if (FILE* f = std::fopen((TempDir() + "/filler").c_str(), "wb")) {
      const std::string block(1 << 20, 'x');
      for (int64_t written = 0; written < bytes; written += block.size()) {
        std::fwrite(block.data(), 1, block.size(), f);
      }
      std::fclose(f);
    }
  }
  const char* hang = std::getenv("GPUBENCH_INJECT_HANG_AT_BATCH");
  if (hang != nullptr && absl::SimpleAtoi(hang, &at) && at == batch_size) {
    std::signal(SIGTERM, SIG_IGN);
    while (true) pause();
  }
}

// A worker user reads its model through what it opened before it switched:
// a descriptor, or a copy in its scratch folder.
void HoldOpen(const HeldModels* held, engine::RunConfig* engine_config) {
  if (held == nullptr) return;
  if (auto fd = held->fds.find(engine_config->model_path); fd != held->fds.end()) {
    engine_config->model_fd = fd->second;
  }
  if (auto copy = held->copies.find(engine_config->model_path); copy != held->copies.end()) {
    engine_config->model_path = copy->second;
  }
}

// Sets the file a torchscript run loads and the loader that reads it. An
// uploaded model (by hash, which wins over a path) lives in the daemon's model
// directory, and its stored format decides the loader; a path must resolve
// into one of the request's model roots, checked here again right before the
// load, and a ".pt2" suffix means an AOTInductor package.
absl::Status LocateModel(const v1::WorkerRequest& request, const v1::RunConfig& config,
                         engine::RunConfig* engine_config, const HeldModels* held = nullptr) {
  if (!IsWorkload(config.workload(), WorkloadId::kTorchscript)) {
    engine_config->model_path.clear();
    return absl::OkStatus();
  }
  const std::string& sha256 = config.params().model_sha256();
  if (!sha256.empty()) {
    // 64 hex digits: it cannot reach outside the model directory.
    if (!IsSha256Hex(sha256)) {
      return absl::InvalidArgumentError("params.model_sha256: not 64 lower-case hex digits");
    }
    engine_config->model_path = ModelPath(request.model_dir(), sha256);
    auto format = request.model_formats().find(sha256);
    engine_config->model_format =
        format != request.model_formats().end() &&
                format->second == v1::MODEL_FORMAT_AOTI_PACKAGE
            ? engine::ModelFormat::kAotiPackage
            : engine::ModelFormat::kTorchScript;
    HoldOpen(held, engine_config);
    return absl::OkStatus();
  }
  // A worker user may not pass the folders above its model: what it
  // located before it switched stands.
  const auto at = held ? held->located.find(config.params().model_path())
                       : std::map<std::string, std::string>::const_iterator();
  auto resolved = held && at != held->located.end()
                      ? absl::StatusOr<std::string>(at->second)
                      : ResolveModelPath(config.params().model_path(),
                                         {request.model_roots().begin(),
                                          request.model_roots().end()},
                                         "params.model_path");
  if (!resolved.ok()) return resolved.status();
  engine_config->model_path = *resolved;
  engine_config->model_format = absl::EndsWith(*resolved, ".pt2")
                                    ? engine::ModelFormat::kAotiPackage
                                    : engine::ModelFormat::kTorchScript;
  HoldOpen(held, engine_config);
  return absl::OkStatus();
}

// Whether any run of the sweep compiles a package (execution aot).
bool CompilesAny(const std::vector<v1::RunConfig>& runs) {
  for (const v1::RunConfig& config : runs) {
    if (engine::IsCompiled(ToEngineConfig(config).execution)) return true;
  }
  return false;
}

// The user models the runs name, by the path the worker loads, and whether
// each is an AOTInductor package: what it may read once confined, and what
// it opens before it becomes the worker user. A model root may hold the data
// directory or a key: a path there is never "the model" (an upload, by hash,
// is the one file it may name).
std::map<std::string, bool> UserModels(const v1::WorkerRequest& request,
                                       const std::vector<v1::RunConfig>& runs) {
  const v1::WorkerConfinement& confinement = request.confinement();
  std::map<std::string, bool> models;
  for (const v1::RunConfig& config : runs) {
    engine::RunConfig located;
    if (!IsWorkload(config.workload(), WorkloadId::kTorchscript) || !LocateModel(request, config, &located).ok()) {
      continue;
    }
    if (config.params().model_sha256().empty() &&
        ResolvesWithin(located.model_path, {confinement.protected_paths().begin(),
                                            confinement.protected_paths().end()})) {
      continue;
    }
    models[located.model_path] = located.model_format == engine::ModelFormat::kAotiPackage;
  }
  return models;
}

// What this worker may reach once confined: the system's part, its scratch
// folder (write), its own /proc/PID, and each user model it was given
// (read). No execve, no new process, and no socket but a rank's.
ConfinementPolicy PolicyFor(const v1::WorkerRequest& request,
                            const std::vector<v1::RunConfig>& runs) {
  const v1::WorkerConfinement& confinement = request.confinement();
  ConfinementPolicy policy = SystemPolicy();
  policy.protected_paths.assign(confinement.protected_paths().begin(),
                                confinement.protected_paths().end());
  policy.write_trees.push_back(confinement.scratch_dir());
  // Its own /proc/PID (the link resolves now, to this process): CUDA's
  // driver names its threads there, and cuInit fails (error 304) if it
  // cannot.
  policy.write_trees.push_back("/proc/self");
  for (const std::string& p : confinement.read_paths()) policy.read_trees.push_back(p);
  if (const char* nvml = std::getenv("GPUBENCH_NVML_LIBRARY"); nvml != nullptr && *nvml) {
    policy.read_files.push_back(nvml);
  }
  if (request.has_rank()) policy.write_trees.push_back("/dev/shm");  // NCCL's buffers
  for (const auto& [path, is_package] : UserModels(request, runs)) {
    policy.read_files.push_back(path);
  }
  // The package cache, read only: a compiled point finds its package there
  // or fails (execve is refused), and no model can plant one.
  if (!request.aot().cache_dir().empty()) policy.read_files.push_back(request.aot().cache_dir());
  policy.forbid_exec = true;
  policy.forbid_processes = true;
  // Ranks meet over TCP on loopback and NCCL passes buffers over UNIX
  // sockets (a one-rank group too); every other worker gets no socket.
  bool distributed = request.has_rank();
  for (const v1::RunConfig& config : runs) {
    distributed = distributed || IsDistributedWorkload(config.workload());
  }
  policy.forbid_sockets = !distributed;
  return policy;
}

// How every run of the job is measured: the job-wide settings.
measure::MeasureConfig MeasureConfigOf(const v1::RunSettings& settings) {
  measure::MeasureConfig measure = ToMeasureConfig(settings.measurement());
  const v1::Profiling& profiling = settings.profiling();
  measure.profile = profiling.enabled();
  if (profiling.iterations() > 0) measure.profile_iterations = profiling.iterations();
  measure.profile_shapes = profiling.record_shapes();
  measure.profile_memory = profiling.profile_memory();
  if (profiling.top_operators() > 0) measure.profile_top_operators = profiling.top_operators();
  measure.telemetry = !settings.telemetry().disabled();
  measure.check_numerics = settings.check_numerics();
  if (settings.telemetry().interval_ms() > 0) {
    measure.telemetry_interval_ms = settings.telemetry().interval_ms();
  }
  return measure;
}

// LibTorch's intra-op threads for the run should it run on the CPU (the
// engine sets them only there), and why: spec.cpu_threads, else the CPUs
// this worker may use, shared by a distributed run's ranks, less the run's
// host loader threads.
void ChooseCpuThreads(int spec_cpu_threads, const cpu_cores::UsableCpus& usable,
                      engine::RunConfig* config) {
  const int loaders = config->input_source == engine::InputSource::kHost
                          ? config->pipeline.loader_threads
                          : 0;
  const cpu_cores::CpuThreads threads =
      cpu_cores::CpuThreadsFor(spec_cpu_threads, loaders, config->world_size, usable);
  config->cpu_threads = threads.count;
  config->cpu_threads_reason = threads.reason;
}

// How often a run in progress reports, at the least: a step that takes
// seconds and the profiled window report nothing of their own.
constexpr int64_t kHeartbeatMs = 1000;

// The most often a run reports within one phase. A window of tiny steps
// (a launch's 2 us) ends every 20 us: each window's event, serialized here,
// coalesced by the daemon and streamed to a watching CLI, kept a core of
// the host busy beside the run (and the run called contended by it).
constexpr int64_t kProgressMs = 100;

// A run's progress events: each measured window's, from the run's thread,
// and its heartbeat's, from the heartbeat's, at most one a kProgressMs in a
// phase (a new phase's first always). Both write the worker's one stream,
// so through this writer alone while the run is in progress. The first
// write error is kept and later events dropped. Thread-safe.
class RunProgressWriter {
 public:
  RunProgressWriter(ipc::MessageWriter* writer, int index) : index_(index), writer_(writer) {}

  void Write(const measure::Progress& p) ABSL_LOCKS_EXCLUDED(mu_) {
    const auto now = std::chrono::steady_clock::now();
    absl::MutexLock lock(&mu_);
    if (p.phase == last_phase_ && now - last_ < std::chrono::milliseconds(kProgressMs)) return;
    last_phase_ = p.phase;
    last_ = now;
    v1::WorkerEvent event;
    v1::RunProgress* rp = event.mutable_run_progress();
    rp->set_index(index_);
    rp->set_phase(p.phase);
    rp->set_iterations(p.iterations);
    rp->set_throughput_samples_per_s(p.throughput_samples_per_s);
    rp->set_elapsed_ms(p.elapsed_ms);
    rp->set_eta_ms(p.eta_ms);
    if (status_.ok()) status_ = writer_->Write(event);
  }

  absl::Status status() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return status_;
  }

 private:
  const int index_;
  absl::Mutex mu_;
  ipc::MessageWriter* const writer_ ABSL_PT_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::string last_phase_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_ ABSL_GUARDED_BY(mu_);  // of the last event
};

// The runs the daemon gave this worker, one after the other, each
// reported as it starts, progresses and finishes. compiler: where execution
// aot gets its packages (null when no run is compiled).
class JobRunner {
 public:
  JobRunner(const v1::WorkerRequest& request, int out_fd, const std::atomic<bool>* cancel,
            AotCompiler* compiler, const HeldModels& held)
      : request_(request),
        writer_(out_fd),
        cancel_(cancel),
        compiler_(compiler),
        held_(held),
        measure_(MeasureConfigOf(request.settings())),
        rank_(request.rank()),
        ranked_(request.has_rank()),
        usable_cpus_(cpu_cores::UsableCpusOfThisProcess()) {
    for (const v1::RunConfig& config : request.out_of_memory()) RanOutOfMemory(config);
  }

  absl::Status Run() {
    if (ranked_) {
      if (auto s = CheckRank(rank_); !s.ok()) return s;
    }
    // Test hook: GPUBENCH_INJECT_OOM_RANK keeps the engine's injected
    // out-of-memory (GPUBENCH_INJECT_OOM_ABOVE_BYTES) to that rank.
    const char* oom_rank = std::getenv("GPUBENCH_INJECT_OOM_RANK");
    int only_rank = 0;
    if (oom_rank != nullptr && absl::SimpleAtoi(oom_rank, &only_rank) &&
        only_rank != (ranked_ ? rank_.rank() : 0)) {
      unsetenv("GPUBENCH_INJECT_OOM_ABOVE_BYTES");
    }
    // A rank of a distributed run: rank 0 opens the rendezvous store first
    // and reports its port, with which the daemon starts the other ranks.
    if (ranked_ && rank_.rank() == 0) {
      auto port = OpenStore(rank_);
      if (!port.ok()) return port.status();
      v1::WorkerEvent opened;
      opened.mutable_rendezvous()->set_store_port(*port);
      if (auto s = writer_.Write(opened); !s.ok()) return s;
    }
    for (const v1::PlannedRun& planned : request_.runs()) {
      if (auto s = RunPlanned(planned); !s.ok()) return s;
    }
    // Every rank is done with the group here: end it before the process
    // exits, while the CUDA driver is still up.
    engine::CloseGroup();
    v1::WorkerEvent done;
    done.mutable_done()->set_runs_executed(executed_);
    done.mutable_done()->set_cancelled(cancelled_ || (cancel_ != nullptr && cancel_->load()));
    return writer_.Write(done);
  }

 private:
  // The smallest batch size that ran out of memory, per batch-size axis
  // (the config's key without its batch size, as the job's
  // max_batch_size_fits counts them).
  void RanOutOfMemory(const v1::RunConfig& config) {
    auto [at, added] = oom_batch_.emplace(ConfigKeyWithoutBatch(config), config.batch_size());
    if (!added) at->second = std::min(at->second, config.batch_size());
  }

  // One run: started, measured (or failed, cancelled, skipped), finished.
  absl::Status RunPlanned(const v1::PlannedRun& planned) {
    const int i = planned.index();
    const v1::RunConfig& config = planned.config();
    const bool distributed = IsDistributedWorkload(config.workload());
    v1::Run run;
    std::string trace_json;  // of the profiled window, if one ran
    run.set_job_id(request_.job_id());
    run.set_index(i);
    *run.mutable_config() = config;
    *run.mutable_start_time() = Now();
    v1::WorkerEvent started;
    started.mutable_run_started()->set_index(i);
    *started.mutable_run_started()->mutable_config() = config;
    started.mutable_run_started()->set_run_count(request_.job_run_count());
    if (auto s = writer_.Write(started); !s.ok()) return s;

    MaybeInjectFault(config.batch_size(), ranked_ ? rank_.rank() : 0);
    engine::RunConfig engine_config = ToEngineConfig(config);
    const absl::Status ready = Prepare(config, &engine_config, &run);
    ChooseCpuThreads(request_.settings().cpu_threads(), usable_cpus_, &engine_config);  // after Prepare's ranks
    auto oom = oom_batch_.find(ConfigKeyWithoutBatch(config));
    if (!ready.ok()) {
      run.set_state(v1::RUN_STATE_FAILED);
      run.set_error(std::string(ready.message()));
    } else if (cancelled_) {
      run.set_state(v1::RUN_STATE_CANCELLED);
      run.set_error("job cancelled before this run started");
    } else if (oom != oom_batch_.end() && engine_config.batch_size >= oom->second) {
      run.set_state(v1::RUN_STATE_SKIPPED_AFTER_OOM);
      run.set_error("batch size " + std::to_string(oom->second) +
                    " of the same config ran out of memory");
    } else if (auto s = Execute(i, config, &engine_config, &run, &trace_json); !s.ok()) {
      return s;
    }
    *run.mutable_end_time() = Now();
    const v1::RunState state = run.state();
    v1::WorkerEvent finished;
    *finished.mutable_run_finished()->mutable_run() = std::move(run);
    finished.mutable_run_finished()->set_trace_json(std::move(trace_json));
    if (auto s = writer_.Write(finished); !s.ok()) return s;
    if (distributed && ranked_ && state != v1::RUN_STATE_SUCCEEDED &&
        state != v1::RUN_STATE_CANCELLED && state != v1::RUN_STATE_SKIPPED_AFTER_OOM) {
      // The other ranks may wait in a collective this rank will never
      // join: the daemon stops the group and goes on in fresh workers.
      return absl::AbortedError(absl::StrCat("rank ", rank_.rank(), "'s run ", i, " failed"));
    }
    return absl::OkStatus();
  }

  // Where the run's model is, and for ddp and collective this worker's
  // rank (or a group of one). Not OK: the run fails with it.
  absl::Status Prepare(const v1::RunConfig& config, engine::RunConfig* engine_config,
                       v1::Run* run) {
    absl::Status model = LocateModel(request_, config, engine_config, &held_);
    if (!IsDistributedWorkload(config.workload())) return model;
    if (ranked_) {
      SetRank(rank_, engine_config);
      for (const std::string& d : rank_.devices()) run->mutable_result()->add_rank_devices(d);
      return model;
    }
    if (config.world_size() > 1) {
      return absl::FailedPreconditionError(
          "world_size > 1: the daemon starts a worker per rank; this worker got no rank");
    }
    auto port = engine::OpenRendezvous(1);  // a group of one, this worker alone
    return port.ok() ? model : port.status();
  }

  // Measures the run (its package first, for execution aot) into run. Not
  // OK only where the event stream broke.
  absl::Status Execute(int index, const v1::RunConfig& config, engine::RunConfig* engine_config,
                       v1::Run* run, std::string* trace_json) {
    RunProgressWriter events(&writer_, index);
    // The loop's calls come between windows, outside the timed region.
    auto progress = [&events](const measure::Progress& p) { events.Write(p); };
    // Compiled execution: the package first (compiled now, or cached).
    std::optional<AotPackage> package;
    absl::Status compiled;
    if (engine::IsCompiled(engine_config->execution)) {
      auto target = engine::CompileTarget(engine_config->device);
      auto made = !target.ok()         ? absl::StatusOr<AotPackage>(target.status())
                  : compiler_ == nullptr ? absl::InternalError("execution aot: no compiler")
                                         : compiler_->Ensure(*engine_config, *target, cancel_);
      if (made.ok()) {
        package = *made;
        engine_config->aot_package = made->path;
      } else {
        compiled = made.status();
      }
    }
    engine::RunOutcome outcome;
    if (compiled.ok()) {
      // A thread beside the run's (the seccomp filter lets a confined
      // worker make threads), joined before the run's end is written.
      measure::RunState state;
      measure::Heartbeat heartbeat(&state, measure::SteadyClock(), kHeartbeatMs, progress);
      outcome = engine::RunOne(*engine_config, measure_, progress, cancel_, &state);
      heartbeat.Stop();
    } else {
      outcome.status = absl::IsCancelled(compiled) ? engine::RunStatus::kCancelled
                                                   : engine::RunStatus::kFailed;
      outcome.error = std::string(compiled.message());
    }
    if (package) {
      outcome.compile_ms = package->compile_ms;  // 0 when it came from the cache
      outcome.compile_cached = package->cached;
      if (package->temporary) {
        std::remove(package->path.c_str());
        rmdir(package->path.substr(0, package->path.rfind('/')).c_str());
      }
    }
    if (auto s = events.status(); !s.ok()) return s;
    FillRun(outcome, run);
    *trace_json = outcome.trace_json;
    if (!outcome.profile_error.empty()) {
      v1::WorkerEvent log;
      log.mutable_log()->set_text(outcome.profile_error);
      if (auto s = writer_.Write(log); !s.ok()) return s;
    }
    ++executed_;
    if (outcome.status == engine::RunStatus::kOutOfMemory) RanOutOfMemory(config);
    if (outcome.status == engine::RunStatus::kCancelled) cancelled_ = true;
    return absl::OkStatus();
  }

  const v1::WorkerRequest& request_;
  ipc::MessageWriter writer_;
  const std::atomic<bool>* const cancel_;
  AotCompiler* const compiler_;
  const HeldModels& held_;
  const measure::MeasureConfig measure_;
  const v1::RankAssignment& rank_;
  const bool ranked_;
  const cpu_cores::UsableCpus usable_cpus_;  // read once, as the job starts
  std::map<std::string, int> oom_batch_;
  int executed_ = 0;
  bool cancelled_ = false;
};

}  // namespace

absl::Status ServeOnce(int in_fd, int out_fd, const std::atomic<bool>* cancel) {
  ipc::MessageReader reader(in_fd);
  v1::WorkerRequest request;
  auto got = reader.Read(&request);
  if (!got.ok()) return got.status();
  if (!*got) return absl::InvalidArgumentError("no WorkerRequest on stdin");
  const v1::WorkerConfinement& confinement = request.confinement();
  std::vector<v1::RunConfig> configs;
  for (const v1::PlannedRun& run : request.runs()) configs.push_back(run.config());
  // The compile server, forked while this is the only thread and before the
  // worker's domain: each compile gets a domain of its own.
  std::unique_ptr<AotCompiler> compiler;
  if (CompilesAny(configs) && confinement.probes_size() == 0) {
    std::optional<ConfinementPolicy> compiler_policy;
    if (confinement.enabled()) {
      compiler_policy = SystemPolicy();
      compiler_policy->protected_paths.assign(confinement.protected_paths().begin(),
                                              confinement.protected_paths().end());
      for (const std::string& p : confinement.read_paths()) {
        compiler_policy->read_trees.push_back(p);
      }
    }
    // A worker user cannot read the cache (the daemon's, 0600): the server
    // hands it a copy in its scratch folder.
    std::optional<v1::RunAs> hand_to;
    if (confinement.has_run_as()) hand_to = confinement.run_as();
    auto started = AotCompiler::Start(request.aot(), std::move(compiler_policy), hand_to,
                                      confinement.scratch_dir());
    if (!started.ok()) return started.status();
    compiler = std::move(*started);
  }
  // Its scratch folder is its current folder: relative paths (LibTorch's
  // AOTInductor packages, aoti_tmp.cc) land there. Entered before it
  // becomes the worker user, who may not pass the folders above it.
  if ((confinement.enabled() || confinement.has_run_as()) && !confinement.scratch_dir().empty() &&
      chdir(confinement.scratch_dir().c_str()) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot enter the scratch folder ", confinement.scratch_dir(), ": ",
        std::strerror(errno)));
  }
  HeldModels held;
  if (confinement.has_run_as()) {
    auto opened = HoldModels(UserModels(request, configs), confinement.scratch_dir(),
                             confinement.run_as());
    if (!opened.ok()) return opened.status();
    held = std::move(*opened);
    for (const v1::RunConfig& config : configs) {
      engine::RunConfig located;
      if (IsWorkload(config.workload(), WorkloadId::kTorchscript) && config.params().model_sha256().empty() &&
          LocateModel(request, config, &located).ok() &&
          (held.fds.count(located.model_path) || held.copies.count(located.model_path))) {
        held.located[config.params().model_path()] = located.model_path;
      }
    }
    if (auto s = BecomeUser(confinement.run_as()); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot run as ", confinement.run_as().name(), ", so it runs nothing: ", s.message()));
    }
  }
  if (confinement.enabled()) {
    // Before anything of the job's runs, and while this is the only thread.
    if (auto s = Confine(PolicyFor(request, configs)); !s.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot confine the worker, so it runs nothing: ", s.message()));
    }
  }
  if (confinement.probes_size() > 0) return ReportProbes(confinement, out_fd);
  return JobRunner(request, out_fd, cancel, compiler.get(), held).Run();
}

v1::HostInfo ProbeHost() {
  // What a CPU run gets by default: the CPUs this process may use.
  const engine::DeviceProbe probe =
      engine::ProbeDevices(cpu_cores::UsableCpusOfThisProcess().count);
  v1::HostInfo host;
  host.set_torch_version(probe.torch_version);
  host.set_cuda_version(probe.cuda_version);
  host.set_cudnn_version(probe.cudnn_version);
  host.set_mps_available(probe.mps_available);
  host.set_cpu_blas(probe.cpu_blas);
  host.set_cpu_threads(probe.cpu_threads);
  host.set_gpubench_version(kGpubenchVersion);
  for (const auto& g : probe.gpus) {
    v1::GpuInfo* gpu = host.add_gpus();
    gpu->set_index(g.index);
    gpu->set_name(g.name);
    gpu->set_memory_bytes(g.memory_bytes);
    gpu->set_compute_capability(g.compute_capability);
    gpu->set_multiprocessor_count(g.multiprocessor_count);
    gpu->set_pci_bus_id(g.pci_bus_id);
  }
  *host.mutable_probe_time() = Now();
  return host;
}

}  // namespace gpubench::worker
