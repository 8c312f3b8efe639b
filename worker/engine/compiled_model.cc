#include <torch/torch.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "worker/engine/aoti.h"
#include "common/workload_registry.h"
#include "worker/engine/language_model.h"
#include "worker/engine/workload.h"


namespace gpubench::engine {
namespace {

class CompiledModel;
class CompiledLanguageModel;

#if GPUBENCH_HAS_AOTI
// The loader of one model of a package on device. Single-threaded: one run
// at a time, without the container's event waits, which a CUDA graph
// capture does not allow.
torch::inductor::AOTIModelPackageLoader Loader(const std::string& package, const char* model,
                                               const torch::Device& device) {
  return torch::inductor::AOTIModelPackageLoader(
      package, model, /*run_single_threaded=*/true, /*num_runners=*/1,
      device.is_cuda() && device.has_index() ? device.index() : -1);
}

// A model compiled from its Python twin whose C++ twin, kept on the CPU and
// out of the module tree (so that moving this model moves no weights),
// answers for the shapes, labels, loss and parameter count; the package
// holds its own weights on the device.
template <typename Model>
class AnsweredByTwin : public Model {
 public:
  explicit AnsweredByTwin(std::shared_ptr<Model> twin) : twin_(std::move(twin)) {}

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
  int64_t ParameterCount() const override { return twin_->ParameterCount(); }

 protected:
  const std::shared_ptr<Model> twin_;
};

// A built-in model whose forward pass runs the AOTInductor package compiled
// from its Python twin (execution aot).
class CompiledModel : public AnsweredByTwin<BenchModel> {
 public:
  CompiledModel(std::shared_ptr<BenchModel> twin, const RunConfig& c, const torch::Device& device)
      : AnsweredByTwin(std::move(twin)), loader_(Loader(c.aot_package, "model", device)) {}

  torch::Tensor Forward(const torch::Tensor& input) override {
    return loader_.run({input})[0];
  }

 private:
  torch::inductor::AOTIModelPackageLoader loader_;
};

// A language model's generation through its package's two models
// (worker/python/gpubench_models/lm_aot.py): "prefill" (prompt, caches) and
// "step" (token, position, caches), or a serving run's "prefill_slots"
// (prompts, slots, caches) and "rows" (tokens, positions, caches), each
// returning logits, which write the cache given in place. The cache is
// allocated here, once, and every call gets the same tensors, so a captured
// step replays. A step is always the masked form over the whole cache; the
// twin's weights are fp32.
class CompiledLanguageModel : public AnsweredByTwin<LanguageModel> {
 public:
  CompiledLanguageModel(std::shared_ptr<LanguageModel> twin, const RunConfig& c,
                        const torch::Device& device)
      : AnsweredByTwin(std::move(twin)),
        c_(c),
        device_(device),
        serving_(c.mode == Mode::kServe),
        prefill_(Loader(c.aot_package, serving_ ? "prefill_slots" : "prefill", device)),
        step_(Loader(c.aot_package, serving_ ? "rows" : "step", device)) {
    // The kernel SDPA dispatched to for each model's shapes, as the compile
    // recorded it.
    const auto metadata = prefill_.get_metadata();
    auto kernel = [&](const char* key) {
      auto it = metadata.find(key);
      return it == metadata.end() ? std::string("unknown") : "compiled " + it->second;
    };
    sequence_kernel = kernel(serving_ ? "attention_prefill_slots" : "attention_prefill");
    decode_kernel = kernel(serving_ ? "attention_rows" : "attention_step");
  }

  void AllocateCache(int64_t batch, int64_t capacity, torch::ScalarType dtype) override {
    // gpt attends with as many key/value heads as queries (a num_kv_heads
    // given for it is not its shape: the twins ignore it too).
    const int64_t kv_heads =
        !IsWorkload(c_.workload, WorkloadId::kGpt) && c_.num_kv_heads > 0 ? c_.num_kv_heads : c_.num_heads;
    const auto options = torch::TensorOptions().dtype(dtype).device(device_);
    dtype_ = dtype;
    caches_.clear();
    for (int i = 0; i < 2 * c_.num_layers; ++i) {
      caches_.push_back(
          torch::zeros({batch, kv_heads, capacity, c_.hidden_size / c_.num_heads}, options));
    }
    position_ = torch::zeros({1}, torch::TensorOptions().dtype(torch::kInt64).device(device_));
  }

