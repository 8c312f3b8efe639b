// cnn_lstm: a CNN per video frame, an LSTM over the frames.
#include "common/workloads/builtin.h"

namespace gpubench::workloads {

WorkloadInfo CnnLstm() {
  WorkloadInfo w;
  w.name = "cnn_lstm";
  w.summary = "a CNN on each frame, an LSTM over sequence_length frames (video clips)";
  w.model = w.compiles = w.checks_numerics = true;
  w.sample = SampleShape::kFrames;
  w.params = {"sequence_length", "image_size", "num_classes"};
  w.defaults.sequence_length = 16;
  w.defaults.image_size = 64;
  w.defaults.num_classes = 10;
  return w;
}

}  // namespace gpubench::workloads
