// gpt and llama (their torch-free halves: common/workloads/gpt.cc,
// llama.cc): one pre-norm decoder in two styles. gpt is GPT-2 as nanoGPT
// writes it: LayerNorm, learnt positions, GELU 4x MLP, biases, the LM head
// tied to the token embedding. llama is Llama 3's: RMSNorm, rotary
// positions, SwiGLU, grouped-query attention, no biases, an untied head.
// Each block's q, k and v are one matrix product (and llama's gate and up
// another), as serving engines fuse them; the FLOPs are the same.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "worker/engine/attention.h"
#include "worker/engine/compat.h"
#include "worker/engine/language_model.h"
#include "worker/engine/model_parts.h"

namespace gpubench::engine {
namespace {

enum class Style { kGpt, kLlama };

constexpr double kNormEps = 1e-5;
constexpr double kRopeTheta = 500000;  // Llama 3's
// A kernel's name where it reads grouped heads as they are.
constexpr char kGrouped[] = " (grouped heads)";

struct Shape {
  Style style;
  int64_t layers, width, heads, kv_heads, ffn, vocab, sequence;
  int64_t positions;  // gpt's position table; llama's rotary table
  Attention attention;
  int64_t head_dim() const { return width / heads; }
  int64_t kv_width() const { return head_dim() * kv_heads; }
};

// How a pass attends: a whole sequence on itself (training, or a prefill
// that also fills the cache), or one new token against the cache (each
// row at its own position: kRows).
enum class Pass { kSequence, kPrefill, kDecode, kStatic, kRows };

// Where a pass's tokens sit.
struct Where {
  int64_t start = 0;   // kSequence: 0; kPrefill, kDecode: the first position
  torch::Tensor slots;  // kPrefill: the rows of the cache it writes, [B] (none: all)
  int64_t span = 0;    // kRows: the cache's positions attended
  torch::Tensor index;  // kStatic: [1] int64 on the device; kRows: [n], a row each
  // kStatic: [1, 1, 1, capacity], 0 up to index, -inf after; kRows: [n, 1,
  // 1, span], each row's own; kPrefill past start 0: [1, 1, T, start + T],
  // each position's.
  torch::Tensor mask;
  torch::Tensor cos, sin;  // llama: [T, head_dim], the activations' dtype
};

struct KvCache {
  torch::Tensor k, v;  // [B, kv_heads, capacity, head_dim]
};

// As torch.nn.RMSNorm computes it.
torch::Tensor RmsNorm(const torch::Tensor& x, const torch::Tensor& weight) {
#if GPUBENCH_TORCH_AT_LEAST(2, 4)
  return at::rms_norm(x, {x.size(-1)}, weight, kNormEps);
#else
  torch::Tensor f = x.to(torch::kFloat32);
  f = f * torch::rsqrt(f.pow(2).mean(-1, /*keepdim=*/true) + kNormEps);
  return f.to(x.scalar_type()) * weight;
#endif
}

// Rotary positions, the rotate-half form: x cos + (-x2, x1) sin.
torch::Tensor Rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const std::vector<torch::Tensor> halves = x.chunk(2, -1);
  return x * cos + torch::cat({-halves[1], halves[0]}, -1) * sin;
}

class Block : public torch::nn::Module {
 public:
  explicit Block(const Shape& s) : s_(s) {
    using torch::nn::Linear;
    using torch::nn::LinearOptions;
    const bool gpt = s.style == Style::kGpt;
    qkv_ = register_module("qkv", Linear(LinearOptions(s.width, s.width + 2 * s.kv_width())
                                             .bias(gpt)));
    out_ = register_module("out", Linear(LinearOptions(s.width, s.width).bias(gpt)));
    if (gpt) {
      ln1_ = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.width})));
      ln2_ = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.width})));
      up_ = register_module("up", Linear(s.width, 4 * s.width));
      down_ = register_module("down", Linear(4 * s.width, s.width));
    } else {
      norm1_ = register_parameter("norm1", torch::ones({s.width}));
      norm2_ = register_parameter("norm2", torch::ones({s.width}));
      up_ = register_module("up", Linear(LinearOptions(s.width, 2 * s.ffn).bias(false)));
      down_ = register_module("down", Linear(LinearOptions(s.ffn, s.width).bias(false)));
    }
  }

  torch::Tensor Forward(const torch::Tensor& x, Pass pass, const Where& at, KvCache* cache,
                        std::string* kernel) {
    if (s_.style == Style::kGpt) {
      const torch::Tensor y = x + Attend(ln1_(x), pass, at, cache, kernel);
      return y + Apply(down_, torch::gelu(Apply(up_, ln2_(y))));
    }
    const torch::Tensor y = x + Attend(RmsNorm(x, norm1_), pass, at, cache, kernel);
    const std::vector<torch::Tensor> gate_up = Apply(up_, RmsNorm(y, norm2_)).chunk(2, -1);
    return y + Apply(down_, torch::silu(gate_up[0]) * gate_up[1]);
  }

 private:
  // [B, kv_heads, S, head_dim] as [B, heads, S, head_dim]: each key/value
  // head serves heads / kv_heads query heads.
  torch::Tensor Repeat(const torch::Tensor& x) const {
    if (s_.kv_heads == s_.heads) return x;
    const int64_t b = x.size(0), n = x.size(2);
    return x.unsqueeze(2)
        .expand({b, s_.kv_heads, s_.heads / s_.kv_heads, n, s_.head_dim()})
        .reshape({b, s_.heads, n, s_.head_dim()});
  }

  // A pass's kernel, on its first forward: with grouped heads where a
  // fused kernel reads them as they are (no copy of the cache's span with
  // each key/value head repeated, at every step), else the repeated heads'.
  std::string ChooseKernel(const torch::Tensor& q, const torch::Tensor& keys,
                           const torch::Tensor& values, bool causal,
                           const torch::Tensor& mask) const {
    if (s_.kv_heads != s_.heads) {
      const std::string grouped = AttentionKernel(q, keys, values, causal, mask, true);
      if (grouped != "none" && grouped != "math") return grouped + kGrouped;
    }
    std::string kernel = AttentionKernel(q, Repeat(keys), Repeat(values), causal, mask);
    if (kernel == "none") {
      throw std::runtime_error(absl::StrCat(
          "attention ", AttentionName(s_.attention), " cannot run these shapes: q [",
          absl::StrJoin(q.sizes(), ", "), "] ", std::string(c10::toString(q.scalar_type())),
          " on ", q.device().str(), " (LibTorch's warnings say why)"));
    }
    return kernel;
  }

  torch::Tensor Attend(const torch::Tensor& h, Pass pass, const Where& at, KvCache* cache,
                       std::string* kernel) {
    const int64_t b = h.size(0), t = h.size(1), hd = s_.head_dim(), kv = s_.kv_width();
    // Split, not narrowed: a split's gradient is one concatenation, where
    // each narrow's would be a zeroed full-width tensor, a copy and a sum.
    const std::vector<torch::Tensor> qkv = Apply(qkv_, h).split_with_sizes({s_.width, kv, kv}, -1);
    torch::Tensor q = qkv[0].view({b, t, s_.heads, hd}).transpose(1, 2);
    torch::Tensor k = qkv[1].view({b, t, s_.kv_heads, hd}).transpose(1, 2);
    torch::Tensor v = qkv[2].view({b, t, s_.kv_heads, hd}).transpose(1, 2);
    if (s_.style == Style::kLlama) {
      // In q's dtype (autocast's bf16 when the weights are fp32).
      const torch::Tensor cos = at.cos.to(q.scalar_type()), sin = at.sin.to(q.scalar_type());
      q = Rotate(q, cos, sin);
      k = Rotate(k, cos, sin);
    }
    torch::Tensor keys = k, values = v, mask;
    bool causal = false;
    switch (pass) {
      case Pass::kSequence:
        causal = true;
        break;
      case Pass::kPrefill:
        if (at.slots.defined()) {
          cache->k.narrow(2, at.start, t).index_copy_(0, at.slots, k);
          cache->v.narrow(2, at.start, t).index_copy_(0, at.slots, v);
        } else {
          cache->k.narrow(2, 0, t).copy_(k);
          cache->v.narrow(2, 0, t).copy_(v);
        }
        // A chunk after the first attends over its rows' earlier positions too.
        if (at.start > 0) {
          keys = cache->k.narrow(2, 0, at.start + t).index_select(0, at.slots);
          values = cache->v.narrow(2, 0, at.start + t).index_select(0, at.slots);
          mask = at.mask;
        } else {
          causal = true;
        }
        break;
      case Pass::kDecode:
        cache->k.narrow(2, at.start, 1).copy_(k);
        cache->v.narrow(2, at.start, 1).copy_(v);
        keys = cache->k.narrow(2, 0, at.start + 1);
        values = cache->v.narrow(2, 0, at.start + 1);
        break;
      case Pass::kStatic:
        cache->k.index_copy_(2, at.index, k);
        cache->v.index_copy_(2, at.index, v);
        keys = cache->k;
        values = cache->v;
        mask = at.mask;
        break;
      case Pass::kRows: {
        // Row r's key and value at its own position: index [n, kv_heads,
        // 1, head_dim], each row's position throughout.
        const torch::Tensor where = at.index.view({b, 1, 1, 1}).expand({b, s_.kv_heads, 1, hd});
        const torch::Tensor rows_k = cache->k.narrow(0, 0, b), rows_v = cache->v.narrow(0, 0, b);
        rows_k.scatter_(2, where, k);
        rows_v.scatter_(2, where, v);
        keys = rows_k.narrow(2, 0, at.span);
        values = rows_v.narrow(2, 0, at.span);
        mask = at.mask;
        break;
      }
    }
    if (kernel->empty()) *kernel = ChooseKernel(q, keys, values, causal, mask);
    const bool grouped = absl::EndsWith(*kernel, kGrouped);
    if (!grouped) {
      keys = Repeat(keys);
      values = Repeat(values);
    }
    const torch::Tensor y = Sdpa(q, keys, values, causal, mask, grouped);
    return Apply(out_, y.transpose(1, 2).reshape({b, t, s_.width}));
  }

  const Shape s_;
  torch::nn::Linear qkv_{nullptr}, out_{nullptr}, up_{nullptr}, down_{nullptr};
  torch::nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  torch::Tensor norm1_, norm2_;
};

