#include "worker/engine/engine.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/workload_registry.h"
#include "worker/engine/attention.h"
#include "worker/engine/compat.h"
#include "worker/engine/cpu_memory.h"
#include "worker/engine/cuda_support.h"
#include "worker/engine/distributed.h"
#include "worker/engine/grad_buckets.h"
#include "worker/engine/inject.h"
#include "worker/engine/language_model.h"
#include "worker/engine/models.h"
#include "worker/engine/numerics.h"
#include "worker/engine/pipeline.h"
#include "worker/engine/profile_window.h"
#include "worker/engine/workload.h"
#include "worker/profile_table.h"

namespace gpubench::engine {
namespace {

// Starts a new peak-RSS window: Linux resets VmHWM to the current RSS when
// "5" is written to clear_refs (kernel 4.0+), so each run reports its own
// peak rather than the process's.
void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

int64_t PeakRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      int64_t kb = 0;
      status >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

absl::StatusOr<torch::Device> ResolveDevice(const std::string& name) {
  if (name.empty() || name == "auto") {
    if (torch::cuda::is_available()) return torch::Device(torch::kCUDA, 0);
    if (at::hasMPS()) return torch::Device(torch::kMPS);
    return torch::Device(torch::kCPU);
  }
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (absl::StartsWith(name, "cuda")) {
    if (!torch::cuda::is_available()) {
      return absl::FailedPreconditionError(
          absl::StrCat("device \"", name, "\": no CUDA device is available"));
    }
    torch::Device device(name == "cuda" ? "cuda:0" : name);
    if (device.index() >= static_cast<int>(torch::cuda::device_count())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device \"", name, "\": only ", torch::cuda::device_count(),
          " CUDA devices"));
    }
    return device;
  }
  if (name == "mps") {
    if (!at::hasMPS()) {
      return absl::FailedPreconditionError("device \"mps\": MPS is not available");
    }
    return torch::Device(torch::kMPS);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown device \"", name, "\""));
}

// Sets global flags for the run's precision and cuDNN settings.
void ConfigureBackends(const RunConfig& c) {
  auto& ctx = at::globalContext();
  const bool tf32 = c.precision == Precision::kTf32;
  ctx.setAllowTF32CuBLAS(tf32);
  ctx.setAllowTF32CuDNN(tf32 || c.precision == Precision::kFp32Default);
  ctx.setBenchmarkCuDNN(c.cudnn_benchmark);
}

// The math the run's precision runs in on device, in words.
std::string MathMode(const RunConfig& c, const torch::Device& device) {
  const bool training = c.mode == Mode::kTrain;
  // A language model's inference and serving cast the weights, as a
  // server holds them (workloads/decode.cc, serve.cc): no autocast.
  const WorkloadInfo* info = FindWorkload(c.workload);
  const bool cast = !training && info != nullptr && info->language_model;
  switch (c.precision) {
    case Precision::kFp16:
      return IsCompiled(c.execution) ? "fp16 weights and activations (compiled)"
             : cast                  ? "fp16 weights and activations (cast, no autocast)"
             : training              ? "fp16 autocast, dynamic loss scaling"
                                     : "fp16 autocast";
    case Precision::kBf16:
      return IsCompiled(c.execution) ? "bf16 weights and activations (compiled)"
             : cast                  ? "bf16 weights and activations (cast, no autocast)"
                                     : "bf16 autocast";
    case Precision::kFp8:
      return "fp8 e4m3 operands, per-tensor scales, bf16 result (_scaled_mm)";
    default:
      break;
  }
  if (!device.is_cuda()) return "fp32";
  switch (c.precision) {
    case Precision::kTf32: return "fp32 tensors, TF32 in matmuls and convolutions";
    case Precision::kFp32Default:
      return "fp32 tensors, TF32 in cuDNN convolutions, not in matmuls (PyTorch's default)";
    default: return "fp32, TF32 off in matmuls and convolutions";
  }
}

// A built-in model (CreateModel's list) in the network loop, compiled where
// the execution asks; ddp trains its ddp_model so.
WorkloadOrError MakeNetworkWorkload(const RunConfig& c, torch::Device device,
                                    const MeasureConfig& m) {
  RunConfig model_config = c;
  model_config.workload = std::string(ModelWorkload(c.workload, c.ddp_model));
  auto model = CreateModel(model_config);
  if (!model.ok()) return model.status();
  if (IsCompiled(c.execution)) {
    auto compiled = LoadCompiledModel(*model, c, device);
    if (!compiled.ok()) return compiled.status();
    return NewNetworkWorkload(c, device, *compiled, m);
  }
  return NewNetworkWorkload(c, device, *model, m);
}

