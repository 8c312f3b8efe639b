#include "worker/engine/workload.h"

#include "absl/strings/match.h"

namespace gpubench::engine {

// The errors LibTorch raises when an allocation fails: CUDA's and MPS's "out
// of memory", the CPU allocator's "can't allocate memory", and std::bad_alloc.
// Also raised on purpose by GPUBENCH_INJECT_OOM_ABOVE_BYTES so tests can
// exercise the OOM path.
bool IsOutOfMemory(const std::string& what) {
  return absl::StrContains(what, "out of memory") || absl::StrContains(what, "OutOfMemory") ||
         absl::StrContains(what, "can't allocate memory") ||
         absl::StrContains(what, "bad_alloc");
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

}  // namespace gpubench::engine
