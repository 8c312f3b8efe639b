#include "worker/engine/numerics.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/workload_registry.h"
#include "worker/engine/models.h"
#include "worker/engine/workload.h"

namespace gpubench::engine {
namespace {

// max |got - ref| and that over max |ref|, both in fp64 on the CPU.
std::pair<double, double> Errors(const torch::Tensor& got, const torch::Tensor& ref) {
  const torch::Tensor g = got.detach().to(torch::kCPU).to(torch::kFloat64);
  const torch::Tensor r = ref.detach().to(torch::kCPU).to(torch::kFloat64);
  const double abs = (g - r).abs().max().item<double>();
  const double scale = r.abs().max().item<double>();
  return {abs, scale > 0 ? abs / scale : abs};
}

// One input and its labels, for the run's copy (xa, ya: on its device, in
// its memory format) and the reference's (xr, yr: fp64 on the CPU).
struct Inputs {
  torch::Tensor xa, xr, ya, yr;
};

Inputs MakeInputs(BenchModel& a, int64_t batch_size, const torch::Device& device,
                  bool channels_last) {
  std::vector<int64_t> shape = {batch_size};
  const auto sample = a.sample_shape();
  shape.insert(shape.end(), sample.begin(), sample.end());
  torch::manual_seed(1);
  const bool tokens = a.input_kind() == InputKind::kTokens;
  const torch::Tensor x =
      tokens ? torch::randint(a.token_low(), a.vocab_size(), shape, torch::kInt64)
             : torch::randn(shape);
  Inputs in;
  in.xa = x.to(device);
  if (channels_last) in.xa = in.xa.contiguous(at::MemoryFormat::ChannelsLast);
  in.xr = tokens ? x : x.to(torch::kFloat64);
  torch::Tensor y;
  {
    torch::NoGradGuard no_grad;
    y = a.Labels(in.xa).to(torch::kCPU);
  }
  in.ya = y.to(device);
  in.yr = y.is_floating_point() ? y.to(torch::kFloat64) : y;
  return in;
}

// Training: the loss's error and the first parameter's gradient's (after
// one backward pass on each copy).
void CompareTraining(BenchModel& a, BenchModel& r, torch::Tensor& loss_a, torch::Tensor& loss_r,
                     NumericsOutcome* n) {
  std::tie(n->loss_abs_error, n->loss_rel_error) = Errors(loss_a, loss_r);
  loss_a.backward();
  loss_r.backward();
  const auto pa = a.named_parameters();
  const auto pr = r.named_parameters();
  for (size_t i = 0; i < pa.size() && i < pr.size(); ++i) {
    if (!pa[i].value().grad().defined() || !pr[i].value().grad().defined()) continue;
    n->gradient_parameter = pa[i].key();
    n->gradient_rel_error = Errors(pa[i].value().grad(), pr[i].value().grad()).second;
    break;
  }
}

// Both copies on the same input; fills n. Throws what LibTorch throws.
void Compare(BenchModel& a, BenchModel& r, const RunConfig& c, int64_t batch_size,
             const torch::Device& device, NumericsOutcome* n) {
  const bool train = c.mode == Mode::kTrain;
  const bool channels_last = c.channels_last && a.input_kind() == InputKind::kImage;
  a.to(device);
  if (channels_last) ToChannelsLast(a);
  r.ToFp64Reference();
  a.train(train);
  r.train(train);
  const Inputs in = MakeInputs(a, batch_size, device, channels_last);
  torch::Tensor out_a, out_r, loss_a, loss_r;
  {
    std::optional<torch::NoGradGuard> no_grad;
    if (!train) no_grad.emplace();
    torch::manual_seed(2);  // the same extra inputs for a user model
    {
      AutocastScope autocast(device, c.precision);
      out_a = a.Forward(in.xa);
      if (train) loss_a = a.Loss(out_a, in.ya);
    }
    torch::manual_seed(2);
    out_r = r.Forward(in.xr);
    if (train) loss_r = r.Loss(out_r, in.yr);
  }
  n->checked = true;
  n->non_finite = !torch::isfinite(out_a.detach()).all().item<bool>() ||
                  (train && !torch::isfinite(loss_a.detach()).all().item<bool>());
  if (n->non_finite) return;  // not passed; no error figure means much
  std::tie(n->output_max_abs_error, n->output_rel_error) = Errors(out_a, out_r);
  // The verdict: the output in inference, the loss in training. A training
  // step's output (BatchNorm on the batch's statistics) and its first
  // gradient (through every layer) amplify rounding: on the H100,
  // resnet50's first gradient differed 2e-2 from fp64 even in fp32.
  if (train) CompareTraining(a, r, loss_a, loss_r, n);
  const double verdict = train ? n->loss_rel_error : n->output_rel_error;
  n->passed = std::isfinite(verdict) && verdict <= n->tolerance;
}

}  // namespace

NumericsOutcome CheckNumerics(const RunConfig& c, const torch::Device& device) {
  NumericsOutcome n;
  n.tolerance = NumericsTolerance(c.precision);
  if (IsCompiled(c.execution) || c.model_format == ModelFormat::kAotiPackage) {
    n.error = "a compiled package holds weights of its own in its own dtype; check the "
              "eager run of the same config";
    return n;
  }
  const WorkloadInfo* workload = FindWorkload(c.workload);
  if (workload == nullptr || !workload->checks_numerics) {
    n.error = absl::StrCat(c.workload, " is not a model");
    return n;
  }
  RunConfig small = c;
  small.batch_size = std::min<int64_t>(c.batch_size, 8);
  n.batch_size = small.batch_size;
  // A scripted module loads onto its device whole (its buffers too, which
  // are not among the registered parameters).
  auto load = [&](const torch::Device& on) -> absl::StatusOr<std::shared_ptr<BenchModel>> {
    torch::manual_seed(0);
    if (!IsWorkload(c.workload, WorkloadId::kTorchscript)) return CreateModel(small);
    return LoadTorchScriptModel(c, on, small.batch_size);
  };
  try {
    auto run_model = load(device);
    auto ref_model = load(torch::kCPU);
    if (!run_model.ok() || !ref_model.ok()) {
      n.error = std::string((run_model.ok() ? ref_model : run_model).status().message());
      return n;
    }
    Compare(**run_model, **ref_model, c, small.batch_size, device, &n);
  } catch (const std::exception& e) {
    n.checked = false;
    n.error = MessageOf(e);
  }
  return n;
}

}  // namespace gpubench::engine
