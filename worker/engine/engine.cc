#include "worker/engine/engine.h"

#include <torch/script.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>
#include <ext/stdio_filebuf.h>  // a model read from a descriptor
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <istream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/workload_defaults.h"
#include "worker/engine/compat.h"
#include "worker/engine/cuda_support.h"
#include "worker/engine/distributed.h"
#include "worker/engine/grad_buckets.h"
#include "worker/engine/inject.h"
#include "worker/engine/models.h"
#include "worker/engine/pipeline.h"

#if GPUBENCH_TORCH_AT_LEAST(2, 6) && \
    __has_include(<torch/csrc/inductor/aoti_package/model_package_loader.h>)
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#define GPUBENCH_HAS_AOTI 1
#else
#define GPUBENCH_HAS_AOTI 0
#endif

namespace gpubench::engine {
namespace {

constexpr int kPoolBatches = 4;  // device-input batches cycled through

// The errors LibTorch raises when an allocation fails: CUDA's and MPS's "out
// of memory", the CPU allocator's "can't allocate memory", and std::bad_alloc.
// Also raised on purpose by GPUBENCH_INJECT_OOM_ABOVE_BYTES so tests can
// exercise the OOM path.
bool IsOutOfMemory(const std::string& what) {
  return absl::StrContains(what, "out of memory") || absl::StrContains(what, "OutOfMemory") ||
         absl::StrContains(what, "can't allocate memory") ||
         absl::StrContains(what, "bad_alloc");
}

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

// An exception's message; c10 errors carry a C++ backtrace after it.
std::string MessageOf(const std::exception& e) {
  std::string what = e.what();
  if (auto nl = what.find("\nException raised from"); nl != std::string::npos) what.resize(nl);
  return what;
}

torch::ScalarType ToScalarType(DType t) {
  switch (t) {
    case DType::kFloat16: return torch::kFloat16;
    case DType::kBFloat16: return torch::kBFloat16;
    case DType::kInt64: return torch::kInt64;
    case DType::kInt32: return torch::kInt32;
    case DType::kUInt8: return torch::kUInt8;
    default: return torch::kFloat32;
  }
}

// The element type of a kernel workload's operands (matmul, collective) at a
// precision: fp16 and bf16 as themselves, fp32 and tf32 as fp32.
torch::ScalarType OperandType(Precision precision) {
  if (precision == Precision::kFp16) return torch::kFloat16;
  if (precision == Precision::kBf16) return torch::kBFloat16;
  return torch::kFloat32;
}

// Modules have no memory-format to(): the 4-D parameters one by one.
void ToChannelsLast(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) {
    if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
  }
}

// Sets global flags for the run's precision and cuDNN settings.
void ConfigureBackends(const RunConfig& c) {
  auto& ctx = at::globalContext();
  const bool tf32 = c.precision == Precision::kTf32;
  ctx.setAllowTF32CuBLAS(tf32);
  ctx.setAllowTF32CuDNN(tf32);
  ctx.setBenchmarkCuDNN(c.cudnn_benchmark);
}

// Autocast on for one forward pass, off again after it, with the weight-cast
// cache cleared so that casts never outlive an optimizer step.
class AutocastScope {
 public:
  AutocastScope(const torch::Device& device, Precision precision)
      : device_(device.type()),
        enabled_(precision == Precision::kFp16 ||
                 precision == Precision::kBf16) {
    if (!enabled_) return;
    compat::SetAutocast(device_, true,
                        precision == Precision::kFp16 ? torch::kFloat16
                                                      : torch::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!enabled_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    compat::SetAutocast(device_, false, torch::kFloat32);
  }

 private:
  const c10::DeviceType device_;
  const bool enabled_;
};

// SGD with momentum 0.9, or AdamW (weight decay 0.01). Where this LibTorch
// has PyTorch's fused kernels for the device (2.4+, CUDA and CPU), an update
// is one kernel per parameter dtype instead of several per parameter, and
// Step(found_inf) skips it on the device when found_inf is non-zero: fp16
// loss scaling then needs no host sync, in eager mode or in a CUDA graph
// (AdamW's step counts live on the device too). Elsewhere torch::optim.
class TrainOptimizer {
 public:
  // device and found_inf serve the fused kernels (LibTorch 2.4+ only).
  TrainOptimizer(std::vector<torch::Tensor> params, const RunConfig& c,
                 [[maybe_unused]] const torch::Device& device)
      : adamw_(c.optimizer == Optimizer::kAdamW), lr_(c.learning_rate) {
#if GPUBENCH_TORCH_AT_LEAST(2, 4)
    fused_ = device.is_cuda() || device.is_cpu();
#endif
    if (!fused_) {
      if (adamw_) {
        fallback_ = std::make_unique<torch::optim::AdamW>(
            params, torch::optim::AdamWOptions(lr_).weight_decay(kWeightDecay));
      } else {
        fallback_ = std::make_unique<torch::optim::SGD>(
            params, torch::optim::SGDOptions(lr_).momentum(kMomentum));
      }
      return;
    }
    torch::NoGradGuard no_grad;
    for (auto& p : params) {
      if (!p.requires_grad()) continue;
      State s;
      s.param = p;
      s.buffer = torch::zeros_like(p, at::MemoryFormat::Preserve);
      if (adamw_) {
        s.buffer2 = torch::zeros_like(p, at::MemoryFormat::Preserve);
        s.step = torch::zeros({}, p.options().dtype(torch::kFloat32));
      }
      states_.push_back(std::move(s));
    }
  }

  // Whether Step honours found_inf on the device.
  bool fused() const { return fused_; }

  void ZeroGrad() {
    if (!fused_) return fallback_->zero_grad();
    for (auto& s : states_) s.param.mutable_grad().reset();
  }

  // Updates every parameter that has a gradient; where found_inf is defined
  // and non-zero the fused kernels leave parameters and state unchanged.
  void Step([[maybe_unused]] const torch::Tensor& found_inf) {
    if (!fused_) return (void)fallback_->step();
#if GPUBENCH_TORCH_AT_LEAST(2, 4)
    torch::NoGradGuard no_grad;
    // The kernels take one dtype per call.
    std::map<at::ScalarType, Lists> groups;
    for (auto& s : states_) {
      if (!s.param.grad().defined()) continue;
      Lists& g = groups[s.param.scalar_type()];
      g.params.push_back(s.param);
      g.grads.push_back(s.param.grad());
      g.buffers.push_back(s.buffer);
      if (adamw_) {
        g.buffers2.push_back(s.buffer2);
        g.steps.push_back(s.step);
      }
    }
    const std::optional<at::Tensor> inf =
        found_inf.defined() ? std::optional<at::Tensor>(found_inf) : std::nullopt;
    for (auto& [dtype, g] : groups) {
      if (!adamw_) {
        at::_fused_sgd_(g.params, g.grads, g.buffers, /*weight_decay=*/0, kMomentum,
                        lr_, /*dampening=*/0, /*nesterov=*/false, /*maximize=*/false,
                        /*is_first_step=*/false, std::nullopt, inf);
        continue;
      }
      at::_foreach_add_(g.steps, 1);
      at::_fused_adamw_(g.params, g.grads, g.buffers, g.buffers2, {}, g.steps, lr_,
                        0.9, 0.999, kWeightDecay, 1e-8, /*amsgrad=*/false,
                        /*maximize=*/false, std::nullopt, inf);
      if (inf) {
        // A skipped step does not count (as in torch.optim).
        at::_foreach_sub_(g.steps, std::vector<at::Tensor>(g.steps.size(),
                                                            found_inf.reshape({})));
      }
    }
#endif
  }