WorkloadOrError MakeWorkload(const RunConfig& c, torch::Device device, const MeasureConfig& m) {
  using Factory = WorkloadOrError (*)(const RunConfig&, torch::Device, const MeasureConfig&);
  // One line per workload that is not a built-in model: its engine half,
  // worker/engine/workloads/NAME.cc.
  static const std::pair<WorkloadId, Factory> kWorkloads[] = {
      {WorkloadId::kCollective, NewCollectiveWorkload},
      {WorkloadId::kMatmul, NewMatmulWorkload},
      {WorkloadId::kCopy, NewCopyWorkload},
      {WorkloadId::kEmpty, NewEmptyWorkload},
      {WorkloadId::kAttention, NewAttentionWorkload},
      {WorkloadId::kTorchscript, NewTorchScriptWorkload},
      {WorkloadId::kDdp, MakeNetworkWorkload},
  };
  const WorkloadInfo* info = FindWorkload(c.workload);
  for (const auto& [id, factory] : kWorkloads) {
    if (info != nullptr && info->id == id) return factory(c, device, m);
  }
  // A language model infers by prefilling and decoding; it trains as any
  // network.
  if (info != nullptr && info->language_model && c.mode == Mode::kInfer) {
    return NewDecodeWorkload(c, device, m);
  }
  return MakeNetworkWorkload(c, device, m);
}

// The run as NVTX ranges name it: "gpubench resnet50 train b32 fp16 cuda_graph".
std::string RangeLabel(const RunConfig& c) {
  static const char* const kExecution[] = {"", "", "cuda_graph", "aot", "aot_cuda_graph"};
  std::string label = absl::StrCat("gpubench ", c.workload);
  if (c.mode != Mode::kUnspecified) {
    absl::StrAppend(&label, c.mode == Mode::kTrain   ? " train"
                            : c.mode == Mode::kServe ? " serve"
                                                     : " infer");
  }
  absl::StrAppend(&label, " b", c.batch_size);
  if (c.precision != Precision::kUnspecified) {
    absl::StrAppend(&label, " ", PrecisionName(c.precision));
  }
  const auto e = static_cast<size_t>(c.execution);
  if (e > 1 && e < 5) absl::StrAppend(&label, " ", kExecution[e]);
  return label;
}

void Summarize(const measure::Outcome& m, int64_t samples_per_iteration,
               RunOutcome* out) {
  out->device_ms = m.device_ms;
  out->host_ms = m.host_ms;
  out->data_wait_ms = m.data_wait_ms;
  out->latency_ms = stats::Summarize(m.device_ms);
  out->host_latency_ms = stats::Summarize(m.host_ms);
  out->cold_start_ms = m.cold_start_ms;
  out->iterations = m.iterations;
  out->measured_ms = m.measured_ms;
  out->stable = m.stable;
  out->stopped_at_max_time = m.stopped_at_max_time;
  out->window_cv = m.window_cv;
  out->trials = m.trials;
  if (m.measured_ms > 0) {
    out->throughput_samples_per_s =
        m.iterations * samples_per_iteration / (m.measured_ms / 1e3);
    double wait = 0, busy = 0;
    for (double w : m.data_wait_ms) wait += w;
    for (double d : m.device_ms) busy += d;
    out->data_wait_share = std::min(1.0, wait / m.measured_ms);
    out->device_busy_share = std::min(1.0, busy / m.measured_ms);
  }
  out->throughput_ci_low = m.throughput_ci_low;
  out->throughput_ci_high = m.throughput_ci_high;
  out->interval_basis = m.interval_basis;
  out->interval_samples = m.interval_samples;
}

// Achieved FLOP/s from the FLOPs of an iteration and the measured throughput.
void SetAchievedTflops(int64_t samples_per_iteration, RunOutcome* out) {
  if (out->flops_per_iteration > 0 && out->throughput_samples_per_s > 0) {
    out->achieved_tflops = out->flops_per_iteration * out->throughput_samples_per_s /
                           samples_per_iteration / 1e12;
  }
}

// The profiled window's figures per iteration for the roofline. Memory
// traffic: every byte the step allocated on the device written once and read
// once, plus the fp32 weights read (training: read, their gradients written,
// both read and the weights written by the optimizer: 4 times). A lower
// bound: re-reads and the input are not counted. None under a CUDA graph
// (replays allocate nothing) or a compiled package (its own allocations).
void RooflineFigures(const RunConfig& c, RunOutcome* out) {
  if (out->profiled_allocated_bytes > 0 && !UsesCudaGraph(c.execution) &&
      !IsCompiled(c.execution)) {
    const double weight_passes = c.mode == Mode::kTrain ? 4 : 1;
    out->memory_bytes_per_iteration = 2 * out->profiled_allocated_bytes +
                                      4.0 * out->parameter_count * weight_passes;
  }
  if (out->profiled_device_ms > 0 && out->iterations > 0 && out->measured_ms > 0) {
    out->profiled_device_share =
        std::min(1.0, out->profiled_device_ms / (out->measured_ms / out->iterations));
  }
}

}  // namespace

