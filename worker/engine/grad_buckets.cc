#include "worker/engine/grad_buckets.h"

#include <algorithm>

namespace gpubench::engine::dist {
namespace {

// DistributedDataParallel's first bucket: small, so that communication
// starts early in backward.
constexpr int64_t kFirstBucketBytes = 1 << 20;

}  // namespace

GradBuckets::GradBuckets(const std::vector<torch::Tensor>& parameters, int64_t bucket_bytes,
                         Communicator* comm, int world_size)
    : comm_(comm), world_size_(world_size), parameters_(parameters) {
  const int n = static_cast<int>(parameters_.size());
  bucket_of_.assign(n, -1);
  filled_.assign(n, false);
  slices_.resize(n);
  // Reverse order; a bucket holds one dtype and device.
  int64_t bytes = 0;
  for (int i = n - 1; i >= 0; --i) {
    const torch::Tensor& p = parameters_[i];
    if (!p.requires_grad()) continue;
    const int64_t size = p.numel() * static_cast<int64_t>(p.element_size());
    // The bucket being filled: the first one's cap, or bucket_bytes.
    const int64_t cap = buckets_.size() == 1 ? kFirstBucketBytes : bucket_bytes;
    const bool fits = !buckets_.empty() && bytes + size <= cap &&
                      parameters_[buckets_.back().members.front()].scalar_type() ==
                          p.scalar_type() &&
                      parameters_[buckets_.back().members.front()].device() == p.device();
    if (!fits) {
      buckets_.emplace_back();
      bytes = 0;
    }
    buckets_.back().members.push_back(i);
    bucket_of_[i] = static_cast<int>(buckets_.size()) - 1;
    bytes += size;
  }
  for (Bucket& b : buckets_) {
    int64_t count = 0;
    for (int i : b.members) count += parameters_[i].numel();
    const torch::Tensor& first = parameters_[b.members.front()];
    b.flat = torch::zeros({count}, first.options().requires_grad(false));
    int64_t offset = 0;
    for (int i : b.members) {
      const torch::Tensor& p = parameters_[i];
      // The parameter's own layout (a channels_last weight's too), as
      // DistributedDataParallel's bucket views: the gradients copy in and
      // out element for element.
      torch::Tensor slice = b.flat.narrow(0, offset, p.numel());
      slices_[i] = p.is_non_overlapping_and_dense() ? slice.as_strided(p.sizes(), p.strides())
                                                    : slice.view(p.sizes());
      offset += p.numel();
    }
  }
  for (int i = 0; i < n; ++i) {
    if (bucket_of_[i] < 0) continue;
    hooks_.emplace_back(i, parameters_[i].register_hook(
                               [this, i](const torch::Tensor& grad) { OnGradient(i, grad); }));
  }
}

GradBuckets::~GradBuckets() {
  // The model may serve a later run: no hook may outlive this.
  for (const auto& [i, hook] : hooks_) parameters_[i].remove_hook(hook);
}

void GradBuckets::Arm() {
  std::lock_guard<std::mutex> lock(mu_);
  std::fill(filled_.begin(), filled_.end(), false);
  for (Bucket& b : buckets_) {
    b.pending = static_cast<int>(b.members.size());
    b.wait = nullptr;
  }
  next_start_ = 0;
  armed_ = true;
}

void GradBuckets::OnGradient(int index, const torch::Tensor& grad) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_ || filled_[index]) return;
  torch::NoGradGuard no_grad;
  slices_[index].copy_(grad);
  filled_[index] = true;
  --buckets_[bucket_of_[index]].pending;
  StartReadyLocked();
}

void GradBuckets::StartReadyLocked() {
  while (next_start_ < buckets_.size() && buckets_[next_start_].pending == 0) {
    Bucket& b = buckets_[next_start_++];
    b.wait = comm_->StartAllReduce(b.flat);
  }
}

void GradBuckets::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_) return;
  armed_ = false;
  torch::NoGradGuard no_grad;
  // A parameter backward did not reach (unused this step) adds zeros.
  for (size_t i = 0; i < filled_.size(); ++i) {
    if (bucket_of_[i] < 0 || filled_[i]) continue;
    slices_[i].zero_();
    filled_[i] = true;
    --buckets_[bucket_of_[i]].pending;
  }
  StartReadyLocked();
  for (Bucket& b : buckets_) {
    b.wait();
    b.flat.div_(world_size_);
  }
  for (size_t i = 0; i < parameters_.size(); ++i) {
    torch::Tensor& p = parameters_[i];
    if (bucket_of_[i] < 0 || !p.grad().defined()) continue;
    p.mutable_grad().copy_(slices_[i]);
  }
}

}  // namespace gpubench::engine::dist