 private:
  static constexpr double kMomentum = 0.9;
  static constexpr double kWeightDecay = 0.01;
  struct State {
    torch::Tensor param, buffer, buffer2, step;  // buffer: momentum or exp_avg
  };
  struct Lists {
    std::vector<at::Tensor> params, grads, buffers, buffers2, steps;
  };
  const bool adamw_;
  const double lr_;
  bool fused_ = false;
  std::vector<State> states_;
  std::unique_ptr<torch::optim::Optimizer> fallback_;
};

// A workload ready to step, plus what it reports beyond timings. A step is
// Fetch (wait for input: outside the device timer) then Compute (timed).
class Workload : public measure::Stepper {
 public:
  explicit Workload(torch::Device device)
      : device_(device), ranges_(device.is_cuda() && cuda::NvtxBuilt()) {
    if (device_.is_cuda()) timer_ = cuda::NewEventTimer();
  }

  absl::Status Step(double* data_wait_ms) override {
    *data_wait_ms = 0;
    Fetch(data_wait_ms);
    if (timer_) timer_->Begin();
    Compute();
    if (timer_) {
      timer_->End();
    } else if (device_.is_mps()) {
      // No MPS timer: finish each step so the host clock times the device.
      compat::MpsSynchronize();
    }
    return absl::OkStatus();
  }

  absl::Status Flush(std::vector<double>* device_ms) override {
    if (timer_) timer_->Collect(device_ms);
    return absl::OkStatus();
  }

  void Reserve(int window_iterations) override {
    if (timer_) timer_->Reserve(window_iterations);
  }

  void OnMeasureBegin() override {
    if (on_measure_begin) on_measure_begin();
  }
  std::function<void()> on_measure_begin;  // set by RunOne

  // NVTX ranges on CUDA: "<label>: warm-up", "<label>: window N", and an
  // "iteration" range with its index as payload (no string per step).
  void BeginRange(const char* kind, int index) override {
    if (!ranges_) return;
    if (std::strcmp(kind, "iteration") == 0) {
      cuda::RangePushIndexed("iteration", index);
    } else if (std::strcmp(kind, "window") == 0) {
      cuda::RangePush(absl::StrCat(range_label, ": ", kind, " ", index));
    } else {
      cuda::RangePush(absl::StrCat(range_label, ": ", kind));
    }
  }
  void EndRange() override {
    if (ranges_) cuda::RangePop();
  }
  std::string range_label = "gpubench";  // set by RunOne

  // A distributed run stops where any rank stops, or is cancelled.
  bool Agree(bool stop) override {
    if (comm_ == nullptr) return stop;
    return dist::AnyRank(comm_, stop || (cancel_ != nullptr && cancel_->load()), device_);
  }
  // Makes this one rank of a distributed run: the loop's decisions go
  // through comm, and cancel is read at them (never inside a window).
  void JoinGroup(dist::Communicator* comm, const std::atomic<bool>* cancel) {
    comm_ = comm;
    cancel_ = cancel;
    OnJoinGroup();
  }
  bool distributed() const { return comm_ != nullptr; }

  virtual int64_t samples_per_iteration() const = 0;
  virtual void Report(RunOutcome* /*out*/) {}

 protected:
  // Gets the next input ready; sets *data_wait_ms to the host time waited.
  virtual void Fetch(double* /*data_wait_ms*/) {}
  // Issues the step's device work.
  virtual void Compute() = 0;
  // Called once the workload is a rank of a group (comm_ set).
  virtual void OnJoinGroup() {}
  const torch::Device device_;
  dist::Communicator* comm_ = nullptr;  // a distributed run's group
  const std::atomic<bool>* cancel_ = nullptr;

 private:
  const bool ranges_;
  std::unique_ptr<cuda::EventTimer> timer_;
};

// A built-in or TorchScript network: train or infer on device or host input.
class NetworkWorkload : public Workload {
 public:
  NetworkWorkload(const RunConfig& c, torch::Device device,
                  std::shared_ptr<BenchModel> model, const MeasureConfig& m)
      : Workload(device), c_(c), model_(std::move(model)) {
    const bool image = model_->input_kind() == InputKind::kImage;
    channels_last_ = c.channels_last && image;
    model_->to(device_);
    if (channels_last_) ToChannelsLast(*model_);
    if (c.mode == Mode::kTrain) {
      model_->train();
      optimizer_ = std::make_unique<TrainOptimizer>(model_->parameters(), c, device_);
      if (c.precision == Precision::kFp16 && device_.is_cuda()) {
        auto f = torch::TensorOptions().device(device_).dtype(torch::kFloat32);
        scale_ = torch::full({1}, 65536.0, f);
        found_inf_ = torch::zeros({1}, f);
        growth_tracker_ = torch::zeros({1}, f.dtype(torch::kInt32));
      }
    } else {
      model_->eval();
    }
    std::vector<int64_t> shape = {c.batch_size};
    const auto sample = model_->sample_shape();
    shape.insert(shape.end(), sample.begin(), sample.end());
    const bool tokens = model_->input_kind() == InputKind::kTokens;
    const int64_t batch_bytes = c10::multiply_integers(shape) * (tokens ? 8 : 4);

    if (c.input_source == InputSource::kHost) {
      const bool pinned = c.pipeline.pinned_memory && device_.is_cuda();
      pipeline_ = std::make_unique<HostPipeline>(
          c.pipeline, model_->input_kind(), sample, model_->token_low(),
          model_->vocab_size(), c.batch_size, pinned, m.seed);
      if (device_.is_cuda() && c.pipeline.non_blocking) {
        copy_stream_ = cuda::NewCopyStream();
      }
    } else {
      MaybeInjectOom(batch_bytes);  // the host pipeline checks its own batches
      torch::NoGradGuard no_grad;
      auto options = torch::TensorOptions().device(device_);
      for (int i = 0; i < kPoolBatches; ++i) {
        torch::Tensor x =
            tokens ? torch::randint(model_->token_low(), model_->vocab_size(), shape,
                                    options.dtype(torch::kInt64))
                   : torch::randn(shape, options);
        pool_x_.push_back(Prepare(x));
        pool_y_.push_back(model_->Labels(x));
      }
    }
    if (UsesCudaGraph(c.execution)) {
      torch::Tensor x = pool_x_.empty() ? NextInput(nullptr) : pool_x_[0];
      static_x_ = x.clone();
      static_y_ = LabelsFor(static_x_).clone();
    }
  }

  // ddp counts every rank's samples.
  int64_t samples_per_iteration() const override { return c_.batch_size * world_size_; }

  void Report(RunOutcome* out) override {
    out->parameter_count = model_->ParameterCount();
    const double fwd = model_->ForwardFlopsPerSample() * c_.batch_size * world_size_;
    out->flops_per_iteration = c_.mode == Mode::kTrain ? 3 * fwd : fwd;
    if (first_loss_) out->first_loss = *first_loss_;
    if (last_loss_.defined()) out->last_loss = last_loss_.item<double>();
    if (last_out_.defined()) {
      torch::NoGradGuard no_grad;
      out->dice = model_->Metric(last_out_.to(torch::kFloat32), last_labels_);
    }
  }

