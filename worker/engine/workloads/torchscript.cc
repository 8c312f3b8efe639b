#include <torch/script.h>
#include <torch/torch.h>
#include <ext/stdio_filebuf.h>  // a model read from a descriptor
#include <unistd.h>

#include <istream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "worker/engine/aoti.h"
#include "worker/engine/workload.h"


namespace gpubench::engine {
namespace {

bool IsIntegral(DType t) {
  return t == DType::kInt64 || t == DType::kInt32 || t == DType::kUInt8;
}

// A user model's inputs after the first: random tensors of their shapes (the
// batch dimension set to batch_size) and dtypes, integers in their [low,
// high), made once. Drawn on the CPU, so that one seed gives the same values
// on every device; floating-point ones in float_type where it is defined.
std::vector<torch::Tensor> ExtraInputs(const std::vector<TensorSpec>& inputs,
                                       int64_t batch_size, const torch::Device& device,
                                       std::optional<torch::ScalarType> float_type) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> extra;
  for (size_t i = 1; i < inputs.size(); ++i) {
    std::vector<int64_t> shape = inputs[i].shape;
    if (!shape.empty()) shape[0] = batch_size;
    const torch::ScalarType dtype = IsIntegral(inputs[i].dtype) || !float_type
                                        ? ToScalarType(inputs[i].dtype)
                                        : *float_type;
    const auto options = torch::TensorOptions().dtype(dtype);
    torch::Tensor t = IsIntegral(inputs[i].dtype)
                          ? torch::randint(inputs[i].low, inputs[i].high, shape, options)
                          : torch::randn(shape, options.dtype(torch::kFloat32)).to(dtype);
    extra.push_back(t.to(device));
  }
  return extra;
}

// Every tensor in a TorchScript output: a tensor, or tuples, lists and dicts
// of them (dicts in insertion order), depth first.
void CollectTensors(const c10::IValue& v, std::vector<torch::Tensor>* out) {
  if (v.isTensor()) {
    out->push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTuple()->elements()) CollectTensors(e, out);
  } else if (v.isList()) {
    const c10::List<c10::IValue> list = v.toList();
    for (size_t i = 0; i < list.size(); ++i) CollectTensors(list.get(i), out);
  } else if (v.isGenericDict()) {
    for (const auto& entry : v.toGenericDict()) CollectTensors(entry.value(), out);
  }
}

// A user's TorchScript module, run in inference or trained on the sum of
// the means of its floating-point outputs. Its output may be a tensor, or a
// tuple, list or dict of them. Every input's first dimension is the batch.
// The first input is the one the loop varies (device pool or host pipeline);
// the others are random tensors of their shape and dtype, made once.
class TorchScriptModel : public BenchModel {
 public:
  TorchScriptModel(torch::jit::Module module, std::vector<TensorSpec> inputs,
                   int64_t batch_size)
      : module_(std::move(module)), inputs_(std::move(inputs)), batch_size_(batch_size) {
    // Expose the scripted parameters so an optimizer can train them.
    int i = 0;
    for (const auto& p : module_.parameters()) {
      register_parameter(absl::StrCat("p", i++), p, p.requires_grad());
    }
  }
  torch::Tensor Forward(const torch::Tensor& input) override {
    torch::ScalarType first = ToScalarType(inputs_[0].dtype);
    if (float_type_ && !IsIntegral(inputs_[0].dtype)) first = *float_type_;
    std::vector<torch::jit::IValue> args = {
        input.scalar_type() == first ? input : input.to(first)};
    if (extra_.empty() && inputs_.size() > 1) {
      extra_ = ExtraInputs(inputs_, batch_size_, input.device(), float_type_);
    }
    for (const auto& t : extra_) args.emplace_back(t);
    const c10::IValue out = module_.forward(args);
    if (out.isTensor()) return out.toTensor();
    std::vector<torch::Tensor> tensors;
    CollectTensors(out, &tensors);
    if (!module_.is_training()) {
      if (tensors.empty()) throw std::runtime_error("the model's output holds no tensor");
      return tensors[0];
    }
    // One loss over every head, so that each gets its gradient.
    torch::Tensor sum;
    for (const auto& t : tensors) {
      if (!t.is_floating_point()) continue;
      torch::Tensor mean = t.to(torch::kFloat32).mean();
      sum = sum.defined() ? sum + mean : mean;
    }
    if (!sum.defined()) {
      throw std::runtime_error("the model's output holds no floating-point tensor to train on");
    }
    return sum;
  }
  torch::Tensor Loss(const torch::Tensor& output, const torch::Tensor&) override {
    return output.to(torch::kFloat32).mean();
  }
  torch::Tensor Labels(const torch::Tensor& input) override {
    return torch::zeros({input.size(0)}, input.options().dtype(torch::kInt64));
  }
  std::vector<int64_t> sample_shape() const override {
    return std::vector<int64_t>(inputs_[0].shape.begin() + 1, inputs_[0].shape.end());
  }
  InputKind input_kind() const override {
    return IsIntegral(inputs_[0].dtype) ? InputKind::kTokens : InputKind::kImage;
  }
  int64_t vocab_size() const override { return inputs_[0].high; }
  int64_t token_low() const override { return inputs_[0].low; }
  void train(bool on) override { module_.train(on); }
  // The scripted module's own parameters and buffers (the registered
  // parameters are the same tensors), and its floating-point inputs.
  void ToFp64Reference() override {
    module_.to(torch::kFloat64);
    float_type_ = torch::kFloat64;
  }

