#include <torch/torch.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "worker/engine/grad_buckets.h"
#include "worker/engine/inject.h"
#include "worker/engine/pipeline.h"
#include "worker/engine/train_optimizer.h"
#include "worker/engine/workload.h"

namespace gpubench::engine {
namespace {

constexpr int kPoolBatches = 4;  // device-input batches cycled through

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
    out->graph_capture_ms = graph_capture_ms_;
    out->parameter_count = model_->ParameterCount();
    out->flops_per_iteration = FlopsPerSample(c_, model_->CausalAttentionKernel()) *
                               c_.batch_size * world_size_;
    out->attention_backend = model_->CausalAttentionKernel();
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

 private:
  double graph_capture_ms_ = 0;
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

}  // namespace

std::unique_ptr<Workload> NewNetworkWorkload(const RunConfig& c, torch::Device device,
                                             std::shared_ptr<BenchModel> model,
                                             const MeasureConfig& m) {
  return std::make_unique<NetworkWorkload>(c, device, std::move(model), m);
}

}  // namespace gpubench::engine