  torch::Tensor Prefill(const torch::Tensor& prompt) override {
    return Run(&prefill_, {prompt}, false);
  }

  torch::Tensor Decode(const torch::Tensor& token, int64_t position) override {
    position_.fill_(position);
    return DecodeStatic(token, position_);
  }

  torch::Tensor DecodeStatic(const torch::Tensor& token, const torch::Tensor& position) override {
    return Run(&step_, {token, position}, false);
  }

  torch::Tensor PrefillSlots(const torch::Tensor& prompts, const torch::Tensor& slots,
                             int64_t start) override {
    if (start != 0) {
      throw std::runtime_error("execution aot: the package prefills whole prompts, not chunks");
    }
    return Run(&prefill_, {prompts, slots}, true);
  }

  // Over the whole cache, each row under its mask (the span is the eager
  // step's saving).
  torch::Tensor DecodeRows(const torch::Tensor& tokens, const torch::Tensor& positions,
                           int64_t /*span*/) override {
    return Run(&step_, {tokens, positions}, true);
  }

  // The twin's weights are fp32: the package's are in the cache's dtype.
  int64_t DecodeWeightBytes() const override {
    return twin_->DecodeWeightBytes() / 4 * torch::elementSize(dtype_);
  }
  int64_t CacheBytes() const override {
    int64_t bytes = 0;
    for (const torch::Tensor& t : caches_) bytes += t.numel() * t.element_size();
    return bytes;
  }

  torch::Tensor Forward(const torch::Tensor& /*input*/) override {
    throw std::runtime_error("execution aot: a language model's package generates; it has no "
                             "whole-sequence forward");
  }

 private:
  // One of the package's models on inputs, then the caches; serving: the
  // serving package's, which a generation's package has not (and back).
  torch::Tensor Run(torch::inductor::AOTIModelPackageLoader* model,
                    std::vector<torch::Tensor> inputs, bool serving) {
    if (serving != serving_) {
      throw std::runtime_error(serving_ ? "execution aot: a serving run's package only serves"
                                        : "execution aot: this package generates; it does not "
                                          "serve (compiled for another mode)");
    }
    inputs.insert(inputs.end(), caches_.begin(), caches_.end());
    return model->run(inputs)[0];
  }

  const RunConfig c_;
  const torch::Device device_;
  const bool serving_;  // mode serve: prefill_slots and rows
  torch::inductor::AOTIModelPackageLoader prefill_, step_;
  std::vector<torch::Tensor> caches_;  // k0, v0, k1, v1...
  torch::Tensor position_;
  torch::ScalarType dtype_ = torch::kFloat32;
};
#endif

// The message of a package that is missing or will not load.
absl::Status LoadError(const std::string& what) {
  return absl::FailedPreconditionError(absl::StrCat("execution aot: ", what));
}

// Compiled (CompiledModel or CompiledLanguageModel) over its twin and the
// run's package, or why it cannot be.
template <typename Compiled, typename Model>
absl::StatusOr<std::shared_ptr<Model>> Load([[maybe_unused]] std::shared_ptr<Model> twin,
                                            [[maybe_unused]] const RunConfig& c,
                                            [[maybe_unused]] const torch::Device& device) {
#if GPUBENCH_HAS_AOTI
  if (c.aot_package.empty()) return LoadError("no package was compiled for this run");
  try {
    return std::shared_ptr<Model>(std::make_shared<Compiled>(std::move(twin), c, device));
  } catch (const std::exception& e) {
    return LoadError(absl::StrCat("cannot load the compiled package: ", MessageOf(e)));
  }
#else
  return LoadError(absl::StrCat("this LibTorch (", TORCH_VERSION,
                                ") has no AOTInductor package loader (2.6 or newer has)"));
#endif
}

}  // namespace

absl::StatusOr<std::shared_ptr<BenchModel>> LoadCompiledModel(std::shared_ptr<BenchModel> twin,
                                                              const RunConfig& c,
                                                              const torch::Device& device) {
  return Load<CompiledModel>(std::move(twin), c, device);
}

absl::StatusOr<std::shared_ptr<LanguageModel>> LoadCompiledLanguageModel(
    std::shared_ptr<LanguageModel> twin, const RunConfig& c, const torch::Device& device) {
  return Load<CompiledLanguageModel>(std::move(twin), c, device);
}

}  // namespace gpubench::engine
