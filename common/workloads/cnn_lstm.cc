// cnn_lstm: a CNN per video frame, an LSTM over the frames.
#include "common/model_cost.h"
#include "common/workloads/builtin.h"

namespace gpubench::workloads {
namespace {

// Three stride-2 3x3 conv-BN-ReLU (32, 64, 128) per frame, global average
// pool, one LSTM layer of 256 over the frames, a linear classifier.
ModelCost CnnLstmCost(const ModelShape& s) {
  constexpr int64_t kWidths[] = {3, 32, 64, 128}, kHidden = 256;
  int64_t params = 0;
  cost::Work work;
  int64_t size = s.image_size;
  for (int i = 0; i < 3; ++i) {
    size = cost::ConvOutSize(size, 3, 2, 1);
    // The first conv reads the frames: no input gradient.
    work.Weights(s.sequence_length * cost::ConvMacs(kWidths[i], kWidths[i + 1], 3, size),
                 /*input_gradient=*/i > 0);
    params += cost::ConvParams(kWidths[i], kWidths[i + 1], 3, false) +
              cost::NormParams(kWidths[i + 1]);
  }
  work.Weights(s.sequence_length * cost::LstmStepMacs(kWidths[3], kHidden));
  work.Weights(static_cast<double>(kHidden) * s.num_classes);
  return work.Cost(params + cost::LstmParams(kWidths[3], kHidden) +
                   cost::LinearParams(kHidden, s.num_classes));
}

}  // namespace

WorkloadInfo CnnLstm() {
  WorkloadInfo w;
  w.id = WorkloadId::kCnnLstm;
  w.name = "cnn_lstm";
  w.summary = "a CNN on each frame, an LSTM over sequence_length frames (video clips)";
  w.architecture = "per frame three stride-2 3x3 convs (32, 64, 128) and a global pool, one "
                   "LSTM layer of 256 over the frames, linear classifier";
  w.cost = CnnLstmCost;
  w.model = w.compiles = w.checks_numerics = true;
  w.sample = SampleShape::kFrames;
  w.defaults.sequence_length = 16;
  w.defaults.image_size = 64;
  w.defaults.num_classes = 10;
  return w;
}

}  // namespace gpubench::workloads
