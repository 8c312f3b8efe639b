// A language model serving requests that arrive over time (mode serve):
// the scheduler of worker/serve.h drives the model's two serving steps, a
// step's prompts' prefill (whole or a chunk) into their slots of the KV
// cache and one decode step over the slots in use, each request at its own
// position. Eager, or each decode step a replayed CUDA graph of its bucket
// of rows; or (aot) both steps the compiled package's, its decode step over
// the whole cache under each row's mask, and (aot_cuda_graph) that step
// captured for each bucket. Weights in the run's precision as decode.cc
// holds them. A step's tokens are read to
// the host, as a server streaming them does; on a GPU the next step is
// queued before the host waits for them.
#include <torch/torch.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "worker/engine/attention.h"
#include "worker/engine/language_model.h"
#include "worker/engine/workload.h"
#include "worker/serve.h"

namespace gpubench::engine {
namespace {

torch::ScalarType WeightTypeOf(Precision p) {
  switch (p) {
    case Precision::kFp16: return torch::kFloat16;
    case Precision::kBf16: return torch::kBFloat16;
    default: return torch::kFloat32;
  }
}

class ServeModel : public serve::Model {
 public:
  ServeModel(const RunConfig& c, torch::Device device, std::shared_ptr<LanguageModel> model,
             uint64_t seed, int steps_ahead, std::map<int64_t, std::vector<int64_t>>* tokens)
      : device_(device), attention_(c.attention), model_(std::move(model)), seed_(seed),
        tokens_(tokens),
        steps_ahead_(steps_ahead >= 0 ? steps_ahead : device.is_cuda() ? 1 : 0) {
    if (device_.is_cuda()) reads_ = cuda::NewHostReads();
    const torch::ScalarType dtype = WeightTypeOf(c.precision);
    model_->to(device_, dtype);
    model_->eval();
    const auto [input, output] = LongestServed(c);
    model_->AllocateCache(c.batch_size, input + output, dtype);
    const auto ids = torch::TensorOptions().dtype(torch::kInt64).device(device_);
    last_ = torch::zeros({c.batch_size, 1}, ids);
    positions_ = torch::zeros({c.batch_size}, ids);
    request_of_.assign(c.batch_size, -1);
    prompt_of_.resize(c.batch_size);
    capacity_ = input + output;
    if (UsesCudaGraph(c.execution)) CaptureBuckets(c.batch_size);
  }

  // The step's chunks alike (the same positions, each the end of its
  // prompt or none) in one batch.
  absl::Status Prefill(const std::vector<Admission>& admitted) override {
    torch::NoGradGuard no_grad;
    const NoCudnnAttention varied_lengths(attention_);
    std::map<std::tuple<int, int, bool>, std::vector<const Admission*>> alike;
    for (const Admission& a : admitted) alike[{a.start, a.length, a.last()}].push_back(&a);
    for (const auto& [key, group] : alike) {
      const auto [start, length, last] = key;
      std::vector<int64_t> ids;
      std::vector<int> slots;
      for (const Admission* a : group) {
        // A prompt in chunks is drawn at its first and kept until its last.
        std::vector<int64_t>& prompt = prompt_of_[a->slot];
        if (start == 0) prompt = PromptOf(a->request, model_->vocab_size(), seed_);
        if (prompt.size() < static_cast<size_t>(start + length)) {
          return absl::InternalError(absl::StrCat("request ", a->request.id, ": a chunk at ",
                                                  start, " before its prompt's first"));
        }
        ids.insert(ids.end(), prompt.begin() + start, prompt.begin() + start + length);
        if (last) std::vector<int64_t>().swap(prompt);
        slots.push_back(a->slot);
        request_of_[a->slot] = a->request.id;
      }
      const int64_t k = static_cast<int64_t>(group.size());
      const torch::Tensor prompts = torch::tensor(ids, torch::kInt64).view({k, length}).to(device_);
      const torch::Tensor at =
          torch::tensor(std::vector<int64_t>(slots.begin(), slots.end()), torch::kInt64)
              .to(device_);
      const torch::Tensor logits = model_->PrefillSlots(prompts, at, start);
      if (!last) {
        // The prompt goes on in a later step. Meanwhile a decode step's
        // rows can take in this one's: it writes at the cache's last
        // position, which is no prompt's and which a token of its own
        // writes before it attends there.
        positions_.index_fill_(0, at, capacity_ - 1);
        continue;
      }
      const torch::Tensor tokens = logits.argmax(-1, /*keepdim=*/true);
      last_.index_copy_(0, at, tokens);
      positions_.index_fill_(0, at, start + length);
      Deliver(tokens, slots, /*by_slot=*/false);
    }
    return absl::OkStatus();
  }