 protected:
  void Fetch(double* data_wait_ms) override {
    if (pipeline_) {
      x_ = NextInput(data_wait_ms);
      y_ = LabelsFor(x_);
    } else {
      x_ = pool_x_[step_ % kPoolBatches];
      y_ = pool_y_[step_ % kPoolBatches];
    }
  }

  void Compute() override {
    if (UsesCudaGraph(c_.execution)) {
      GraphStep();
    } else {
      RunStep(x_, y_);
    }
    RecordFirstLoss();
    ++step_;
  }

 private:
  // ddp: every rank starts from rank 0's parameters and buffers, as
  // PyTorch's DistributedDataParallel does.
  void OnJoinGroup() override {
    world_size_ = c_.world_size;
    {
      torch::NoGradGuard no_grad;
      for (auto& p : model_->parameters()) comm_->Broadcast(p);
      for (auto& b : model_->buffers()) comm_->Broadcast(b);
    }
    // Buckets all-reduced while backward runs; a captured graph keeps the
    // one flat all-reduce after backward (its replay has no hooks to run).
    if (c_.ddp_bucket_mb > 0 && !UsesCudaGraph(c_.execution)) {
      buckets_ = std::make_unique<dist::GradBuckets>(
          model_->parameters(), int64_t{c_.ddp_bucket_mb} << 20, comm_, world_size_);
    }
  }

  // ddp: the gradients summed over the ranks and divided by their number:
  // the buckets' all-reduces started during backward (GradBuckets), else
  // one flat message after backward (ddp_bucket_mb 0, or a CUDA graph).
  void SyncGradients() {
    if (comm_ == nullptr) return;
    if (buckets_) {
      buckets_->Finish();
      return;
    }
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> grads, flat_parts;
    for (auto& p : model_->parameters()) {
      if (!p.grad().defined()) continue;
      grads.push_back(p.grad());
      flat_parts.push_back(p.grad().reshape({-1}));
    }
    if (grads.empty()) return;
    torch::Tensor flat = torch::cat(flat_parts);
    comm_->AllReduce(flat);
    flat.div_(world_size_);
    int64_t offset = 0;
    for (auto& g : grads) {
      g.copy_(flat.narrow(0, offset, g.numel()).view(g.sizes()));
      offset += g.numel();
    }
  }

  torch::Tensor Prepare(const torch::Tensor& x) const {
    return channels_last_ ? x.contiguous(at::MemoryFormat::ChannelsLast) : x;
  }

  torch::Tensor LabelsFor(const torch::Tensor& x) {
    torch::NoGradGuard no_grad;
    return model_->Labels(x);
  }

  torch::Tensor NextInput(double* wait_ms) {
    double wait = 0;
    torch::Tensor host = pipeline_->Next(&wait);
    if (wait_ms != nullptr) *wait_ms = wait;
    if (!device_.is_cuda()) return Prepare(host.to(device_));
    torch::Tensor x =
        copy_stream_ ? copy_stream_->Copy(host, device_, true) : host.to(device_);
    return Prepare(x);
  }

  // One step on (x, y): forward, and in training loss, backward and update.
  void RunStep(const torch::Tensor& x, const torch::Tensor& y) {
    if (buckets_) buckets_->Arm();
    if (c_.mode == Mode::kInfer) {
      torch::InferenceMode guard;
      AutocastScope autocast(device_, c_.precision);
      last_out_ = model_->Forward(x);
      last_labels_ = y;
      return;
    }
    optimizer_->ZeroGrad();
    torch::Tensor out, loss;
    {
      AutocastScope autocast(device_, c_.precision);
      out = model_->Forward(x);
      loss = model_->Loss(out, y);
    }
    if (scale_.defined()) {
      // Dynamic loss scaling. The fused optimizer skips an overflowing step
      // on the device; otherwise eager mode checks on the host, as
      // GradScaler does, and a captured graph (which cannot) zeroes the
      // gradients of an overflowing step on the device instead.
      (loss.to(torch::kFloat32) * scale_).backward();
      SyncGradients();
      found_inf_.zero_();
      std::vector<torch::Tensor> grads;
      for (auto& p : model_->parameters()) {
        if (p.grad().defined()) grads.push_back(p.grad());
      }
      at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_,
                                                     scale_.reciprocal());
      if (optimizer_->fused()) {
        optimizer_->Step(found_inf_);
      } else if (capturing_) {
        for (auto& g : grads) {
          g.copy_(torch::where(found_inf_ > 0, torch::zeros_like(g), g));
        }
        optimizer_->Step({});
      } else if (found_inf_.item<float>() == 0) {
        optimizer_->Step({});
      }
      at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, 2.0, 0.5,
                             2000);
    } else {
      loss.backward();
      SyncGradients();
      optimizer_->Step({});
    }
    // Kept as they are, not detached: a detach is one more operator dispatch
    // per step, and backward has already freed what their graph saved.
    last_loss_ = loss;
    last_out_ = out;
    last_labels_ = y;
  }

  void GraphStep() {
    // Copying the input into the graph's static buffers is part of the step.
    static_x_.copy_(x_, true);
    static_y_.copy_(y_, true);
    if (!graph_) {
      const auto start = std::chrono::steady_clock::now();
      capturing_ = true;
      auto graph = cuda::CaptureGraph([this] { RunStep(static_x_, static_y_); });
      capturing_ = false;
      if (!graph.ok()) throw std::runtime_error(std::string(graph.status().message()));
      graph_ = std::move(*graph);
      graph_capture_ms_ = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - start)
                              .count();
    }
    graph_->Replay();
  }

  void RecordFirstLoss() {
    // The first step is the untimed cold start, so reading it here costs no
    // measured time.
    if (!first_loss_ && last_loss_.defined()) {
      first_loss_ = last_loss_.item<double>();
    }
  }

 public:
  double graph_capture_ms_ = 0;

 private:
  const RunConfig c_;
  std::shared_ptr<BenchModel> model_;
  bool channels_last_ = false;
  std::unique_ptr<TrainOptimizer> optimizer_;
  torch::Tensor scale_, found_inf_, growth_tracker_;
  std::unique_ptr<HostPipeline> pipeline_;
  std::unique_ptr<cuda::CopyStream> copy_stream_;
  std::vector<torch::Tensor> pool_x_, pool_y_;
  torch::Tensor x_, y_;  // this step's input, from Fetch
  torch::Tensor static_x_, static_y_;
  std::unique_ptr<cuda::Graph> graph_;
  bool capturing_ = false;
  int64_t step_ = 0;
  std::optional<double> first_loss_;
  torch::Tensor last_loss_, last_out_, last_labels_;
  int world_size_ = 1;  // ddp: ranks
  std::unique_ptr<dist::GradBuckets> buckets_;  // ddp: see SyncGradients
};

