// transformer: a token classifier over an encoder (or causal decoder) stack.
#include "common/model_cost.h"
#include "common/workloads/builtin.h"

namespace gpubench::workloads {
namespace {

// Token embedding and learnt positions; per block LayerNorm, fused qkv,
// output projection, LayerNorm, a 4x MLP; a final LayerNorm and the head
// (the vocabulary for the decoder, the classes for the encoder).
ModelCost TransformerCost(const ModelShape& s) {
  const int64_t h = s.hidden_size, out = s.decoder ? s.vocab_size : s.num_classes;
  const int64_t block = 2 * cost::NormParams(h) + cost::LinearParams(h, 3 * h) +
                        cost::LinearParams(h, h) + cost::LinearParams(h, 4 * h) +
                        cost::LinearParams(4 * h, h);
  const double t = static_cast<double>(s.sequence_length), hd = static_cast<double>(h);
  // Per token and layer: qkv 3h², out projection h², MLP 8h²; and the two
  // attention products over the T positions. The embeddings are lookups.
  cost::Work work;
  for (int64_t layer = 0; layer < s.num_layers; ++layer) {
    work.Weights(t * 12 * hd * hd);
    work.Attention(t, hd);
  }
  work.Weights(s.decoder ? t * hd * s.vocab_size : hd * s.num_classes);
  return work.Cost(s.vocab_size * h + s.sequence_length * h + s.num_layers * block +
                   cost::NormParams(h) + cost::LinearParams(h, out));
}

}  // namespace

WorkloadInfo Transformer() {
  WorkloadInfo w;
  w.id = WorkloadId::kTransformer;
  w.name = "transformer";
  w.summary = "transformer encoder (decoder: causal) stack classifying token sequences";
  w.architecture = "token embedding and learnt positions, num_layers pre-LN blocks (fused qkv "
                   "attention, 4x MLP), LayerNorm, linear head";
  w.cost = TransformerCost;
  w.model = w.compiles = w.checks_numerics = w.attends = true;
  w.sample = SampleShape::kTokens;
  w.defaults.sequence_length = 512;
  w.defaults.num_layers = 6;
  w.defaults.hidden_size = 512;
  w.defaults.num_heads = 8;
  w.defaults.num_classes = 10;
  w.defaults.vocab_size = 32000;
  return w;
}

}  // namespace gpubench::workloads