  ~ServeModel() override {
    // No step may still run on the graphs and cache freed here; a device
    // already failed (the error on its way out) has nothing to wait for.
    if (!device_.is_cuda()) return;
    try {
      torch::cuda::synchronize(device_.index());
    } catch (const std::exception&) {
    }
  }

  absl::Status Launch(const std::vector<Step>& steps) override {
    torch::NoGradGuard no_grad;
    // Rows 0..n-1, n past the highest slot in use; a free row among them
    // decodes at the position it holds and is ignored (its slot's next
    // prefill rewrites it, and a row attends to no position past its own).
    int n = 0, span = 0;
    for (const Step& s : steps) {
      n = std::max(n, s.slot + 1);
      span = std::max(span, s.position + 1);
    }
    // Under graphs, the smallest bucket of rows that holds them, over the
    // whole cache.
    auto bucket = graphs_.lower_bound(n);
    if (bucket != graphs_.end()) n = bucket->first;
    if (bucket != graphs_.end()) {
      bucket->second->Replay();
    } else {
      StepRows(n, span);
    }
    Launched launched;
    for (const Step& s : steps) launched.slots.push_back(s.slot);
    // The tokens as this step left them: on a GPU read behind it, on the
    // CPU (already run) a copy.
    if (reads_) {
      reads_->Start(last_.narrow(0, 0, n));
    } else {
      launched.tokens = last_.narrow(0, 0, n).clone();
    }
    launched_.push_back(std::move(launched));
    return absl::OkStatus();
  }

  absl::Status Wait() override {
    Launched launched = std::move(launched_.front());
    launched_.pop_front();
    Deliver(reads_ ? reads_->Wait() : launched.tokens, launched.slots, /*by_slot=*/true);
    return absl::OkStatus();
  }

  int StepsAhead() const override { return steps_ahead_; }

 private:
  // One decode step of rows 0..n-1 over the cache's first span positions,
  // each row then a position on (a free row's held inside the cache): the
  // next step's positions are on the device before the host asks, and a
  // step copies nothing in.
  void StepRows(int n, int64_t span) {
    const torch::Tensor positions = positions_.narrow(0, 0, n);
    last_.narrow(0, 0, n).copy_(
        model_->DecodeRows(last_.narrow(0, 0, n), positions, span).argmax(-1, /*keepdim=*/true));
    positions.add_(1).clamp_max_(capacity_ - 1);
  }

  // The step's tokens on the host; kept per request where asked. Row i of
  // tokens is slot slots[i]'s, or (by_slot) slot i's.
  void Deliver(const torch::Tensor& tokens, const std::vector<int>& slots, bool by_slot) {
    const torch::Tensor host = tokens.to(torch::kCPU);
    if (tokens_ == nullptr) return;
    for (size_t i = 0; i < slots.size(); ++i) {
      const int64_t row = by_slot ? slots[i] : static_cast<int64_t>(i);
      (*tokens_)[request_of_[slots[i]]].push_back(host[row][0].item<int64_t>());
    }
  }

  // execution cuda_graph: one decode step captured for each bucket of rows
  // (1, 2, 4... and the slots), over the whole cache under each row's mask:
  // the bucket's rows of last_ and positions_ are its state, read and
  // advanced in place.
  void CaptureBuckets(int slots) {
    std::vector<int> sizes;
    for (int b = 1; b < slots; b *= 2) sizes.push_back(b);
    sizes.push_back(slots);
    for (int b : sizes) {
      auto graph = cuda::CaptureGraph([this, b] {
        torch::NoGradGuard no_grad;
        StepRows(b, capacity_);
      });
      if (!graph.ok()) throw std::runtime_error(std::string(graph.status().message()));
      graphs_[b] = std::move(*graph);
    }
  }