 private:
  torch::jit::Module module_;
  std::optional<torch::ScalarType> float_type_;  // the inputs' dtype overridden
  const std::vector<TensorSpec> inputs_;
  const int64_t batch_size_;
  std::vector<torch::Tensor> extra_;
};

// The TorchScript module of a torchscript run, from its descriptor when the
// worker holds one (it read the file before it became the worker user),
// else from its path. The descriptor is duplicated, so every load reads the
// file from its start.
torch::jit::Module LoadScript(const RunConfig& c, const torch::Device& device) {
  if (c.model_fd < 0) return torch::jit::load(c.model_path, device);
  const int fd = dup(c.model_fd);
  if (fd < 0 || lseek(fd, 0, SEEK_SET) != 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("torchscript: cannot read the model it was given");
  }
  __gnu_cxx::stdio_filebuf<char> file(fd, std::ios::in);  // closes fd
  std::istream in(&file);
  return torch::jit::load(in, device);
}

#if GPUBENCH_HAS_AOTI
// An AOTInductor package (.pt2, from torch._inductor.aoti_compile_and_package):
// compiled for fixed input shapes and one device type; inference only.
class AotiModel : public BenchModel {
 public:
  AotiModel(const std::string& path, std::vector<TensorSpec> inputs, int64_t batch_size)
      : loader_(path), script_inputs_(std::move(inputs)), batch_size_(batch_size) {}
  torch::Tensor Forward(const torch::Tensor& input) override {
    const torch::ScalarType first = ToScalarType(script_inputs_[0].dtype);
    std::vector<torch::Tensor> args = {input.scalar_type() == first ? input : input.to(first)};
    if (extra_.empty() && script_inputs_.size() > 1) {
      extra_ = ExtraInputs(script_inputs_, batch_size_, input.device(), std::nullopt);
    }
    args.insert(args.end(), extra_.begin(), extra_.end());
    return loader_.run(args)[0];
  }
  torch::Tensor Loss(const torch::Tensor& output, const torch::Tensor&) override {
    return output.to(torch::kFloat32).mean();
  }
  torch::Tensor Labels(const torch::Tensor& input) override {
    return torch::zeros({input.size(0)}, input.options().dtype(torch::kInt64));
  }
  std::vector<int64_t> sample_shape() const override {
    return std::vector<int64_t>(script_inputs_[0].shape.begin() + 1,
                                script_inputs_[0].shape.end());
  }
  InputKind input_kind() const override {
    return IsIntegral(script_inputs_[0].dtype) ? InputKind::kTokens : InputKind::kImage;
  }
  int64_t vocab_size() const override { return script_inputs_[0].high; }
  int64_t token_low() const override { return script_inputs_[0].low; }

 private:
  torch::inductor::AOTIModelPackageLoader loader_;
  const std::vector<TensorSpec> script_inputs_;
  const int64_t batch_size_;
  std::vector<torch::Tensor> extra_;
};
#endif

}  // namespace

absl::StatusOr<std::unique_ptr<Workload>> NewTorchScriptWorkload(const RunConfig& c,
                                                                  torch::Device device,
                                                                  const MeasureConfig& m) {
  if (c.inputs.empty() || c.inputs[0].shape.empty()) {
    return absl::InvalidArgumentError(
        "torchscript: give the model's input shapes (batch dimension first)");
  }
  if (c.model_format == ModelFormat::kAotiPackage) {
#if GPUBENCH_HAS_AOTI
    if (c.mode == Mode::kTrain) {
      return absl::InvalidArgumentError(
          "torchscript: AOTInductor packages (.pt2) are inference-only; use mode infer");
    }
    std::shared_ptr<AotiModel> model;
    try {
      model = std::make_shared<AotiModel>(c.model_path, c.inputs, c.batch_size);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("torchscript: cannot load the AOTInductor package: ", MessageOf(e)));
    }
    return NewNetworkWorkload(c, device, model, m);
#else
    return absl::FailedPreconditionError(absl::StrCat(
        "torchscript: ", c.model_path, " is an AOTInductor package; this LibTorch (",
        TORCH_VERSION, ") has no package loader (2.6 or newer has)"));
#endif
  }
  auto model = std::make_shared<TorchScriptModel>(LoadScript(c, device),
                                                  c.inputs, c.batch_size);
  if (c.mode == Mode::kTrain && model->parameters().empty()) {
    return absl::InvalidArgumentError(
        "torchscript: the model has no trainable parameters; use mode infer");
  }
  return NewNetworkWorkload(c, device, model, m);
}

std::shared_ptr<BenchModel> LoadTorchScriptModel(const RunConfig& c, const torch::Device& device,
                                                 int64_t batch_size) {
  return std::make_shared<TorchScriptModel>(LoadScript(c, device), c.inputs, batch_size);
}

}  // namespace gpubench::engine