double NumericsTolerance(Precision precision) {
  switch (precision) {
    case Precision::kTf32:
    case Precision::kFp32Default: return 5e-3;
    case Precision::kFp16: return 1e-2;
    case Precision::kBf16: return 5e-2;
    default: return 1e-4;
  }
}

namespace {

// What the device cannot run, said before anything is built.
absl::Status CheckRunnable(const RunConfig& c, const torch::Device& device) {
  if (UsesCudaGraph(c.execution) && !device.is_cuda()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "execution ", c.execution == Execution::kCudaGraph ? "cuda_graph" : "aot_cuda_graph",
        " needs a CUDA device, not ", device.str()));
  }
  if (c.precision == Precision::kFp16 && device.is_cpu() && !IsWorkload(c.workload, WorkloadId::kMatmul) &&
      !IsWorkload(c.workload, WorkloadId::kCollective)) {
    return absl::FailedPreconditionError(
        "precision fp16 (autocast) needs a CUDA or MPS device; use bf16 on CPU");
  }
  return absl::OkStatus();
}

// Telemetry covers the measured windows only: the sampler starts as
// measuring begins (the function returned, called then) and its owner
// stops it (StopSampling). The source opens here, before: NVML's start-up
// takes tens of milliseconds, which a serving run's first measured
// requests would otherwise wait through (their TTFT).
std::function<void()> SampleWhileMeasuring(int device_index, const MeasureConfig& m,
                                           RunOutcome* out,
                                           std::unique_ptr<telemetry::Sampler>* sampler) {
  if (!m.telemetry) return {};
  // Shared: a std::function is copied, the source moved out once.
  auto source = std::make_shared<std::unique_ptr<telemetry::Source>>(
      device_index >= 0 ? telemetry::OpenNvml(cuda::PciBusId(device_index), device_index,
                                              &out->telemetry.unavailable_reason)
                        : telemetry::OpenHost());
  if (!*source) return {};
  return [source, interval = m.telemetry_interval_ms, sampler] {
    if (!*source) return;
    *sampler = std::make_unique<telemetry::Sampler>(std::move(*source), interval);
    (*sampler)->Start();
  };
}

// The sampler's series into out, keeping why a source was unavailable.
void StopSampling(std::unique_ptr<telemetry::Sampler>* sampler, RunOutcome* out) {
  if (!*sampler) return;
  const std::string reason = out->telemetry.unavailable_reason;
  out->telemetry = (*sampler)->Stop();
  out->telemetry.unavailable_reason = reason;
}

// The profiled window after the measured ones, and the roofline's figures.
void Profile(const RunConfig& c, Workload* workload, const MeasureConfig& m,
             const torch::Device& device, int64_t deadline_ns, const std::atomic<bool>* cancel,
             measure::RunState* state, RunOutcome* out) {
  // A user's model has no analytic FLOP count: in inference, the profiler's
  // count stands for it (backward operators it does not count).
  const bool count_flops =
      c.mode == Mode::kInfer && out->flops_per_iteration <= 0 && IsWorkload(c.workload, WorkloadId::kTorchscript);
  ProfileWindow(workload, m, device, count_flops, deadline_ns, cancel, state, out);
  if (c.world_size > 1 && !out->trace_json.empty()) {
    out->trace_json = profile::WithDistributedInfo(std::move(out->trace_json),
                                                   device.is_cuda() ? "nccl" : "gloo", c.rank,
                                                   c.world_size);
  }
  if (count_flops && out->profiled_flops > 0) {
    out->flops_per_iteration = out->profiled_flops;
    SetAchievedTflops(workload->samples_per_iteration(), out);
  }
  RooflineFigures(c, out);
}

