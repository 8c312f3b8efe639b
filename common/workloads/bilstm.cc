// bilstm: a 2-layer bidirectional LSTM classifying character sequences.
#include "common/workloads/builtin.h"

namespace gpubench::workloads {

WorkloadInfo BiLstm() {
  WorkloadInfo w;
  w.name = "bilstm";
  w.summary = "2-layer bidirectional LSTM over character sequences";
  w.model = w.compiles = w.checks_numerics = true;
  w.sample = SampleShape::kTokens;
  w.params = {"sequence_length", "vocab_size", "num_classes"};
  w.defaults.sequence_length = 256;
  w.defaults.num_classes = 3;
  w.defaults.vocab_size = 128;
  return w;
}

}  // namespace gpubench::workloads