// c10d collectives on a message of collective_bytes (nccl-tests' sizes:
// all-gather's output, reduce-scatter's input); reports nccl-tests'
// algorithm and bus bandwidth. An iteration is a burst of operations back
// to back, as nccl-tests issues its iterations between two
// synchronisations: the loop's per-iteration work (events, clocks) and a
// window's synchronisation are spread over them. A sample is one operation,
// and its device time the burst's mean. On the CPU (Gloo, milliseconds an
// operation, timed by the host clock) a burst is one operation.
class CollectiveWorkload : public Workload {
 public:
  CollectiveWorkload(const RunConfig& c, torch::Device device)
      : Workload(device), c_(c), ops_(device.is_cuda() ? OpsPerIteration(c.collective_bytes) : 1) {
    const torch::ScalarType dtype = OperandType(c.precision);
    const int64_t count = c.collective_bytes / static_cast<int64_t>(torch::elementSize(dtype));
    const int64_t share = count / std::max(1, c.world_size);
    MaybeInjectOom(c.collective_bytes * 2);
    auto options = torch::TensorOptions().device(device).dtype(dtype);
    switch (c.collective_op) {
      case CollectiveOp::kAllGather:
        in_ = torch::randn({share}, options);
        out_ = torch::empty({count}, options);
        break;
      case CollectiveOp::kReduceScatter:
        in_ = torch::randn({count}, options);
        out_ = torch::empty({share}, options);
        break;
      default:
        in_ = torch::randn({count}, options);
        break;
    }
  }
  int64_t samples_per_iteration() const override { return ops_; }

  absl::Status Flush(std::vector<double>* device_ms) override {
    const size_t first = device_ms->size();
    if (auto s = Workload::Flush(device_ms); !s.ok()) return s;
    for (size_t i = first; i < device_ms->size(); ++i) (*device_ms)[i] /= ops_;
    return absl::OkStatus();
  }

  void Report(RunOutcome* out) override {
    // Operations per second: back-to-back operations over the windows'
    // time, as nccl-tests averages its iterations.
    const double k = c_.world_size;
    double factor = 1;  // broadcast
    switch (c_.collective_op) {
      case CollectiveOp::kAllGather:
      case CollectiveOp::kReduceScatter:
        factor = (k - 1) / k;
        break;
      case CollectiveOp::kBroadcast:
        break;
      default:
        factor = 2 * (k - 1) / k;
        break;
    }
    out->algorithm_bandwidth_gb_per_s = c_.collective_bytes * out->throughput_samples_per_s / 1e9;
    out->bus_bandwidth_gb_per_s = out->algorithm_bandwidth_gb_per_s * factor;
  }

 protected:
  void Compute() override {
    for (int i = 0; i < ops_; ++i) {
      switch (c_.collective_op) {
        case CollectiveOp::kAllGather:
          comm_->AllGather(out_, in_);
          break;
        case CollectiveOp::kReduceScatter:
          comm_->ReduceScatter(out_, in_);
          break;
        case CollectiveOp::kBroadcast:
          comm_->Broadcast(in_);
          break;
        default:
          comm_->AllReduce(in_);
          break;
      }
    }
  }

 private:
  // 20 operations a burst (nccl-tests' default -n) up to 12.8 MiB, fewer
  // above (256 MiB a burst), one from 256 MiB: a burst stays near a
  // millisecond or two on NVLink, and a large message is its own burst.
  static int OpsPerIteration(int64_t bytes) {
    return static_cast<int>(std::clamp<int64_t>((int64_t{256} << 20) / std::max<int64_t>(1, bytes),
                                                1, 20));
  }

  const RunConfig c_;
  const int ops_;  // operations an iteration
  torch::Tensor in_, out_;
};

// C = A x B; reports TFLOP/s.
class MatmulWorkload : public Workload {
 public:
  MatmulWorkload(const RunConfig& c, torch::Device device) : Workload(device), c_(c) {
    const torch::ScalarType dtype = OperandType(c.precision);
    const int64_t bytes = (c.matmul_m * c.matmul_k + c.matmul_k * c.matmul_n +
                           c.matmul_m * c.matmul_n) *
                          torch::elementSize(dtype);
    MaybeInjectOom(bytes);
    auto options = torch::TensorOptions().device(device).dtype(dtype);
    // Random operands: zeros would run faster than real data.
    a_ = torch::randn({c.matmul_m, c.matmul_k}, options);
    b_ = torch::randn({c.matmul_k, c.matmul_n}, options);
    out_ = torch::empty({c.matmul_m, c.matmul_n}, options);
  }
  int64_t samples_per_iteration() const override { return 1; }
  void Report(RunOutcome* out) override {
    out->flops_per_iteration =
        2.0 * c_.matmul_m * c_.matmul_n * static_cast<double>(c_.matmul_k);
  }

 protected:
  void Compute() override { torch::matmul_out(out_, a_, b_); }

 private:
  const RunConfig c_;
  torch::Tensor a_, b_, out_;
};

// Issues nothing: its time per iteration is the harness's own cost per
// iteration (the loop, the host clock, and on CUDA the two timing events).
class EmptyWorkload : public Workload {
 public:
  explicit EmptyWorkload(torch::Device device) : Workload(device) {}
  int64_t samples_per_iteration() const override { return 1; }

 protected:
  void Compute() override {}
};

// One copy of copy_bytes per iteration; reports GB/s.
class CopyWorkload : public Workload {
 public:
  CopyWorkload(const RunConfig& c, torch::Device device)
      : Workload(device), bytes_(c.copy_bytes) {
    MaybeInjectOom(bytes_);
    const bool pinned = c.pipeline.pinned_memory && device.is_cuda();
    auto host = torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(pinned);
    auto dev = torch::TensorOptions().dtype(torch::kUInt8).device(device);
    switch (c.copy_direction) {
      case CopyDirection::kDeviceToHost:
        src_ = torch::randint(256, {bytes_}, dev);
        dst_ = torch::empty({bytes_}, host);
        break;
      case CopyDirection::kDeviceToDevice:
        src_ = torch::randint(256, {bytes_}, dev);
        dst_ = torch::empty({bytes_}, dev);
        break;
      default:
        src_ = torch::randint(256, {bytes_}, torch::kUInt8);
        if (pinned) src_ = src_.pin_memory();
        dst_ = torch::empty({bytes_}, dev);
        break;
    }
    non_blocking_ = pinned;
  }
  int64_t samples_per_iteration() const override { return 1; }
  void Report(RunOutcome* out) override {
    if (out->latency_ms.p50 > 0) {
      out->bandwidth_gb_per_s = bytes_ / (out->latency_ms.p50 * 1e-3) / 1e9;
    }
  }

 protected:
  void Compute() override { dst_.copy_(src_, non_blocking_); }

 private:
  const int64_t bytes_;
  bool non_blocking_ = false;
  torch::Tensor src_, dst_;
};

bool IsIntegral(DType t) {
  return t == DType::kInt64 || t == DType::kInt32 || t == DType::kUInt8;
}

// A user model's inputs after the first: random tensors of their shapes (the
// batch dimension set to batch_size) and dtypes, integers in their [low,
// high), made once. Drawn on the CPU, so that one seed gives the same values
// on every device; floating-point ones in float_type where it is defined.
std::vector<torch::Tensor> ExtraInputs(const std::vector<TensorSpec>& inputs,
                                       int64_t batch_size, const torch::Device& device,
                                       std::optional<torch::ScalarType> float_type) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> extra;
  for (size_t i = 1; i < inputs.size(); ++i) {
    std::vector<int64_t> shape = inputs[i].shape;
    if (!shape.empty()) shape[0] = batch_size;
    const torch::ScalarType dtype = IsIntegral(inputs[i].dtype) || !float_type
                                        ? ToScalarType(inputs[i].dtype)
                                        : *float_type;
    const auto options = torch::TensorOptions().dtype(dtype);
    torch::Tensor t = IsIntegral(inputs[i].dtype)
                          ? torch::randint(inputs[i].low, inputs[i].high, shape, options)
                          : torch::randn(shape, options.dtype(torch::kFloat32)).to(dtype);
    extra.push_back(t.to(device));
  }
  return extra;
}

