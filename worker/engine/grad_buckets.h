// ddp's gradients, all-reduced in buckets while backward still runs, as
// PyTorch's DistributedDataParallel does: parameters go into buckets in
// reverse order (backward computes the last layers' gradients first), the
// first bucket at most 1 MiB and the others at most bucket_bytes, and a
// bucket's all-reduce starts as soon as its last gradient is ready, in
// bucket order on every rank. Internal to the engine; the hooks run on
// autograd's threads, the rest on the run's thread.
#ifndef GPUBENCH_WORKER_ENGINE_GRAD_BUCKETS_H_
#define GPUBENCH_WORKER_ENGINE_GRAD_BUCKETS_H_

#include <torch/torch.h>

#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "worker/engine/distributed.h"

namespace gpubench::engine::dist {

class GradBuckets {
 public:
  // Registers a gradient hook on each parameter (which must outlive this).
  GradBuckets(const std::vector<torch::Tensor>& parameters, int64_t bucket_bytes,
              Communicator* comm, int world_size);
  // Removes the hooks.
  ~GradBuckets();
  GradBuckets(const GradBuckets&) = delete;
  GradBuckets& operator=(const GradBuckets&) = delete;

  // Before each backward whose gradients should be all-reduced: the hooks
  // fill the buckets only between Arm and Finish.
  void Arm();

  // After backward: starts the buckets not yet started (a parameter without
  // a gradient counts as zeros), waits for every bucket, and writes the mean
  // over the ranks into each parameter's .grad.
  void Finish();

  int bucket_count() const { return static_cast<int>(buckets_.size()); }

 private:
  struct Bucket {
    torch::Tensor flat;          // the bucket's gradients, one after another
    std::vector<int> members;    // parameter indices
    int pending = 0;             // gradients not yet copied in this step
    std::function<void()> wait;  // set once started
  };
  void OnGradient(int index, const torch::Tensor& grad);
  void StartReadyLocked();  // buckets in order, while each is complete

  Communicator* const comm_;
  const int world_size_;
  std::vector<torch::Tensor> parameters_;
  std::vector<torch::Tensor> slices_;  // each parameter's view of its bucket, in its layout
  std::vector<int> bucket_of_;
  std::vector<bool> filled_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<int, unsigned>> hooks_;  // parameter index, hook
  std::mutex mu_;           // the state below and the buckets, across threads
  bool armed_ = false;
  size_t next_start_ = 0;  // the next bucket to start
};

}  // namespace gpubench::engine::dist

#endif  // GPUBENCH_WORKER_ENGINE_GRAD_BUCKETS_H_
