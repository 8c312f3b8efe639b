#include "common/workload_defaults.h"
#include "worker/engine/config.h"

namespace gpubench::engine {
namespace {

template <typename T>
void Default(T* field, T value) {
  if (*field == T{}) *field = value;
}

}  // namespace

void ApplyWorkloadDefaults(RunConfig* c) {
  if (c->workload == "ddp") Default(&c->ddp_model, std::string(kDefaultDdpModel));
  const WorkloadDefaults d = DefaultsOf(ModelWorkload(c->workload, c->ddp_model));
  Default(&c->model_size, std::string(d.model_size));
  Default(&c->image_size, d.image_size);
  Default(&c->num_classes, d.num_classes);
  Default(&c->sequence_length, d.sequence_length);
  Default(&c->num_layers, d.num_layers);
  Default(&c->hidden_size, d.hidden_size);
  Default(&c->num_heads, d.num_heads);
  Default(&c->vocab_size, d.vocab_size);
  Default(&c->matmul_m, d.matmul_size);
  Default(&c->matmul_n, d.matmul_size);
  Default(&c->matmul_k, d.matmul_size);
  Default(&c->copy_bytes, d.copy_bytes);
  Default(&c->copy_direction, static_cast<CopyDirection>(d.copy_direction));
  Default(&c->collective_bytes, d.collective_bytes);
  Default(&c->collective_op, static_cast<CollectiveOp>(d.collective_op));
  Default(&c->world_size, 1);
  Default(&c->mode, Mode::kTrain);
  Default(&c->device, std::string("auto"));
  Default(&c->precision, Precision::kFp32);
  Default(&c->execution, Execution::kEager);
  Default(&c->input_source, InputSource::kDevice);
  Default(&c->optimizer, Optimizer::kSgd);
  Default(&c->learning_rate, c->optimizer == Optimizer::kAdamW ? kDefaultAdamWLearningRate
                                                                : kDefaultSgdLearningRate);
  Default(&c->batch_size, kDefaultBatchSize);
}

}  // namespace gpubench::engine
