// A language model's inference as its users time it: the prompt's prefill
// (time to first token), then the new tokens one at a time through the
// static KV cache (inter-token latency), greedy. One iteration is one
// generation of the batch. Eager steps attend over the cache up to their
// position; under execution cuda_graph each decode step is a replay of one
// captured graph over the whole cache under a mask; under aot the prefill and
// the step are the package's (the step always the masked form), and
// aot_cuda_graph replays the captured step.
#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/stats.h"
#include "worker/engine/language_model.h"
#include "worker/engine/workload.h"

namespace gpubench::engine {
namespace {

torch::ScalarType WeightType(Precision p) {
  switch (p) {
    case Precision::kFp16: return torch::kFloat16;
    case Precision::kBf16: return torch::kBFloat16;
    default: return torch::kFloat32;
  }
}

class DecodeWorkload : public Workload {
 public:
  DecodeWorkload(const RunConfig& c, torch::Device device, std::shared_ptr<LanguageModel> model)
      : Workload(device), c_(c), model_(std::move(model)) {
    // Weights in the precision, as a server holds them (no autocast).
    const torch::ScalarType dtype = WeightType(c.precision);
    model_->to(device_, dtype);
    model_->eval();
    model_->AllocateCache(c.batch_size, int64_t{c.prompt_length} + c.new_tokens, dtype);
    const auto tokens = torch::TensorOptions().dtype(torch::kInt64).device(device_);
    prompt_ = torch::randint(model_->vocab_size(), {c.batch_size, c.prompt_length}, tokens);
    token_ = torch::zeros({c.batch_size, 1}, tokens);
    position_ = torch::zeros({1}, tokens);
    if (device_.is_cuda()) {
      tokens_timer_ = cuda::NewEventTimer();
      tokens_timer_->Reserve(c.new_tokens);
    }
    if (UsesCudaGraph(c.execution)) {
      auto graph = cuda::CaptureGraph([this] {
        torch::NoGradGuard no_grad;
        token_.copy_(model_->DecodeStatic(token_, position_).argmax(-1, /*keepdim=*/true));
      });
      if (!graph.ok()) throw std::runtime_error(std::string(graph.status().message()));
      graph_ = std::move(*graph);
    }
  }

  int64_t samples_per_iteration() const override { return c_.batch_size; }

  void Report(RunOutcome* out) override {
    out->parameter_count = model_->ParameterCount();
    out->time_to_first_token_ms = stats::Summarize(ttft_ms_);
    out->inter_token_latency_ms = stats::Summarize(itl_ms_);
    const stats::Summary& itl = out->inter_token_latency_ms;
    if (itl.mean > 0) out->tokens_per_s = c_.batch_size * 1000.0 / itl.mean;
    // A step reads every weight but the embedding tables' other rows (gpt's
    // token table is its head: read whole), and the cache: eager up to its
    // position (the prompt and half the new tokens on average), the masked
    // form (a graph, or a compiled step) all of it.
    const double cached =
        graph_ || IsCompiled(c_.execution) ? 1.0
               : (c_.prompt_length + c_.new_tokens / 2.0) / (c_.prompt_length + c_.new_tokens);
    const double bytes = static_cast<double>(model_->DecodeWeightBytes()) +
                         cached * static_cast<double>(model_->CacheBytes());
    if (itl.p50 > 0) out->decode_bandwidth_gb_per_s = bytes / (itl.p50 / 1000.0) / 1e9;
    const std::string& prefill = model_->sequence_kernel;
    const std::string& decode = model_->decode_kernel;
    out->attention_backend = prefill == decode || decode.empty()
                                 ? prefill
                                 : "prefill " + prefill + ", decode " + decode;
  }

 protected:
  void Compute() override {
    torch::NoGradGuard no_grad;
    const auto start = std::chrono::steady_clock::now();
    std::vector<double> host_ms;  // CPU and MPS: each token's end on the host clock
    auto mark = [&] {
      if (tokens_timer_) return;
      if (device_.is_mps()) compat::MpsSynchronize();
      host_ms.push_back(std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count());
    };
    if (tokens_timer_) tokens_timer_->Begin();
    token_.copy_(model_->Prefill(prompt_).argmax(-1, /*keepdim=*/true));
    if (tokens_timer_) tokens_timer_->End();
    mark();
    for (int i = 1; i < c_.new_tokens; ++i) {
      const int64_t position = int64_t{c_.prompt_length} + i - 1;
      if (tokens_timer_) tokens_timer_->Begin();
      if (graph_) {
        position_.fill_(position);
        graph_->Replay();
      } else {
        token_.copy_(model_->Decode(token_, position).argmax(-1, /*keepdim=*/true));
      }
      if (tokens_timer_) tokens_timer_->End();
      mark();
    }
    std::vector<double> ms;
    if (tokens_timer_) {
      tokens_timer_->Collect(&ms);
    } else {
      for (size_t i = 0; i < host_ms.size(); ++i) {
        ms.push_back(i == 0 ? host_ms[0] : host_ms[i] - host_ms[i - 1]);
      }
    }
    if (ms.empty()) return;
    ttft_ms_.push_back(ms[0]);
    itl_ms_.insert(itl_ms_.end(), ms.begin() + 1, ms.end());
  }

  // The measured windows' figures only: warm-up generations are not kept.
  void OnMeasureBegin() override {
    ttft_ms_.clear();
    itl_ms_.clear();
    Workload::OnMeasureBegin();
  }

 private:
  const RunConfig c_;
  std::shared_ptr<LanguageModel> model_;
  torch::Tensor prompt_, token_, position_;
  std::unique_ptr<cuda::EventTimer> tokens_timer_;
  std::unique_ptr<cuda::Graph> graph_;
  std::vector<double> ttft_ms_, itl_ms_;
};

}  // namespace

WorkloadOrError NewDecodeWorkload(const RunConfig& c, torch::Device device,
                                  const MeasureConfig& /*m*/) {
  auto model = CreateModel(c);
  if (!model.ok()) return model.status();
  auto language_model = std::dynamic_pointer_cast<LanguageModel>(*model);
  if (language_model == nullptr) {
    return absl::InvalidArgumentError(c.workload + " is not a language model");
  }
  if (IsCompiled(c.execution)) {
    auto compiled = LoadCompiledLanguageModel(std::move(language_model), c, device);
    if (!compiled.ok()) return compiled.status();
    language_model = std::move(*compiled);
  }
  return std::unique_ptr<Workload>(
      std::make_unique<DecodeWorkload>(c, device, std::move(language_model)));
}

}  // namespace gpubench::engine
