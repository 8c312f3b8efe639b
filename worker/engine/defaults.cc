#include "worker/engine/config.h"

namespace gpubench::engine {
namespace {

template <typename T>
void Default(T* field, T value) {
  if (*field == T{}) *field = value;
}

}  // namespace

void ApplyWorkloadDefaults(RunConfig* c) {
  const std::string& w = c->workload;
  if (w == "mlp" || w == "simple_cnn") {
    Default(&c->model_size, std::string("small"));
    Default(&c->image_size, 32);
    Default(&c->num_classes, 10);
  } else if (w == "resnet18" || w == "resnet50") {
    Default(&c->image_size, 224);
    Default(&c->num_classes, 1000);
  } else if (w == "unet") {
    Default(&c->image_size, 128);
    Default(&c->num_classes, 3);
  } else if (w == "bilstm") {
    Default(&c->sequence_length, 256);
    Default(&c->num_classes, 3);
    Default(&c->vocab_size, 128);
  } else if (w == "cnn_lstm") {
    Default(&c->sequence_length, 16);
    Default(&c->image_size, 64);
    Default(&c->num_classes, 10);
  } else if (w == "transformer") {
    Default(&c->sequence_length, 512);
    Default(&c->num_layers, 6);
    Default(&c->hidden_size, 512);
    Default(&c->num_heads, 8);
    Default(&c->num_classes, 10);
    Default(&c->vocab_size, 32000);
  } else if (w == "matmul") {
    Default(&c->matmul_m, int64_t{4096});
    Default(&c->matmul_n, int64_t{4096});
    Default(&c->matmul_k, int64_t{4096});
  } else if (w == "copy") {
    Default(&c->copy_bytes, int64_t{256} << 20);
    Default(&c->copy_direction, CopyDirection::kHostToDevice);
  }
  Default(&c->mode, Mode::kTrain);
  Default(&c->device, std::string("auto"));
  Default(&c->precision, Precision::kFp32);
  Default(&c->execution, Execution::kEager);
  Default(&c->input_source, InputSource::kDevice);
  Default(&c->optimizer, Optimizer::kSgd);
  Default(&c->learning_rate, c->optimizer == Optimizer::kAdamW ? 1e-3 : 1e-2);
  Default(&c->batch_size, 32);
}

}  // namespace gpubench::engine