// The run on its device: the workload built (and its group joined), the
// measured windows, then the profiled window and the numerics check where
// asked. Throws what LibTorch throws.
void RunOnDevice(const RunConfig& c, const torch::Device& device, const MeasureConfig& m,
                 const measure::ProgressFn& progress, const std::atomic<bool>* cancel,
                 measure::RunState* state, RunOutcome* out) {
  const int device_index = device.is_cuda() ? device.index() : -1;
  auto workload = MakeWorkload(c, device, m);
  if (!workload.ok()) {
    out->error = std::string(workload.status().message());
    return;
  }
  Workload* w = workload->get();
  w->range_label = RangeLabel(c);
  const bool distributed = IsDistributedWorkload(c.workload);
  if (distributed) {
    auto comm = dist::GroupFor(c, device);
    if (!comm.ok()) {
      out->error = std::string(comm.status().message());
      return;
    }
    w->JoinGroup(*comm, cancel);
  }
  std::unique_ptr<telemetry::Sampler> sampler;
  w->on_measure_begin = SampleWhileMeasuring(device_index, m, out, &sampler);
  auto measured = measure::Measure(m, w->samples_per_iteration(), measure::SteadyClock(), w,
                                   progress, distributed ? nullptr : cancel, state);
  if (device.is_cpu()) {
    // The tensors' own peak over the warm-up and measured windows (the
    // profiled window and the numerics check come after).
    out->peak_device_allocated_bytes = cpu_memory::PeakBytes();
  }
  if (device.is_mps()) {
    // The MPS allocator keeps no peak: what it holds as measuring ends
    // (model, optimizer state, the last step's tensors) stands for it.
    compat::MpsMemory(&out->peak_device_allocated_bytes, &out->peak_device_reserved_bytes);
  }
  StopSampling(&sampler, out);
  if (!measured.ok()) {
    out->error = std::string(measured.status().message());
    return;
  }
  if (measured->iterations == 0 && !measured->cancelled) {
    // The bound came before a measured step: a failed run, never a 0.
    out->error = absl::StrCat("nothing was measured within max_time_ms ", m.max_time_ms,
                              ": the first step alone took ",
                              static_cast<int64_t>(measured->cold_start_ms),
                              " ms; raise --max-time-ms");
    return;
  }
  Summarize(*measured, w->samples_per_iteration(), out);
  w->Report(out);
  if (out->latency_ms.p50 > 0) SetAchievedTflops(w->samples_per_iteration(), out);
  PeakFigures(c, device, out);
  // Every rank takes the same decision, or some would skip the later runs
  // that the others wait in.
  const bool cancelled =
      distributed ? w->Agree(cancel != nullptr && cancel->load()) : measured->cancelled;
  out->status = cancelled ? RunStatus::kCancelled : RunStatus::kSucceeded;
  // For a heartbeat: the profile phase holds the profiler's start too.
  auto phase = [state](measure::RunState::Phase p) {
    if (state != nullptr) state->SetPhase(p, measure::SteadyClock()->NowNs());
  };
  // The profiled window keeps to what is left of the run's bound.
  if (m.profile && !cancelled) {
    phase(measure::RunState::Phase::kProfile);
    Profile(c, w, m, device, measured->deadline_ns, distributed ? nullptr : cancel, state, out);
  }
  if (m.check_numerics && !measured->cancelled) {
    phase(measure::RunState::Phase::kNumerics);
    out->numerics = CheckNumerics(c, device);
  }
}

// A serving run: the scheduler runs it whole (workloads/serve.cc), its
// requests standing for a run's samples and its window for the measured
// time.
void ServeRun(const RunConfig& c, const torch::Device& device, const MeasureConfig& m,
              const std::atomic<bool>* cancel, measure::RunState* state, RunOutcome* out) {
  auto phase = [state](measure::RunState::Phase p) {
    if (state != nullptr) state->SetPhase(p, measure::SteadyClock()->NowNs());
  };
  if (state != nullptr) {
    state->Begin(measure::SteadyClock()->NowNs() + m.max_time_ms * 1000000);
  }
  phase(measure::RunState::Phase::kWarmup);
  std::unique_ptr<telemetry::Sampler> sampler;
  const std::function<void()> sample =
      SampleWhileMeasuring(device.is_cuda() ? device.index() : -1, m, out, &sampler);
  const absl::Status served = ServeOnDevice(c, device, m, cancel, [&] {
    phase(measure::RunState::Phase::kMeasure);
    if (sample) sample();
  }, out);
  StopSampling(&sampler, out);
  if (device.is_cpu()) out->peak_device_allocated_bytes = cpu_memory::PeakBytes();
  if (!served.ok()) {
    out->error = std::string(served.message());
    return;
  }
  const serve::Outcome& o = out->serve;
  out->iterations = o.requests;
  out->measured_ms = o.window_ms;
  out->throughput_samples_per_s = o.request_throughput;
  out->tokens_per_s = o.output_tokens_per_s;
  out->stopped_at_max_time = o.stopped_at_max_time;
  // No window rule: a serving run is whole when every measured request
  // finished.
  out->stable = o.requests == o.requests_asked;
  out->status = o.cancelled ? RunStatus::kCancelled : RunStatus::kSucceeded;
}

}  // namespace