// Every tensor in a TorchScript output: a tensor, or tuples, lists and dicts
// of them (dicts in insertion order), depth first.
void CollectTensors(const c10::IValue& v, std::vector<torch::Tensor>* out) {
  if (v.isTensor()) {
    out->push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTuple()->elements()) CollectTensors(e, out);
  } else if (v.isList()) {
    const c10::List<c10::IValue> list = v.toList();
    for (size_t i = 0; i < list.size(); ++i) CollectTensors(list.get(i), out);
  } else if (v.isGenericDict()) {
    for (const auto& entry : v.toGenericDict()) CollectTensors(entry.value(), out);
  }
}

// A user's TorchScript module, run in inference or trained on the sum of
// the means of its floating-point outputs. Its output may be a tensor, or a
// tuple, list or dict of them. Every input's first dimension is the batch.
// The first input is the one the loop varies (device pool or host pipeline);
// the others are random tensors of their shape and dtype, made once.
class TorchScriptModel : public BenchModel {
 public:
  TorchScriptModel(torch::jit::Module module, std::vector<TensorSpec> inputs,
                   int64_t batch_size)
      : module_(std::move(module)), inputs_(std::move(inputs)), batch_size_(batch_size) {
    // Expose the scripted parameters so an optimizer can train them.
    int i = 0;
    for (const auto& p : module_.parameters()) {
      register_parameter(absl::StrCat("p", i++), p, p.requires_grad());
    }
  }
  torch::Tensor Forward(const torch::Tensor& input) override {
    torch::ScalarType first = ToScalarType(inputs_[0].dtype);
    if (float_type_ && !IsIntegral(inputs_[0].dtype)) first = *float_type_;
    std::vector<torch::jit::IValue> args = {
        input.scalar_type() == first ? input : input.to(first)};
    if (extra_.empty() && inputs_.size() > 1) {
      extra_ = ExtraInputs(inputs_, batch_size_, input.device(), float_type_);
    }
    for (const auto& t : extra_) args.emplace_back(t);
    const c10::IValue out = module_.forward(args);
    if (out.isTensor()) return out.toTensor();
    std::vector<torch::Tensor> tensors;
    CollectTensors(out, &tensors);
    if (!module_.is_training()) {
      if (tensors.empty()) throw std::runtime_error("the model's output holds no tensor");
      return tensors[0];
    }
    // One loss over every head, so that each gets its gradient.
    torch::Tensor sum;
    for (const auto& t : tensors) {
      if (!t.is_floating_point()) continue;
      torch::Tensor mean = t.to(torch::kFloat32).mean();
      sum = sum.defined() ? sum + mean : mean;
    }
    if (!sum.defined()) {
      throw std::runtime_error("the model's output holds no floating-point tensor to train on");
    }
    return sum;
  }
  torch::Tensor Loss(const torch::Tensor& output, const torch::Tensor&) override {
    return output.to(torch::kFloat32).mean();
  }
  torch::Tensor Labels(const torch::Tensor& input) override {
    return torch::zeros({input.size(0)}, input.options().dtype(torch::kInt64));
  }
  std::vector<int64_t> sample_shape() const override {
    return std::vector<int64_t>(inputs_[0].shape.begin() + 1, inputs_[0].shape.end());
  }
  InputKind input_kind() const override {
    return IsIntegral(inputs_[0].dtype) ? InputKind::kTokens : InputKind::kImage;
  }
  int64_t vocab_size() const override { return inputs_[0].high; }
  int64_t token_low() const override { return inputs_[0].low; }
  double ForwardFlopsPerSample() const override { return 0; }
  void train(bool on) override { module_.train(on); }
  // The scripted module's own parameters and buffers (the registered
  // parameters are the same tensors), and its floating-point inputs.
  void ToFp64Reference() override {
    module_.to(torch::kFloat64);
    float_type_ = torch::kFloat64;
  }

 private:
  torch::jit::Module module_;
  std::optional<torch::ScalarType> float_type_;  // the inputs' dtype overridden
  const std::vector<TensorSpec> inputs_;
  const int64_t batch_size_;
  std::vector<torch::Tensor> extra_;
};

// The TorchScript module of a torchscript run, from its descriptor when the
// worker holds one (it read the file before it became the worker user),
// else from its path. The descriptor is duplicated, so every load reads the
// file from its start.
torch::jit::Module LoadScript(const RunConfig& c, const torch::Device& device) {
  if (c.model_fd < 0) return torch::jit::load(c.model_path, device);
  const int fd = dup(c.model_fd);
  if (fd < 0 || lseek(fd, 0, SEEK_SET) != 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("torchscript: cannot read the model it was given");
  }
  __gnu_cxx::stdio_filebuf<char> file(fd, std::ios::in);  // closes fd
  std::istream in(&file);
  return torch::jit::load(in, device);
}

#if GPUBENCH_HAS_AOTI
// An AOTInductor package (.pt2, from torch._inductor.aoti_compile_and_package):
// compiled for fixed input shapes and one device type; inference only.
class AotiModel : public BenchModel {
 public:
  AotiModel(const std::string& path, std::vector<TensorSpec> inputs, int64_t batch_size)
      : loader_(path), script_inputs_(std::move(inputs)), batch_size_(batch_size) {}
  torch::Tensor Forward(const torch::Tensor& input) override {
    const torch::ScalarType first = ToScalarType(script_inputs_[0].dtype);
    std::vector<torch::Tensor> args = {input.scalar_type() == first ? input : input.to(first)};
    if (extra_.empty() && script_inputs_.size() > 1) {
      extra_ = ExtraInputs(script_inputs_, batch_size_, input.device(), std::nullopt);
    }
    args.insert(args.end(), extra_.begin(), extra_.end());
    return loader_.run(args)[0];
  }
  torch::Tensor Loss(const torch::Tensor& output, const torch::Tensor&) override {
    return output.to(torch::kFloat32).mean();
  }
  torch::Tensor Labels(const torch::Tensor& input) override {
    return torch::zeros({input.size(0)}, input.options().dtype(torch::kInt64));
  }
  std::vector<int64_t> sample_shape() const override {
    return std::vector<int64_t>(script_inputs_[0].shape.begin() + 1,
                                script_inputs_[0].shape.end());
  }
  InputKind input_kind() const override {
    return IsIntegral(script_inputs_[0].dtype) ? InputKind::kTokens : InputKind::kImage;
  }
  int64_t vocab_size() const override { return script_inputs_[0].high; }
  int64_t token_low() const override { return script_inputs_[0].low; }
  double ForwardFlopsPerSample() const override { return 0; }

 private:
  torch::inductor::AOTIModelPackageLoader loader_;
  const std::vector<TensorSpec> script_inputs_;
  const int64_t batch_size_;
  std::vector<torch::Tensor> extra_;
};
#endif