  const torch::Device device_;
  const Attention attention_;
  std::shared_ptr<LanguageModel> model_;
  const uint64_t seed_;
  std::map<int64_t, std::vector<int64_t>>* tokens_;
  torch::Tensor last_;              // each slot's last token [slots, 1]
  torch::Tensor positions_;         // each row's position in its next step [slots]
  int64_t capacity_ = 0;            // the cache's positions
  std::map<int, std::unique_ptr<cuda::Graph>> graphs_;  // by rows; cuda_graph only
  std::vector<int64_t> request_of_;  // each slot's request id
  std::vector<std::vector<int64_t>> prompt_of_;  // each slot's prompt, while chunked
  const int steps_ahead_;
  std::unique_ptr<cuda::HostReads> reads_;  // CUDA only
  // Each step launched and not waited for: its slots, and (no reads_) its
  // tokens.
  struct Launched {
    std::vector<int> slots;
    torch::Tensor tokens;
  };
  std::deque<Launched> launched_;
};

}  // namespace

std::vector<int64_t> PromptOf(const serve::Request& request, int64_t vocab, uint64_t seed) {
  std::vector<int64_t> ids(request.input_tokens);
  uint64_t state = seed ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(request.id + 1));
  for (int64_t& id : ids) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    id = static_cast<int64_t>((z ^ (z >> 31)) % static_cast<uint64_t>(vocab));
  }
  return ids;
}

std::unique_ptr<serve::Model> NewServeModel(const RunConfig& c, torch::Device device,
                                            std::shared_ptr<LanguageModel> model, uint64_t seed,
                                            std::map<int64_t, std::vector<int64_t>>* tokens,
                                            int steps_ahead) {
  return std::make_unique<ServeModel>(c, device, std::move(model), seed, steps_ahead, tokens);
}

namespace {

serve::Load ServeLoadOf(const RunConfig& c, const MeasureConfig& m) {
  serve::Load load;
  load.request_rate = c.request_rate;
  load.burstiness = c.burstiness;
  load.concurrency = c.concurrency;
  load.slots = c.batch_size;
  load.warmup_requests = c.warmup_requests;
  load.num_requests = c.num_requests;
  load.input_len = c.input_len;
  load.input_len_max = c.input_len_max;
  load.output_len = c.output_len;
  load.output_len_max = c.output_len_max;
  load.seed = m.seed;
  load.slo_ttft_ms = c.slo_ttft_ms;
  load.slo_tpot_ms = c.slo_tpot_ms;
  load.slo_e2e_ms = c.slo_e2e_ms;
  load.slice_ms = c.slice_ms;
  load.prefill_chunk = c.prefill_chunk;
  load.max_time_ns = m.max_time_ms * 1000000;
  for (const RunConfig::TraceRequest& t : c.trace) {
    serve::Request r;
    r.arrival_ns = static_cast<int64_t>(t.arrival_ms * 1e6);
    r.input_tokens = t.input_tokens;
    r.output_tokens = t.output_tokens;
    load.trace.push_back(r);
  }
  return load;
}

}  // namespace

absl::Status ServeOnDevice(const RunConfig& c, torch::Device device, const MeasureConfig& m,
                           const std::atomic<bool>* cancel,
                           const std::function<void()>& on_measure_begin, RunOutcome* out) {
  auto created = CreateModel(c);
  if (!created.ok()) return created.status();
  auto model = std::dynamic_pointer_cast<LanguageModel>(*created);
  if (model == nullptr) return absl::InvalidArgumentError(c.workload + " is not a language model");
  if (IsCompiled(c.execution)) {
    auto compiled = LoadCompiledLanguageModel(std::move(model), c, device);
    if (!compiled.ok()) return compiled.status();
    model = std::move(*compiled);
  }
  out->parameter_count = model->ParameterCount();
  std::unique_ptr<serve::Model> served = NewServeModel(c, device, model, m.seed);
  auto outcome = serve::Serve(ServeLoadOf(c, m), served.get(), serve::SteadyTimeline(), cancel,
                              on_measure_begin);
  if (!outcome.ok()) return outcome.status();
  out->serve = std::move(*outcome);
  const std::string& prefill = model->sequence_kernel;
  const std::string& decode = model->decode_kernel;
  out->attention_backend =
      prefill == decode || decode.empty() ? prefill : "prefill " + prefill + ", decode " + decode;
  return absl::OkStatus();
}

}  // namespace gpubench::engine
