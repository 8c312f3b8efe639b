// A workload as the measurement loop drives it (a measure::Stepper with a
// device timer, NVTX ranges and a distributed group), the workloads'
// factories, and the helpers they share. Includes LibTorch: engine TUs only.
#ifndef GPUBENCH_WORKER_ENGINE_WORKLOAD_H_
#define GPUBENCH_WORKER_ENGINE_WORKLOAD_H_

#include <torch/torch.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "worker/engine/compat.h"
#include "worker/engine/config.h"
#include "worker/engine/cuda_support.h"
#include "worker/engine/distributed.h"
#include "worker/engine/types.h"
#include "worker/engine/models.h"

namespace gpubench::engine {

// The errors LibTorch raises when an allocation fails (CUDA's and MPS's
// "out of memory", the CPU allocator's, std::bad_alloc, and the injected
// one of GPUBENCH_INJECT_OOM_ABOVE_BYTES).
bool IsOutOfMemory(const std::string& what);

// An exception's message, without the C++ backtrace c10 errors carry.
std::string MessageOf(const std::exception& e);

torch::ScalarType ToScalarType(DType t);

// The element type of a kernel workload's operands (matmul, collective) at a
// precision: fp16 and bf16 as themselves, fp32 and tf32 as fp32.
torch::ScalarType OperandType(Precision precision);

// Modules have no memory-format to(): the 4-D parameters one by one.
void ToChannelsLast(torch::nn::Module& module);

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
  bool Ranked() const override { return comm_ != nullptr; }
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

// The workloads, one file each under worker/engine/workloads/; MakeWorkload
// (engine.cc) picks one by the run's workload name.

// A built-in network (or ddp's model, or a user's): train or infer on
// device or host input (workloads/network.cc).
std::unique_ptr<Workload> NewNetworkWorkload(const RunConfig& c, torch::Device device,
                                             std::shared_ptr<BenchModel> model,
                                             const MeasureConfig& m);
// The other workloads' engine halves, one file each (workloads/NAME.cc),
// listed once in MakeWorkload (engine.cc).
using WorkloadOrError = absl::StatusOr<std::unique_ptr<Workload>>;
WorkloadOrError NewCollectiveWorkload(const RunConfig& c, torch::Device device,
                                      const MeasureConfig& m);
WorkloadOrError NewMatmulWorkload(const RunConfig& c, torch::Device device,
                                  const MeasureConfig& m);
WorkloadOrError NewAttentionWorkload(const RunConfig& c, torch::Device device,
                                     const MeasureConfig& m);
WorkloadOrError NewCopyWorkload(const RunConfig& c, torch::Device device, const MeasureConfig& m);
WorkloadOrError NewEmptyWorkload(const RunConfig& c, torch::Device device,
                                 const MeasureConfig& m);
// A language model's inference: prefill, then decode with the KV cache
// (workloads/decode.cc).
WorkloadOrError NewDecodeWorkload(const RunConfig& c, torch::Device device,
                                  const MeasureConfig& m);
// A language model serving requests that arrive over time (mode serve;
// workloads/serve.cc): not a stepped workload, the scheduler of
// worker/serve.h runs it whole. Fills out->serve, the parameter count and
// the attention kernel; on_measure_begin is called as measuring begins.
// Errors: the model's, or the scheduler's. Throws what LibTorch throws.
absl::Status ServeOnDevice(const RunConfig& c, torch::Device device, const MeasureConfig& m,
                           const std::atomic<bool>* cancel,
                           const std::function<void()>& on_measure_begin, RunOutcome* out);
// A user's model: TorchScript, or an AOTInductor package.
WorkloadOrError NewTorchScriptWorkload(const RunConfig& c, torch::Device device,
                                       const MeasureConfig& m);
// A user's TorchScript module at batch_size, for the numerics check.
std::shared_ptr<BenchModel> LoadTorchScriptModel(const RunConfig& c, const torch::Device& device,
                                                 int64_t batch_size);
// A built-in model whose forward pass runs its compiled AOTInductor package
// (execution aot; compiled_model.cc).
absl::StatusOr<std::shared_ptr<BenchModel>> LoadCompiledModel(std::shared_ptr<BenchModel> twin,
                                                              const RunConfig& c,
                                                              const torch::Device& device);

}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_WORKLOAD_H_