#if GPUBENCH_HAS_AOTI
// A built-in model whose forward pass runs the AOTInductor package compiled
// from its Python twin (execution aot). The C++ twin, kept on the CPU and
// out of the module tree (so that moving this model moves no weights),
// answers for the shapes, labels, FLOPs and parameter count; the package
// holds its own weights on the device.
class CompiledModel : public BenchModel {
 public:
  CompiledModel(std::shared_ptr<BenchModel> twin, const std::string& package,
                const torch::Device& device)
      : twin_(std::move(twin)),
        // Single-threaded: one run at a time, without the container's
        // event waits, which a CUDA graph capture does not allow.
        loader_(package, "model", /*run_single_threaded=*/true, /*num_runners=*/1,
                device.is_cuda() && device.has_index() ? device.index() : -1) {}

  torch::Tensor Forward(const torch::Tensor& input) override {
    return loader_.run({input})[0];
  }
  torch::Tensor Loss(const torch::Tensor& output, const torch::Tensor& labels) override {
    return twin_->Loss(output, labels);
  }
  torch::Tensor Labels(const torch::Tensor& input) override { return twin_->Labels(input); }
  std::vector<int64_t> sample_shape() const override { return twin_->sample_shape(); }
  InputKind input_kind() const override { return twin_->input_kind(); }
  int64_t vocab_size() const override { return twin_->vocab_size(); }
  double ForwardFlopsPerSample() const override { return twin_->ForwardFlopsPerSample(); }
  double Metric(const torch::Tensor& output, const torch::Tensor& labels) override {
    return twin_->Metric(output, labels);
  }
  int64_t ParameterCount() const override { return CountParameters(*twin_); }

 private:
  std::shared_ptr<BenchModel> twin_;
  torch::inductor::AOTIModelPackageLoader loader_;
};
#endif

absl::StatusOr<std::unique_ptr<Workload>> MakeWorkload(const RunConfig& c,
                                                       torch::Device device,
                                                       const MeasureConfig& m) {
  if (c.workload == "collective") return std::make_unique<CollectiveWorkload>(c, device);
  if (c.workload == "ddp") {
    RunConfig model_config = c;
    model_config.workload = c.ddp_model;
    auto model = CreateModel(model_config);
    if (!model.ok()) return model.status();
    return std::make_unique<NetworkWorkload>(c, device, *model, m);
  }
  if (c.workload == "matmul") return std::make_unique<MatmulWorkload>(c, device);
  if (c.workload == "copy") return std::make_unique<CopyWorkload>(c, device);
  if (c.workload == "empty") return std::make_unique<EmptyWorkload>(device);
  if (c.workload == "torchscript") {
    if (c.inputs.empty() || c.inputs[0].shape.empty()) {
      return absl::InvalidArgumentError(
          "torchscript: give the model's input shapes (batch dimension first)");
    }
    if (c.model_format == ModelFormat::kAotiPackage) {
#if GPUBENCH_HAS_AOTI
      if (c.mode == Mode::kTrain) {
        return absl::InvalidArgumentError(
            "torchscript: AOTInductor packages (.pt2) are inference-only; use mode infer");
      }
      std::shared_ptr<AotiModel> model;
      try {
        model = std::make_shared<AotiModel>(c.model_path, c.inputs, c.batch_size);
      } catch (const std::exception& e) {
        return absl::InvalidArgumentError(
            absl::StrCat("torchscript: cannot load the AOTInductor package: ", MessageOf(e)));
      }
      return std::make_unique<NetworkWorkload>(c, device, model, m);
#else
      return absl::FailedPreconditionError(absl::StrCat(
          "torchscript: ", c.model_path, " is an AOTInductor package; this LibTorch (",
          TORCH_VERSION, ") has no package loader (2.6 or newer has)"));
#endif
    }
    auto model = std::make_shared<TorchScriptModel>(LoadScript(c, device),
                                                    c.inputs, c.batch_size);
    if (c.mode == Mode::kTrain && model->parameters().empty()) {
      return absl::InvalidArgumentError(
          "torchscript: the model has no trainable parameters; use mode infer");
    }
    return std::make_unique<NetworkWorkload>(c, device, model, m);
  }
  auto model = CreateModel(c);
  if (!model.ok()) return model.status();
  if (IsCompiled(c.execution)) {
#if GPUBENCH_HAS_AOTI
    if (c.aot_package.empty()) {
      return absl::FailedPreconditionError("execution aot: no package was compiled for this run");
    }
    std::shared_ptr<CompiledModel> compiled;
    try {
      compiled = std::make_shared<CompiledModel>(*model, c.aot_package, device);
    } catch (const std::exception& e) {
      return absl::FailedPreconditionError(
          absl::StrCat("execution aot: cannot load the compiled package: ", MessageOf(e)));
    }
    return std::make_unique<NetworkWorkload>(c, device, compiled, m);
#else
    return absl::FailedPreconditionError(absl::StrCat(
        "execution aot: this LibTorch (", TORCH_VERSION,
        ") has no AOTInductor package loader (2.6 or newer has)"));
#endif
  }
  return std::make_unique<NetworkWorkload>(c, device, *model, m);
}

// The run as NVTX ranges name it: "gpubench resnet50 train b32 fp16 cuda_graph".
std::string RangeLabel(const RunConfig& c) {
  static const char* const kPrecision[] = {"", "fp32", "tf32", "fp16", "bf16"};
  static const char* const kExecution[] = {"", "", "cuda_graph", "aot", "aot_cuda_graph"};
  std::string label = absl::StrCat("gpubench ", c.workload);
  if (c.mode != Mode::kUnspecified) {
    absl::StrAppend(&label, c.mode == Mode::kTrain ? " train" : " infer");
  }
  absl::StrAppend(&label, " b", c.batch_size);
  const auto p = static_cast<size_t>(c.precision);
  if (p > 0 && p < 5) absl::StrAppend(&label, " ", kPrecision[p]);
  const auto e = static_cast<size_t>(c.execution);
  if (e > 1 && e < 5) absl::StrAppend(&label, " ", kExecution[e]);
  return label;
}

