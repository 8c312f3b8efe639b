// llama: a Llama-3-style decoder.
#include "common/model_cost.h"
#include "common/workloads/builtin.h"

namespace gpubench::workloads {
namespace {

// Token embedding (a lookup); per block RMSNorm, q, k and v projections
// (k and v num_kv_heads wide: grouped-query attention), output projection,
// RMSNorm and a SwiGLU MLP (three matrices); a final RMSNorm and an untied
// LM head. No biases. Rotary positions have no parameters.
ModelCost LlamaCost(const ModelShape& s) {
  const int64_t d = s.hidden_size, layers = s.num_layers, t = s.sequence_length;
  const int64_t kv = s.num_heads > 0 ? d / s.num_heads * s.num_kv_heads : 0;
  const int64_t block = 2 * d + d * d + 2 * d * kv + d * d + 3 * d * s.ffn_hidden_size;
  // Per token and layer: q and o d² each, k and v d x kv each (grouped
  // queries), the SwiGLU MLP's three d x ffn; the two attention products
  // over the T positions (every query head against its keys: d wide); the
  // untied head. The token table is a lookup, no product.
  const double tt = static_cast<double>(t), dd = static_cast<double>(d);
  cost::Work work;
  for (int64_t layer = 0; layer < layers; ++layer) {
    work.Weights(tt * (2 * dd * dd + 2 * dd * kv + 3 * dd * s.ffn_hidden_size));
    work.Attention(tt, dd);
  }
  work.Weights(tt * dd * s.vocab_size);
  return work.Cost(s.vocab_size * d + layers * block + d + d * s.vocab_size);
}

// Llama-3.2-1B's shape, and a small one for CPUs; "custom" keeps the spec's.
bool LlamaShape(std::string_view size, WorkloadDefaults* d) {
  static const std::vector<SizeShape> kShapes = {{"1b", 16, 2048, 32, 8, 8192, 128256},
                                                 {"small", 4, 256, 4, 2, 768, 32000}};
  return ApplySizeShape(kShapes, size, d);
}

}  // namespace

WorkloadInfo Llama() {
  WorkloadInfo w;
  w.id = WorkloadId::kLlama;
  w.name = "llama";
  w.summary = "Llama-3-style decoder (RMSNorm, rotary positions, SwiGLU, grouped-query "
              "attention): train gives tokens/s and MFU; infer prefills a prompt and decodes "
              "with a KV cache";
  w.architecture = "token embedding, num_layers pre-RMSNorm blocks (rotary causal attention "
                   "with num_kv_heads key/value heads, SwiGLU MLP), RMSNorm, untied LM head";
  w.cost = LlamaCost;
  w.model = w.compiles = w.checks_numerics = w.language_model = w.attends = true;
  w.host_input = false;
  w.sample = SampleShape::kTokens;
  w.model_sizes = {"1b", "small", "custom"};
  w.size_shape = LlamaShape;
  w.defaults.model_size = "1b";
  LlamaShape("1b", &w.defaults);
  w.defaults.sequence_length = 1024;  // a training sequence; rotary has no table
  w.defaults.prompt_length = 512;
  w.defaults.new_tokens = 128;
  return w;
}

}  // namespace gpubench::workloads
