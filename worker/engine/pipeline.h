// The `host` input pipeline: loader threads build batches on the CPU the way
// an image data loader does (JPEG decode, random resized crop, flip,
// normalise: JpegImages), or draw token ids for the sequence models,
// collate them into pinned or pageable buffers and hand them to the loop.
// Internal to the engine.
#ifndef GPUBENCH_WORKER_ENGINE_PIPELINE_H_
#define GPUBENCH_WORKER_ENGINE_PIPELINE_H_

#include <torch/torch.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "worker/engine/config.h"
#include "worker/engine/jpeg_images.h"
#include "worker/engine/models.h"

namespace gpubench::engine {

// Thread-safe between its loader threads and one consumer calling Next().
class HostPipeline {
 public:
  // sample_shape: one sample without the batch dimension. With
  // config.loader_threads == 0, Next() builds each batch inline.
  HostPipeline(const PipelineConfig& config, InputKind kind,
               std::vector<int64_t> sample_shape, int64_t token_low, int64_t token_high,
               int64_t batch_size, bool pinned, uint64_t seed);
  ~HostPipeline();

  HostPipeline(const HostPipeline&) = delete;
  HostPipeline& operator=(const HostPipeline&) = delete;

  // The next batch on the host. *wait_ms is the time the caller waited for
  // it (inline: the time spent building it). Rethrows a loader thread's
  // exception (e.g. a failed pinned allocation) once the ready batches are
  // used up.
  torch::Tensor Next(double* wait_ms);

 private:
  torch::Tensor BuildBatch(int64_t batch_index) const;
  void LoaderLoop();

  // Const after construction.
  const PipelineConfig config_;
  const InputKind kind_;
  const std::vector<int64_t> sample_shape_;
  const int64_t token_low_, token_high_;  // kTokens: ids in [low, high)
  const int64_t batch_size_;
  const bool pinned_;
  const uint64_t seed_;
  const size_t capacity_;
  // Images: the encoded data set the loaders decode (null for tokens).
  std::unique_ptr<JpegImages> images_;

  std::atomic<int64_t> next_batch_{0};
  std::vector<std::thread> loaders_;

  std::mutex mu_;
  std::condition_variable ready_cv_;
  std::condition_variable space_cv_;
  std::deque<torch::Tensor> ready_ ABSL_GUARDED_BY(mu_);
  size_t building_ ABSL_GUARDED_BY(mu_) = 0;  // batches loaders are building
  std::exception_ptr error_ ABSL_GUARDED_BY(mu_);  // a loader's failure
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_PIPELINE_H_