// A separate profiled window after the timed one, so profiling never
// distorts the reported figures. Kineto writes the Chrome trace where the
// build has it; elsewhere (Debian's 1.13) the CPU operators make one.
//
// Profiles a few more steps: the operator table, the trace, and for the
// roofline the bytes allocated on the run's device and the kernel time, per
// iteration; with count_flops also the FLOPs the profiler counts (matmuls,
// convolutions, adds and multiplies: what a forward pass does). Memory
// events are always recorded (they are this window's only cost); the table
// leaves them out.
void ProfileWindow(Workload* workload, const MeasureConfig& m, const torch::Device& device,
                   bool count_flops, RunOutcome* out) {
  const bool cuda = device.is_cuda();
  namespace prof = torch::profiler::impl;
  namespace autograd_prof = torch::autograd::profiler;
  workload->BeginRange("profiled window", 0);
  struct EndRange {
    Workload* w;
    ~EndRange() { w->EndRange(); }
  } end_range{workload};
  bool enabled = false;
  try {
    prof::ProfilerConfig config(prof::ProfilerState::KINETO, m.profile_shapes || count_flops,
                                /*profile_memory=*/true, /*with_stack=*/false, count_flops);
    std::set<prof::ActivityType> activities = {prof::ActivityType::CPU};
    if (cuda) activities.insert(prof::ActivityType::CUDA);
    autograd_prof::prepareProfiler(config, activities);
    autograd_prof::enableProfiler(config, activities);
    enabled = true;
    std::vector<double> ignored;
    for (int i = 0; i < std::max(1, m.profile_iterations); ++i) {
      double wait = 0;
      if (auto s = workload->Step(&wait); !s.ok()) throw std::runtime_error(std::string(s.message()));
    }
    workload->Flush(&ignored).IgnoreError();
    enabled = false;
    std::unique_ptr<autograd_prof::ProfilerResult> result = autograd_prof::disableProfiler();
    std::vector<profile::Event> events;
    double allocated = 0, device_us = 0, flops = 0;
    for (const auto& e : result->events()) {
      if (count_flops) flops += static_cast<double>(e.flops());
      if (e.name() == "[memory]") {
        if (e.nBytes() > 0 && e.deviceType() == device.type()) allocated += e.nBytes();
        continue;
      }
      profile::Event ev;
      ev.name = e.name();
      ev.device = e.deviceType() != c10::DeviceType::CPU;
      ev.thread = e.startThreadId();
      ev.correlation = e.correlationId();
#if GPUBENCH_TORCH_AT_LEAST(2, 1)
      ev.start_us = e.startNs() / 1e3;
      ev.duration_us = e.durationNs() / 1e3;
#else
      ev.start_us = e.startUs();
      ev.duration_us = e.durationUs();
#endif
      if (ev.device) device_us += ev.duration_us;
      events.push_back(std::move(ev));
    }
    const int n = std::max(1, m.profile_iterations);
    out->profiled_allocated_bytes = allocated / n;
    out->profiled_flops = flops / n;
    out->profiled_device_ms = device_us / 1e3 / n;
    out->profile = profile::BuildTable(events, m.profile_top_operators);
    // Kineto's own trace (with device activities and flows) where it can
    // write one; else the events above.
    // In TMPDIR: a confined worker's scratch folder, the one place it writes.
    const char* tmp = std::getenv("TMPDIR");
    const std::string path = absl::StrCat(tmp != nullptr && *tmp == '/' ? tmp : "/tmp",
                                          "/gpubench-trace-", getpid(), ".json");
    try {
      result->save(path);
      std::ifstream in(path);
      out->trace_json.assign(std::istreambuf_iterator<char>(in), {});
    } catch (const std::exception&) {
    }
    std::remove(path.c_str());
    if (out->trace_json.empty()) out->trace_json = profile::ChromeTrace(events);
  } catch (const std::exception& e) {
    // Never leave the profiler on for the sweep's later runs.
    if (enabled) {
      try {
        autograd_prof::disableProfiler();
      } catch (const std::exception&) {
      }
    }
    // A rank of a distributed run that left the window early would leave
    // its peers waiting in a collective: the run fails, and the daemon
    // stops the group.
    if (workload->distributed()) throw;
    out->profile_error = "profiling failed: " + MessageOf(e);
  }
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
}

// Achieved FLOP/s from the FLOPs of an iteration and the measured throughput.
void SetAchievedTflops(int64_t samples_per_iteration, RunOutcome* out) {
  if (out->flops_per_iteration > 0 && out->throughput_samples_per_s > 0) {
    out->achieved_tflops = out->flops_per_iteration * out->throughput_samples_per_s /
                           samples_per_iteration / 1e12;
  }
}

// max |got - ref| and that over max |ref|, both in fp64 on the CPU.
std::pair<double, double> Errors(const torch::Tensor& got, const torch::Tensor& ref) {
  const torch::Tensor g = got.detach().to(torch::kCPU).to(torch::kFloat64);
  const torch::Tensor r = ref.detach().to(torch::kCPU).to(torch::kFloat64);
  const double abs = (g - r).abs().max().item<double>();
  const double scale = r.abs().max().item<double>();
  return {abs, scale > 0 ? abs / scale : abs};
}

// The model of run c (a fresh copy, seeded as every run is) on device in
// the run's precision and memory format, against a second copy in fp64 on
// the CPU: one forward pass on the same input, and in training the loss and
// the first parameter's gradient. At most 8 samples: the reference runs on
// the CPU in fp64.
NumericsOutcome CheckNumerics(const RunConfig& c, const torch::Device& device) {
  NumericsOutcome n;
  n.tolerance = NumericsTolerance(c.precision);
  if (IsCompiled(c.execution) || c.model_format == ModelFormat::kAotiPackage) {
    n.error = "a compiled package holds weights of its own in its own dtype; check the "
              "eager run of the same config";
    return n;
  }
  if (c.workload != "torchscript" && !IsModelWorkload(c.workload)) {
    n.error = absl::StrCat(c.workload, " is not a model");
    return n;
  }
  RunConfig small = c;
  small.batch_size = std::min<int64_t>(c.batch_size, 8);
  n.batch_size = small.batch_size;
  // A scripted module loads onto its device whole (its buffers too, which
  // are not among the registered parameters).
  auto load = [&](const torch::Device& on) -> absl::StatusOr<std::shared_ptr<BenchModel>> {
    torch::manual_seed(0);
    if (c.workload != "torchscript") return CreateModel(small);
    return std::shared_ptr<BenchModel>(std::make_shared<TorchScriptModel>(
        LoadScript(c, on), c.inputs, small.batch_size));
  };
  try {
    auto run_model = load(device);
    auto ref_model = load(torch::kCPU);
    if (!run_model.ok() || !ref_model.ok()) {
      n.error = std::string((run_model.ok() ? ref_model : run_model).status().message());
      return n;
    }
    BenchModel& a = **run_model;
    BenchModel& r = **ref_model;
    const bool train = c.mode == Mode::kTrain;
    const bool channels_last = c.channels_last && a.input_kind() == InputKind::kImage;
    a.to(device);
    if (channels_last) ToChannelsLast(a);
    r.ToFp64Reference();
    a.train(train);
    r.train(train);
    std::vector<int64_t> shape = {small.batch_size};
    const auto sample = a.sample_shape();
    shape.insert(shape.end(), sample.begin(), sample.end());
    torch::manual_seed(1);
    const bool tokens = a.input_kind() == InputKind::kTokens;
    const torch::Tensor x = tokens ? torch::randint(a.token_low(), a.vocab_size(), shape,
                                                    torch::kInt64)
                                   : torch::randn(shape);
    torch::Tensor xa = x.to(device);
    if (channels_last) xa = xa.contiguous(at::MemoryFormat::ChannelsLast);
    const torch::Tensor xr = tokens ? x : x.to(torch::kFloat64);
    torch::Tensor y;
    {
      torch::NoGradGuard no_grad;
      y = a.Labels(xa).to(torch::kCPU);
    }
    const torch::Tensor ya_labels = y.to(device);
    const torch::Tensor yr_labels = y.is_floating_point() ? y.to(torch::kFloat64) : y;
    torch::Tensor out_a, out_r, loss_a, loss_r;
    {
      std::optional<torch::NoGradGuard> no_grad;
      if (!train) no_grad.emplace();
      torch::manual_seed(2);  // the same extra inputs for a user model
      {
        AutocastScope autocast(device, c.precision);
        out_a = a.Forward(xa);
        if (train) loss_a = a.Loss(out_a, ya_labels);
      }
      torch::manual_seed(2);
      out_r = r.Forward(xr);
      if (train) loss_r = r.Loss(out_r, yr_labels);
    }
    n.checked = true;
    n.non_finite = !torch::isfinite(out_a.detach()).all().item<bool>() ||
                   (train && !torch::isfinite(loss_a.detach()).all().item<bool>());
    if (n.non_finite) return n;  // not passed; no error figure means much
    std::tie(n.output_max_abs_error, n.output_rel_error) = Errors(out_a, out_r);
    // The verdict: the output in inference, the loss in training. A
    // training step's output (BatchNorm on the batch's statistics) and its
    // first gradient (through every layer) amplify rounding: on the H100,
    // resnet50's first gradient differed 2e-2 from fp64 even in fp32.
    double verdict = n.output_rel_error;
    if (train) {
      std::tie(n.loss_abs_error, n.loss_rel_error) = Errors(loss_a, loss_r);
      loss_a.backward();
      loss_r.backward();
      const auto pa = a.named_parameters();
      const auto pr = r.named_parameters();
      for (size_t i = 0; i < pa.size() && i < pr.size(); ++i) {
        if (!pa[i].value().grad().defined() || !pr[i].value().grad().defined()) continue;
        n.gradient_parameter = pa[i].key();
        n.gradient_rel_error = Errors(pa[i].value().grad(), pr[i].value().grad()).second;
        break;
      }
      verdict = n.loss_rel_error;
    }
    n.passed = std::isfinite(verdict) && verdict <= n.tolerance;
  } catch (const std::exception& e) {
    n.checked = false;
    n.error = MessageOf(e);
  }
  return n;
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
    case Precision::kTf32: return 5e-3;
    case Precision::kFp16: return 1e-2;
    case Precision::kBf16: return 5e-2;
    default: return 1e-4;
  }
}

