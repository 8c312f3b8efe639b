// gpt: a GPT-2-style decoder as nanoGPT writes it.
#include "common/model_cost.h"
#include "common/workloads/builtin.h"

namespace gpubench::workloads {
namespace {

// Token and learnt position embeddings; per block LayerNorm, fused qkv,
// output projection, LayerNorm, a GELU 4x MLP; a final LayerNorm; the LM
// head is the token embedding (tied: no parameters of its own).
ModelCost GptCost(const ModelShape& s) {
  const int64_t d = s.hidden_size, layers = s.num_layers, context = s.sequence_length;
  const int64_t block = 2 * cost::NormParams(d) + cost::LinearParams(d, 3 * d) +
                        cost::LinearParams(d, d) + cost::LinearParams(d, 4 * d) +
                        cost::LinearParams(4 * d, d);
  ModelCost c;
  c.parameters = s.vocab_size * d + context * d + layers * block + cost::NormParams(d);
  // nanoGPT's count for MFU: every parameter but the position table (the
  // token table is the head's matrix), 2 FLOPs each a token, and the
  // attention's two matmuls over the T positions (the causal mask's
  // skipped half counted, as nanoGPT and PaLM count it). A training token
  // is 3x that: 6N + 12 L T d.
  const double n = static_cast<double>(c.parameters - context * d), t = context;
  c.forward_flops_per_sample = t * (2 * n + 4.0 * layers * t * d);
  return c;
}

// GPT-2's sizes (GPT-3 XL's for 1.3b); "custom" keeps the spec's.
bool GptShape(std::string_view size, WorkloadDefaults* d) {
  static const std::vector<SizeShape> kShapes = {{"124m", 12, 768, 12, 0, 0, 0},
                                                 {"350m", 24, 1024, 16, 0, 0, 0},
                                                 {"774m", 36, 1280, 20, 0, 0, 0},
                                                 {"1.3b", 24, 2048, 16, 0, 0, 0}};
  return ApplySizeShape(kShapes, size, d);
}

}  // namespace

WorkloadInfo Gpt() {
  WorkloadInfo w;
  w.name = "gpt";
  w.summary = "GPT-2-style decoder (nanoGPT): train gives tokens/s and MFU; infer prefills a "
              "prompt and decodes new tokens with a KV cache (time to first token, inter-token "
              "latency)";
  w.architecture = "token and learnt position embeddings, num_layers pre-LN blocks (causal "
                   "attention, GELU 4x MLP), LayerNorm, LM head tied to the token embedding";
  w.cost = GptCost;
  w.model = w.compiles = w.checks_numerics = w.language_model = w.attends = true;
  w.host_input = false;
  w.sample = SampleShape::kTokens;
  w.params = {"model_size", "sequence_length", "num_layers", "hidden_size", "num_heads",
              "vocab_size", "prompt_length", "new_tokens"};
  w.model_sizes = {"124m", "350m", "774m", "1.3b", "custom"};
  w.size_shape = GptShape;
  w.defaults.model_size = "124m";
  GptShape("124m", &w.defaults);
  w.defaults.sequence_length = 1024;  // the context, and a training sequence
  w.defaults.vocab_size = 50304;      // GPT-2's 50,257 padded to a multiple of 64
  w.defaults.prompt_length = 512;
  w.defaults.new_tokens = 128;
  return w;
}

}  // namespace gpubench::workloads
