#include "worker/engine/pipeline.h"

#include <ATen/record_function.h>

#include <chrono>
#include <random>
#include <stdexcept>
#include <string>

#include "worker/engine/inject.h"

namespace gpubench::engine {
namespace {

// The data set: this many encoded images, each about 1.75 x 1.4 times the
// crop's sides (an ImageNet photograph against a 224 crop).
constexpr int kImages = 16;

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

// Burns CPU for the configured extra cost, as a costly decoder would.
void Spin(int us) {
  if (us <= 0) return;
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

}  // namespace

HostPipeline::HostPipeline(const PipelineConfig& config, InputKind kind,
                           std::vector<int64_t> sample_shape,
                           int64_t token_low, int64_t token_high, int64_t batch_size,
                           bool pinned,
                           uint64_t seed)
    : config_(config),
      kind_(kind),
      sample_shape_(std::move(sample_shape)),
      token_low_(token_low),
      token_high_(token_high),
      batch_size_(batch_size),
      pinned_(pinned),
      seed_(seed),
      // As PyTorch's prefetch_factor: batches in flight per loader thread.
      capacity_(static_cast<size_t>(std::max(1, config.prefetch_depth)) *
                std::max(1, config.loader_threads)) {
  if (kind_ != InputKind::kTokens) {
    const int64_t h = sample_shape_[sample_shape_.size() - 2];
    const int64_t w = sample_shape_.back();
    auto images = JpegImages::Make(kImages, static_cast<int>(std::max<int64_t>(8, w * 7 / 4)),
                                   static_cast<int>(std::max<int64_t>(8, h * 7 / 5)), seed_);
    if (!images.ok()) throw std::runtime_error(std::string(images.status().message()));
    images_ = std::move(*images);
  }
  for (int i = 0; i < config_.loader_threads; ++i) {
    loaders_.emplace_back([this] { LoaderLoop(); });
  }
}

HostPipeline::~HostPipeline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  space_cv_.notify_all();
  ready_cv_.notify_all();
  for (auto& t : loaders_) t.join();
}

torch::Tensor HostPipeline::BuildBatch(int64_t batch_index) const {
  std::vector<int64_t> shape = {batch_size_};
  shape.insert(shape.end(), sample_shape_.begin(), sample_shape_.end());
  const int64_t per_sample = c10::multiply_integers(sample_shape_);
  auto options = torch::TensorOptions().pinned_memory(pinned_);
  MaybeInjectOom(c10::multiply_integers(shape) * (kind_ == InputKind::kTokens ? 8 : 4));
  torch::Tensor batch;
  if (kind_ == InputKind::kTokens) {
    batch = torch::empty(shape, options.dtype(torch::kInt64));
    int64_t* data = batch.data_ptr<int64_t>();
    for (int64_t s = 0; s < batch_size_; ++s) {
      std::mt19937_64 rng(seed_ ^ (batch_index * batch_size_ + s) * 0x9E3779B97F4A7C15ull);
      const uint64_t span = token_high_ - token_low_;
      for (int64_t i = 0; i < per_sample; ++i) {
        data[s * per_sample + i] = token_low_ + static_cast<int64_t>(rng() % span);
      }
      Spin(config_.extra_cost_us_per_sample);
    }
    return batch;
  }
  batch = torch::empty(shape, options.dtype(torch::kFloat32));
  float* data = batch.data_ptr<float>();
  const int64_t h = sample_shape_[sample_shape_.size() - 2];
  const int64_t w = sample_shape_.back();
  const int64_t frames = per_sample / (3 * h * w);  // 1 for images
  for (int64_t s = 0; s < batch_size_; ++s) {
    std::mt19937_64 rng(seed_ ^ (batch_index * batch_size_ + s) * 0x9E3779B97F4A7C15ull);
    for (int64_t f = 0; f < frames; ++f) {
      if (auto st = images_->Sample(rng(), h, w, data + s * per_sample + f * 3 * h * w);
          !st.ok()) {
        throw std::runtime_error(std::string(st.message()));
      }
    }
    Spin(config_.extra_cost_us_per_sample);
  }
  return batch;
}

void HostPipeline::LoaderLoop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Batches being built count against the depth too, so N threads never
      // run N - 1 batches past it.
      space_cv_.wait(lock, [this] {
        return stopping_ || ready_.size() + building_ < capacity_;
      });
      if (stopping_) return;
      ++building_;
    }
    torch::Tensor batch;
    std::exception_ptr error;
    try {
      batch = BuildBatch(next_batch_.fetch_add(1));
    } catch (...) {
      // E.g. pinned memory exhausted: the run fails, not the process.
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      --building_;
      if (error) {
        if (!error_) error_ = error;
        stopping_ = true;
      } else if (!stopping_) {
        ready_.push_back(std::move(batch));
      }
      if (stopping_ && !error) return;
    }
    ready_cv_.notify_all();
    if (error) {
      space_cv_.notify_all();
      return;
    }
  }
}

torch::Tensor HostPipeline::Next(double* wait_ms) {
  // In a profile, the step's wait for its batch (inline: the whole build)
  // is an operator of its own, so that compare --explain can name it.
  RECORD_FUNCTION("gpubench::next_batch", std::vector<c10::IValue>());
  const auto start = std::chrono::steady_clock::now();
  if (loaders_.empty()) {
    torch::Tensor batch = BuildBatch(next_batch_.fetch_add(1));
    *wait_ms = MsSince(start);
    return batch;
  }
  torch::Tensor batch;
  {
    std::unique_lock<std::mutex> lock(mu_);
    ready_cv_.wait(lock, [this] { return !ready_.empty() || error_; });
    if (ready_.empty()) std::rethrow_exception(error_);
    batch = std::move(ready_.front());
    ready_.pop_front();
  }
  space_cv_.notify_one();
  *wait_ms = MsSince(start);
  return batch;
}

}  // namespace gpubench::engine
