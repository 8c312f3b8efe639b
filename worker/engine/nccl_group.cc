// NCCL through c10d (built where LibTorch has CUDA and NCCL's header is
// found: GPUBENCH_NCCL).
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <c10/cuda/CUDAGuard.h>
#include <dlfcn.h>
#include <nccl.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "worker/engine/distributed.h"

namespace gpubench::engine::dist {
namespace {

// A blocking collective on the current stream (LibTorch 2.7+:
// c10d's asyncOp = false, what Python's async_op=False sets): no side
// stream and no events between it and the work around it. Older LibTorch
// has no such option and runs every collective on NCCL's stream.
template <typename Options>
auto Blocking(Options options, int)
    -> decltype(options.asyncOp = false, Options()) {
  options.asyncOp = false;
  return options;
}
template <typename Options>
Options Blocking(Options options, long) {
  return options;
}

// A blocking collective may hand back no work at all (LibTorch 2.11 with
// asyncOp = false: it ran on the current stream); Python checks the same.
template <typename WorkPtr>
void Wait(const WorkPtr& work) {
  if (work) work->wait();
}

// NCCL's own entry points, from the libnccl that LibTorch loaded (looked
// up, not linked: the build links LibTorch only). Empty where one is
// missing.
struct NcclCalls {
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;

  static const NcclCalls* Get() {
    static const NcclCalls calls = [] {
      NcclCalls c;
      c.all_reduce = reinterpret_cast<decltype(&ncclAllReduce)>(
          dlsym(RTLD_DEFAULT, "ncclAllReduce"));
      c.all_gather = reinterpret_cast<decltype(&ncclAllGather)>(
          dlsym(RTLD_DEFAULT, "ncclAllGather"));
      c.reduce_scatter = reinterpret_cast<decltype(&ncclReduceScatter)>(
          dlsym(RTLD_DEFAULT, "ncclReduceScatter"));
      c.broadcast = reinterpret_cast<decltype(&ncclBroadcast)>(
          dlsym(RTLD_DEFAULT, "ncclBroadcast"));
      c.error_string = reinterpret_cast<decltype(&ncclGetErrorString)>(
          dlsym(RTLD_DEFAULT, "ncclGetErrorString"));
      return c;
    }();
    const bool complete = calls.all_reduce && calls.all_gather &&
                          calls.reduce_scatter && calls.broadcast &&
                          calls.error_string;
    return complete ? &calls : nullptr;
  }
};

bool NcclType(const torch::Tensor& t, ncclDataType_t* type) {
  static const std::pair<torch::ScalarType, ncclDataType_t> kTypes[] = {
      {torch::kFloat, ncclFloat},       {torch::kHalf, ncclHalf},
      {torch::kBFloat16, ncclBfloat16}, {torch::kDouble, ncclDouble},
      {torch::kInt, ncclInt32},         {torch::kLong, ncclInt64}};
  for (const auto& [scalar, nccl] : kTypes) {
    if (t.scalar_type() == scalar) {
      *type = nccl;
      return true;
    }
  }
  return false;
}

// Blocking collectives go to NCCL directly on the current stream once c10d
// has created the communicator (its first collective), as nccl-tests issues
// them. Through c10d's blocking path the host stalled for 17-25 ms at
// times at thousands of operations a second, and each operation cost the
// device more (bench/results/2026-11-26-h200x2-collective-direct.txt):
// mid-size messages, whose host issue rate barely keeps ahead of the GPU,
// lost up to a third of their time. Asynchronous all-reduces (ddp's
// buckets) stay with c10d, whose waits they need.
class NcclGroup : public Communicator {
 public:
  NcclGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank,
            int world_size)
      : pg_(c10::make_intrusive<c10d::ProcessGroupNCCL>(
            store, rank, world_size,
            c10d::ProcessGroupNCCL::Options::create())) {}

  std::function<void()> StartAllReduce(torch::Tensor& t) override {
    std::vector<at::Tensor> tensors{t};
    auto work = pg_->allreduce(tensors);
    return [work] { work->wait(); };
  }
  void AllReduce(torch::Tensor& t) override {
    ncclDataType_t type;
    if (ncclComm_t comm = Direct(t, &type)) {
      Check(calls_->all_reduce(t.data_ptr(), t.data_ptr(), t.numel(), type,
                               ncclSum, comm, Stream(t)));
      return;
    }
    std::vector<at::Tensor> tensors{t};
    Wait(pg_->allreduce(tensors, Blocking(c10d::AllreduceOptions(), 0)));
  }
  void AllGather(torch::Tensor& out, torch::Tensor& in) override {
    ncclDataType_t type;
    if (ncclComm_t comm = out.is_contiguous() ? Direct(in, &type) : nullptr) {
      Check(calls_->all_gather(in.data_ptr(), out.data_ptr(), in.numel(), type,
                               comm, Stream(in)));
      return;
    }
    Wait(pg_->_allgather_base(out, in, Blocking(c10d::AllgatherOptions(), 0)));
  }
  void ReduceScatter(torch::Tensor& out, torch::Tensor& in) override {
    ncclDataType_t type;
    if (ncclComm_t comm = out.is_contiguous() ? Direct(in, &type) : nullptr) {
      Check(calls_->reduce_scatter(in.data_ptr(), out.data_ptr(), out.numel(),
                                   type, ncclSum, comm, Stream(in)));
      return;
    }
    Wait(pg_->_reduce_scatter_base(out, in,
                                   Blocking(c10d::ReduceScatterOptions(), 0)));
  }
  void Broadcast(torch::Tensor& t) override {
    ncclDataType_t type;
    if (ncclComm_t comm = Direct(t, &type)) {
      Check(calls_->broadcast(t.data_ptr(), t.data_ptr(), t.numel(), type, 0,
                              comm, Stream(t)));
      return;
    }
    std::vector<at::Tensor> tensors{t};
    Wait(pg_->broadcast(tensors, Blocking(c10d::BroadcastOptions(), 0)));
  }
  void Shutdown() override {
    comm_ = nullptr;
    pg_->shutdown();
  }

 private:
  // The communicator to call NCCL on for t (contiguous, of a type NCCL
  // takes), or null: c10d then runs the operation (and creates the
  // communicator, the first time). An output must be contiguous too: NCCL
  // writes it as one flat buffer.
  ncclComm_t Direct(const torch::Tensor& t, ncclDataType_t* type) {
    if (calls_ == nullptr || !t.is_cuda() || !t.is_contiguous() ||
        !NcclType(t, type)) {
      return nullptr;
    }
    if (comm_ == nullptr) {
      c10::cuda::CUDAGuard guard(t.device());
      comm_ = reinterpret_cast<ncclComm_t>(pg_->getCommPtr());
    }
    return comm_;
  }
  static cudaStream_t Stream(const torch::Tensor& t) {
    return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
  }
  void Check(ncclResult_t result) const {
    TORCH_CHECK(result == ncclSuccess,
                "NCCL error: ", calls_->error_string(result));
  }

  c10::intrusive_ptr<c10d::ProcessGroupNCCL> pg_;
  const NcclCalls* const calls_ = NcclCalls::Get();
  ncclComm_t comm_ = nullptr;  // c10d's, once it made one
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> NewNcclGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size) {
  return std::make_unique<NcclGroup>(store, rank, world_size);
}

}  // namespace gpubench::engine::dist
