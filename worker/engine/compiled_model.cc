#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>

#include "worker/engine/aoti.h"
#include "worker/engine/workload.h"


namespace gpubench::engine {
namespace {

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
  double Metric(const torch::Tensor& output, const torch::Tensor& labels) override {
    return twin_->Metric(output, labels);
  }
  int64_t ParameterCount() const override { return CountParameters(*twin_); }

 private:
  std::shared_ptr<BenchModel> twin_;
  torch::inductor::AOTIModelPackageLoader loader_;
};
#endif

}  // namespace

absl::StatusOr<std::shared_ptr<BenchModel>> LoadCompiledModel(
    [[maybe_unused]] std::shared_ptr<BenchModel> twin, [[maybe_unused]] const RunConfig& c,
    [[maybe_unused]] const torch::Device& device) {
#if GPUBENCH_HAS_AOTI
  if (c.aot_package.empty()) {
    return absl::FailedPreconditionError("execution aot: no package was compiled for this run");
  }
  std::shared_ptr<CompiledModel> compiled;
  try {
    compiled = std::make_shared<CompiledModel>(std::move(twin), c.aot_package, device);
  } catch (const std::exception& e) {
    return absl::FailedPreconditionError(
        absl::StrCat("execution aot: cannot load the compiled package: ", MessageOf(e)));
  }
  return std::shared_ptr<BenchModel>(compiled);
#else
  return absl::FailedPreconditionError(absl::StrCat(
      "execution aot: this LibTorch (", TORCH_VERSION,
      ") has no AOTInductor package loader (2.6 or newer has)"));
#endif
}

}  // namespace gpubench::engine