class Decoder : public LanguageModel {
 public:
  explicit Decoder(const Shape& s) : s_(s) {
    embed_ = register_module("embed", torch::nn::Embedding(s.vocab, s.width));
    if (s.style == Style::kGpt) {
      positions_ = register_module("positions", torch::nn::Embedding(s.positions, s.width));
    }
    for (int64_t i = 0; i < s.layers; ++i) {
      blocks_.push_back(register_module(absl::StrCat("block", i), std::make_shared<Block>(s)));
    }
    if (s.style == Style::kGpt) {
      final_ln_ = register_module(
          "final_ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.width})));
    } else {
      final_norm_ = register_parameter("final_norm", torch::ones({s.width}));
      head_ = register_module(
          "head", torch::nn::Linear(torch::nn::LinearOptions(s.width, s.vocab).bias(false)));
      // cos and sin of position x frequency, computed in fp64, kept in fp32
      // (buffers: they move and cast with the weights).
      const int64_t half = s.head_dim() / 2;
      const torch::Tensor frequencies = torch::pow(
          kRopeTheta, -torch::arange(half, torch::kFloat64) * 2 / static_cast<double>(s.head_dim()));
      const torch::Tensor angles =
          torch::outer(torch::arange(s.positions, torch::kFloat64), frequencies).repeat({1, 2});
      cos_ = register_buffer("rope_cos", angles.cos().to(torch::kFloat32));
      sin_ = register_buffer("rope_sin", angles.sin().to(torch::kFloat32));
    }
    Initialize();
  }

  torch::Tensor Forward(const torch::Tensor& tokens) override {
    Where at;
    return Run(tokens, Pass::kSequence, at, &sequence_kernel);
  }

  torch::Tensor Loss(const torch::Tensor& output, const torch::Tensor& labels) override {
    return torch::nn::functional::cross_entropy(output.reshape({-1, output.size(-1)}),
                                                labels.reshape({-1}));
  }

  // Each position's target is its token plus one: a mapping the head learns.
  torch::Tensor Labels(const torch::Tensor& input) override {
    torch::NoGradGuard no_grad;
    return (input + 1).remainder(s_.vocab);
  }

  std::vector<int64_t> sample_shape() const override { return {s_.sequence}; }
  InputKind input_kind() const override { return InputKind::kTokens; }
  int64_t vocab_size() const override { return s_.vocab; }

  void AllocateCache(int64_t batch, int64_t capacity, torch::ScalarType dtype) override {
    if (!caches_.empty() && caches_[0].k.size(0) == batch && caches_[0].k.size(2) == capacity &&
        caches_[0].k.scalar_type() == dtype) {
      return;
    }
    caches_.clear();
    const auto options = torch::TensorOptions().dtype(dtype).device(embed_->weight.device());
    for (int64_t i = 0; i < s_.layers; ++i) {
      caches_.push_back({torch::zeros({batch, s_.kv_heads, capacity, s_.head_dim()}, options),
                         torch::zeros({batch, s_.kv_heads, capacity, s_.head_dim()}, options)});
    }
  }

  torch::Tensor Prefill(const torch::Tensor& prompt) override {
    Where at;
    return Run(prompt, Pass::kPrefill, at, &sequence_kernel);
  }

  torch::Tensor Decode(const torch::Tensor& token, int64_t position) override {
    Where at;
    at.start = position;
    return Run(token, Pass::kDecode, at, &decode_kernel);
  }

  torch::Tensor DecodeStatic(const torch::Tensor& token, const torch::Tensor& position) override {
    const int64_t capacity = caches_.at(0).k.size(2);
    Where at;
    at.index = position;
    // Additive (0 up to the position, -inf after), in the cache's dtype,
    // made once a step: a bool mask SDPA turns into this in every layer.
    at.mask = torch::where(torch::arange(capacity, position.options()) <= position, 0.0,
                           -std::numeric_limits<double>::infinity())
                  .to(caches_.at(0).k.scalar_type())
                  .view({1, 1, 1, capacity});
    return Run(token, Pass::kStatic, at, &decode_kernel);
  }

  torch::Tensor PrefillSlots(const torch::Tensor& prompts, const torch::Tensor& slots,
                             int64_t start) override {
    Where at;
    at.slots = slots;
    at.start = start;
    if (start > 0) {
      // Position start + i attends up to itself.
      const int64_t t = prompts.size(1), span = start + t;
      const torch::Tensor queries = torch::arange(start, span, slots.options()).view({t, 1});
      at.mask = torch::where(torch::arange(span, slots.options()).view({1, span}) <= queries, 0.0,
                             -std::numeric_limits<double>::infinity())
                    .to(caches_.at(0).k.scalar_type())
                    .view({1, 1, t, span});
    }
    return Run(prompts, Pass::kPrefill, at, &sequence_kernel);
  }

  torch::Tensor DecodeRows(const torch::Tensor& tokens, const torch::Tensor& positions,
                           int64_t span) override {
    const int64_t n = tokens.size(0);
    Where at;
    at.index = positions;
    at.span = span;
    at.mask = torch::where(torch::arange(span, positions.options()).view({1, span}) <=
                               positions.view({n, 1}),
                           0.0, -std::numeric_limits<double>::infinity())
                  .to(caches_.at(0).k.scalar_type())
                  .view({n, 1, 1, span});
    return Run(tokens, Pass::kRows, at, &decode_kernel);
  }

  int64_t DecodeWeightBytes() const override {
    int64_t bytes = 0;
    for (const torch::Tensor& p : parameters()) bytes += p.numel() * p.element_size();
    // gpt's token table is its head, read whole; its position table and
    // llama's token table are looked up a row at a time.
    const torch::Tensor& looked_up = s_.style == Style::kGpt ? positions_->weight : embed_->weight;
    return bytes - looked_up.numel() * looked_up.element_size();
  }

  int64_t CacheBytes() const override {
    int64_t bytes = 0;
    for (const KvCache& c : caches_) bytes += 2 * c.k.numel() * c.k.element_size();
    return bytes;
  }

 private:
  // nanoGPT's: every matrix N(0, 0.02), the projections back into the
  // residual stream (out, down) 0.02 / sqrt(2 layers), biases 0, norms 1.
  void Initialize() {
    torch::NoGradGuard no_grad;
    const double residual = 0.02 / std::sqrt(2.0 * static_cast<double>(s_.layers));
    for (auto& p : named_parameters()) {
      const std::string& name = p.key();
      torch::Tensor t = p.value();
      if (t.dim() < 2) {
        if (name.find("bias") != std::string::npos) t.zero_();
        continue;  // norms keep their ones
      }
      const bool to_residual = name.find(".out.") != std::string::npos ||
                               name.find(".down.") != std::string::npos;
      t.normal_(0, to_residual ? residual : 0.02);
    }
  }

  torch::Tensor Run(const torch::Tensor& tokens, Pass pass, Where at, std::string* kernel) {
    const int64_t t = tokens.size(1);
    const bool gpt = s_.style == Style::kGpt;
    const bool one_token = pass == Pass::kDecode || pass == Pass::kStatic || pass == Pass::kRows;
    torch::Tensor x = embed_(tokens);
    // Each row's own position (kRows) as [n, 1, ...]: gpt's [n, 1, width]
    // beside x [n, 1, width], llama's [n, 1, 1, head_dim] beside q [n,
    // heads, 1, head_dim].
    if (gpt) {
      x = x + (pass == Pass::kRows     ? positions_->weight.index_select(0, at.index).unsqueeze(1)
               : pass == Pass::kStatic ? positions_->weight.index_select(0, at.index)
                                       : positions_->weight.narrow(0, at.start, t));
    } else if (pass == Pass::kRows) {
      const int64_t n = tokens.size(0);
      at.cos = cos_.index_select(0, at.index).view({n, 1, 1, -1});
      at.sin = sin_.index_select(0, at.index).view({n, 1, 1, -1});
    } else {
      at.cos = pass == Pass::kStatic ? cos_.index_select(0, at.index) : cos_.narrow(0, at.start, t);
      at.sin = pass == Pass::kStatic ? sin_.index_select(0, at.index) : sin_.narrow(0, at.start, t);
    }
    for (size_t i = 0; i < blocks_.size(); ++i) {
      x = blocks_[i]->Forward(x, pass, at, one_token || pass == Pass::kPrefill ? &caches_.at(i)
                                                                               : nullptr,
                              kernel);
    }
    x = gpt ? final_ln_(x) : RmsNorm(x, final_norm_);
    if (pass == Pass::kPrefill) x = x.select(1, t - 1);
    if (one_token) x = x.squeeze(1);
    return gpt ? torch::linear(x, embed_->weight) : Apply(head_, x);
  }

  const Shape s_;
  torch::nn::Embedding embed_{nullptr}, positions_{nullptr};
  std::vector<std::shared_ptr<Block>> blocks_;
  torch::nn::LayerNorm final_ln_{nullptr};
  torch::Tensor final_norm_;
  torch::nn::Linear head_{nullptr};
  torch::Tensor cos_, sin_;
  std::vector<KvCache> caches_;
};

Shape ShapeOf(const RunConfig& c, Style style) {
  Shape s;
  s.style = style;
  s.layers = c.num_layers;
  s.width = c.hidden_size;
  s.heads = c.num_heads;
  s.kv_heads = style == Style::kGpt ? c.num_heads : c.num_kv_heads;
  s.ffn = style == Style::kGpt ? 4 * c.hidden_size : c.ffn_hidden_size;
  s.vocab = c.vocab_size;
  s.sequence = c.sequence_length;
  // gpt's learnt positions end at its context (the spec holds prompt and
  // new tokens, and a served request, within it); llama's rotary table
  // covers every use.
  const auto [longest_input, longest_output] = LongestServed(c);
  const int64_t served = longest_input + longest_output;
  s.positions = style == Style::kGpt
                    ? c.sequence_length
                    : std::max({int64_t{c.sequence_length},
                                int64_t{c.prompt_length} + c.new_tokens, served});
  s.attention = c.attention;
  return s;
}

absl::Status CheckShape(const RunConfig& c, const Shape& s) {
  if (s.layers < 1 || s.heads < 1 || s.kv_heads < 1 || s.width % s.heads != 0 ||
      s.heads % s.kv_heads != 0 || s.ffn < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        c.workload, ": num_layers ", s.layers, ", hidden_size ", s.width, ", num_heads ",
        s.heads, ", num_kv_heads ", s.kv_heads, ", ffn ", s.ffn, " do not make a model"));
  }
  return absl::OkStatus();
}

ModelOrError NewDecoder(const RunConfig& c, Style style) {
  const Shape s = ShapeOf(c, style);
  if (auto status = CheckShape(c, s); !status.ok()) return status;
  return std::shared_ptr<BenchModel>(std::make_shared<Decoder>(s));
}

}  // namespace

// A language model that cannot serve (a compiled package) says so.
torch::Tensor LanguageModel::PrefillSlots(const torch::Tensor& /*prompts*/,
                                          const torch::Tensor& /*slots*/, int64_t /*start*/) {
  throw std::runtime_error("this language model cannot serve: mode serve runs eager");
}
torch::Tensor LanguageModel::DecodeRows(const torch::Tensor& /*tokens*/,
                                        const torch::Tensor& /*positions*/, int64_t /*span*/) {
  throw std::runtime_error("this language model cannot serve: mode serve runs eager");
}

ModelOrError NewGpt(const RunConfig& c) { return NewDecoder(c, Style::kGpt); }
ModelOrError NewLlama(const RunConfig& c) { return NewDecoder(c, Style::kLlama); }

}  // namespace gpubench::engine