RunOutcome RunOne(const RunConfig& config, const MeasureConfig& measure_config,
                  const measure::ProgressFn& progress,
                  const std::atomic<bool>* cancel) {
  RunOutcome out;
  RunConfig c = config;
  ApplyWorkloadDefaults(&c);
  auto device = ResolveDevice(c.device);
  if (!device.ok()) {
    out.error = std::string(device.status().message());
    return out;
  }
  out.resolved_device = device->str();
  if (UsesCudaGraph(c.execution) && !device->is_cuda()) {
    out.error = absl::StrCat("execution ",
                             c.execution == Execution::kCudaGraph ? "cuda_graph" : "aot_cuda_graph",
                             " needs a CUDA device, not ", device->str());
    return out;
  }
  if (c.precision == Precision::kFp16 && device->is_cpu() &&
      c.workload != "matmul" && c.workload != "collective") {
    out.error = "precision fp16 (autocast) needs a CUDA or MPS device; use bf16 on CPU";
    return out;
  }
  const int device_index = device->is_cuda() ? device->index() : -1;
  try {
    torch::manual_seed(measure_config.seed);
    ConfigureBackends(c);
    if (device_index >= 0) {
      cuda::SetDevice(device_index);
      // Frees what earlier runs left cached, so peaks are this run's own.
      cuda::ResetPeakMemory(device_index);
    }
    ResetPeakRss();
    auto workload = MakeWorkload(c, *device, measure_config);
    if (!workload.ok()) {
      out.error = std::string(workload.status().message());
      return out;
    }
    (*workload)->range_label = RangeLabel(c);
    const bool distributed = IsDistributedWorkload(c.workload);
    if (distributed) {
      auto comm = dist::GroupFor(c, *device);
      if (!comm.ok()) {
        out.error = std::string(comm.status().message());
        return out;
      }
      (*workload)->JoinGroup(*comm, cancel);
    }
    // Telemetry covers the measured windows only: the sampler starts after
    // warm-up and stops when measuring ends.
    std::unique_ptr<telemetry::Sampler> sampler;
    if (measure_config.telemetry) {
      (*workload)->on_measure_begin = [&] {
        std::unique_ptr<telemetry::Source> source;
        if (device_index >= 0) {
          source = telemetry::OpenNvml(cuda::PciBusId(device_index), device_index,
                                       &out.telemetry.unavailable_reason);
        } else {
          source = telemetry::OpenHost();
        }
        if (!source) return;
        sampler = std::make_unique<telemetry::Sampler>(std::move(source),
                                                       measure_config.telemetry_interval_ms);
        sampler->Start();
      };
    }
    auto measured =
        measure::Measure(measure_config, (*workload)->samples_per_iteration(),
                         measure::SteadyClock(), workload->get(), progress,
                         distributed ? nullptr : cancel);
    if (device->is_mps()) {
      // The MPS allocator keeps no peak: what it holds as measuring ends
      // (model, optimizer state, the last step's tensors) stands for it.
      compat::MpsMemory(&out.peak_device_allocated_bytes, &out.peak_device_reserved_bytes);
    }
    if (sampler) {
      const std::string reason = out.telemetry.unavailable_reason;
      out.telemetry = sampler->Stop();
      out.telemetry.unavailable_reason = reason;
    }
    if (!measured.ok()) {
      out.error = std::string(measured.status().message());
      return out;
    }
    Summarize(*measured, (*workload)->samples_per_iteration(), &out);
    (*workload)->Report(&out);
    if (auto* net = dynamic_cast<NetworkWorkload*>(workload->get())) {
      out.graph_capture_ms = net->graph_capture_ms_;
    }
    if (out.latency_ms.p50 > 0) SetAchievedTflops((*workload)->samples_per_iteration(), &out);
    // Every rank takes the same decision, or some would skip the later
    // runs that the others wait in.
    const bool cancelled =
        distributed ? (*workload)->Agree(cancel != nullptr && cancel->load()) : measured->cancelled;
    out.status = cancelled ? RunStatus::kCancelled : RunStatus::kSucceeded;
    if (measure_config.profile && !cancelled) {
      // A user's model has no analytic FLOP count: in inference, the
      // profiler's count stands for it (backward operators it does not count).
      const bool count_flops = c.mode == Mode::kInfer && out.flops_per_iteration <= 0 &&
                               c.workload == "torchscript";
      ProfileWindow(workload->get(), measure_config, *device, count_flops, &out);
      if (count_flops && out.profiled_flops > 0) {
        out.flops_per_iteration = out.profiled_flops;
        SetAchievedTflops((*workload)->samples_per_iteration(), &out);
      }
      RooflineFigures(c, &out);
    }
    if (measure_config.check_numerics && !measured->cancelled) {
      out.numerics = CheckNumerics(c, *device);
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

DeviceProbe ProbeDevices() {
  DeviceProbe probe;
  probe.torch_version = TORCH_VERSION;
  probe.mps_available = at::hasMPS();
  cuda::Probe(&probe);
  return probe;
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
    RunConfig c = config;
    ApplyWorkloadDefaults(&c);
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

namespace {

// The instruction-set extensions Inductor's CPU code may use that this
// host's CPU has, in a fixed order ("avx2 avx512f avx512_bf16 amx_tile").
std::string CpuIsa() {
  static const char* const kExtensions[] = {
      "avx",         "avx2",        "fma",         "f16c",        "avx512f",    "avx512bw",
      "avx512vl",    "avx512dq",    "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
      "amx_bf16",    "amx_int8",    "avx_vnni",    "asimd",       "sve"};
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(cpuinfo, line)) {
    if (absl::StartsWith(line, "flags") || absl::StartsWith(line, "Features")) {
      for (absl::string_view f : absl::StrSplit(line.substr(line.find(':') + 1), ' ',
                                                absl::SkipEmpty())) {
        flags.insert(std::string(f));
      }
      break;
    }
  }
  std::vector<std::string> have;
  for (const char* e : kExtensions) {
    if (flags.count(e)) have.push_back(e);
  }
  return absl::StrJoin(have, " ");
}

}  // namespace

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
