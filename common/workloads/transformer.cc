// transformer: a token classifier over an encoder (or causal decoder) stack.
#include "common/workloads/builtin.h"

namespace gpubench::workloads {

WorkloadInfo Transformer() {
  WorkloadInfo w;
  w.name = "transformer";
  w.summary = "transformer encoder (decoder: causal) stack classifying token sequences";
  w.model = w.compiles = w.checks_numerics = true;
  w.sample = SampleShape::kTokens;
  w.params = {"sequence_length", "num_layers", "hidden_size", "num_heads", "decoder",
              "vocab_size",      "num_classes"};
  w.defaults.sequence_length = 512;
  w.defaults.num_layers = 6;
  w.defaults.hidden_size = 512;
  w.defaults.num_heads = 8;
  w.defaults.num_classes = 10;
  w.defaults.vocab_size = 32000;
  return w;
}

}  // namespace gpubench::workloads
