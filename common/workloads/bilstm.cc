// bilstm: a 2-layer bidirectional LSTM classifying character sequences.
#include "common/model_cost.h"
#include "common/workloads/builtin.h"

namespace gpubench::workloads {
namespace {

// A 128-wide embedding, 2 layers of 256 per direction, a linear classifier
// over both directions' final states.
ModelCost BiLstmCost(const ModelShape& s) {
  constexpr int64_t kEmbedding = 128, kHidden = 256;
  // The embedding is a lookup; the first LSTM passes a gradient back to it.
  cost::Work work;
  work.Weights(2.0 * s.sequence_length *
               (cost::LstmStepMacs(kEmbedding, kHidden) + cost::LstmStepMacs(2 * kHidden, kHidden)));
  work.Weights(2.0 * kHidden * s.num_classes);
  return work.Cost(s.vocab_size * kEmbedding +
                   2 * (cost::LstmParams(kEmbedding, kHidden) +
                        cost::LstmParams(2 * kHidden, kHidden)) +
                   cost::LinearParams(2 * kHidden, s.num_classes));
}

}  // namespace

WorkloadInfo BiLstm() {
  WorkloadInfo w;
  w.id = WorkloadId::kBilstm;
  w.name = "bilstm";
  w.summary = "2-layer bidirectional LSTM over character sequences";
  w.architecture = "128-wide embedding, 2 bidirectional LSTM layers of 256 units a direction, "
                   "linear classifier on the final states";
  w.cost = BiLstmCost;
  w.model = w.compiles = w.checks_numerics = true;
  w.sample = SampleShape::kTokens;
  w.defaults.sequence_length = 256;
  w.defaults.num_classes = 3;
  w.defaults.vocab_size = 128;
  return w;
}

}  // namespace gpubench::workloads