RunOutcome RunOne(const RunConfig& c, const MeasureConfig& measure_config,
                  const measure::ProgressFn& progress,
                  const std::atomic<bool>* cancel, measure::RunState* state) {
  RunOutcome out;
  auto device = ResolveDevice(c.device);
  if (!device.ok()) {
    out.error = std::string(device.status().message());
    return out;
  }
  out.resolved_device = device->str();
  out.fingerprint = FingerprintOf(out.resolved_device);
  out.cpu_blas = CpuBlas();
  out.math_mode = MathMode(c, *device);
  if (auto s = CheckRunnable(c, *device); !s.ok()) {
    out.error = std::string(s.message());
    return out;
  }
  const int device_index = device->is_cuda() ? device->index() : -1;
  try {
    SetCpuThreads(c, device->is_cpu(), &out);
    torch::manual_seed(measure_config.seed);
    ConfigureBackends(c);
    if (auto s = SelectAttention(c.attention); !s.ok()) {
      out.error = std::string(s.message());
      return out;
    }
    if (device_index >= 0) {
      cuda::SetDevice(device_index);
      // Frees what earlier runs left cached, so peaks are this run's own.
      cuda::ResetPeakMemory(device_index);
    }
    ResetPeakRss();
    cpu_memory::Install();
    cpu_memory::ResetPeak();
    if (c.mode == Mode::kServe) {
      ServeRun(c, *device, measure_config, cancel, state, &out);
    } else {
      RunOnDevice(c, *device, measure_config, progress, cancel, state, &out);
    }
  } catch (const std::exception& e) {
    // c10::Error derives from std::exception.
    const std::string what = MessageOf(e);
    out.error = what;
    out.status = IsOutOfMemory(what) ? RunStatus::kOutOfMemory : RunStatus::kFailed;
  }
  if (device_index >= 0) {
    cuda::PeakMemory(device_index, &out.peak_device_allocated_bytes,
                     &out.peak_device_reserved_bytes);
  }
  out.peak_host_rss_bytes = PeakRssBytes();
  return out;
}

absl::StatusOr<int64_t> ModelParameterCount(const RunConfig& config) {
  try {
    auto model = CreateModel(config);
    if (!model.ok()) return model.status();
    return (*model)->ParameterCount();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(MessageOf(e));
  }
}

absl::Status SaveModelCheckpoint(const RunConfig& config, const std::string& path) {
  try {
    const RunConfig& c = config;
    torch::manual_seed(0);
    auto model = CreateModel(c);
    if (!model.ok()) return model.status();
    (*model)->eval();
    std::vector<int64_t> shape = {c.batch_size};
    const std::vector<int64_t> sample = (*model)->sample_shape();
    shape.insert(shape.end(), sample.begin(), sample.end());
    const torch::Tensor x = (*model)->input_kind() == InputKind::kTokens
                                ? torch::randint((*model)->vocab_size(), shape, torch::kInt64)
                                : torch::randn(shape);
    torch::NoGradGuard no_grad;
    const torch::Tensor y = (*model)->Forward(x);
    c10::Dict<std::string, at::Tensor> tensors;
    for (const auto& p : (*model)->named_parameters()) tensors.insert(p.key(), p.value());
    for (const auto& b : (*model)->named_buffers()) tensors.insert(b.key(), b.value());
    tensors.insert("__input__", x);
    tensors.insert("__output__", y);
    const std::vector<char> bytes = torch::pickle_save(tensors);
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::InternalError(MessageOf(e));
  }
}

absl::StatusOr<std::string> CompileTarget(const std::string& device_name) {
  auto device = ResolveDevice(device_name);
  if (!device.ok()) return device.status();
  std::string target = device->str();
  if (device->is_cpu()) {
    // Inductor compiles a CPU package for this CPU's vector extensions: a
    // data directory moved to another CPU must not reuse it.
    if (const std::string isa = CpuIsa(); !isa.empty()) absl::StrAppend(&target, " ", isa);
  }
  if (device->is_cuda()) {
    DeviceProbe probe;
    cuda::Probe(&probe);
    const int index = device->has_index() ? device->index() : 0;
    for (const DeviceProbe::Gpu& gpu : probe.gpus) {
      if (gpu.index == index) {
        target = absl::StrCat("cuda sm_", absl::StrReplaceAll(gpu.compute_capability, {{".", ""}}));
      }
    }
  }
  return absl::StrCat(target, " torch ", TORCH_VERSION);
}

}  // namespace gpubench::engine
