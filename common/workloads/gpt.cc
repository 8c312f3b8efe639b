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
  // Per token and layer: qkv 3d², out projection d², MLP 8d²; the two
  // attention products over the T positions; the head, whose matrix is the
  // token table (the table's lookup is no product). nanoGPT's 6N + 12 L T d
  // a training token but for N's norms and biases, which are elementwise.
  const double t = static_cast<double>(context), dd = static_cast<double>(d);
  cost::Work work;
  for (int64_t layer = 0; layer < layers; ++layer) {
    work.Weights(t * 12 * dd * dd);
    work.Attention(t, dd);
  }
  work.Weights(t * dd * s.vocab_size);
  return work.Cost(s.vocab_size * d + context * d + layers * block + cost::NormParams(d));
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
  w.id = WorkloadId::kGpt;
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
