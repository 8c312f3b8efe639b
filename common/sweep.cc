#include "common/spec.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/spec_checks.h"
#include "common/spec_schema.h"
#include "common/workload_registry.h"

namespace gpubench {

int CountSweepPoints(const v1::Sweep& w) {
  int64_t product = 1;
  const google::protobuf::Descriptor* type = v1::Sweep::descriptor();
  for (int a = 0; a < type->field_count(); ++a) {
    const int n = w.GetReflection()->FieldSize(w, type->field(a));
    if (n == 0) continue;
    product *= n;
    if (product > kMaxSweepPoints) return kMaxSweepPoints + 1;
  }
  return static_cast<int>(product);
}

namespace {

// A serving run's load: lengths from the workload's prompt and new tokens,
// a closed loop's clients as many as the cache's slots, a warm-up that
// fills them; a trace's every request measured.
void FillServeDefaults(const WorkloadDefaults& d, v1::RunConfig* c) {
  v1::ServeLoad* s = c->mutable_serve();
  const int trace = s->trace_size();
  if (trace > 0 && !s->has_warmup_requests()) s->set_warmup_requests(0);
  if (trace > 0 && s->num_requests() == 0) {
    s->set_num_requests(std::max(1, trace - s->warmup_requests()));
  }
  FillDefaultsOf(s);
  if (s->input_len() == 0) s->set_input_len(d.prompt_length);
  if (s->output_len() == 0) s->set_output_len(d.new_tokens);
  if (s->request_rate() == 0 && trace == 0 && s->concurrency() == 0) {
    s->set_concurrency(c->batch_size());
  }
  if (!s->has_warmup_requests()) {
    s->set_warmup_requests(s->request_rate() == 0 ? s->concurrency() : c->batch_size());
  }
}

}  // namespace

void FillConfigDefaults(v1::RunConfig* c) {
  v1::WorkloadParams* p = c->mutable_params();
  if (IsWorkload(c->workload(), WorkloadId::kDdp) && p->ddp_model().empty()) p->set_ddp_model(kDefaultDdpModel);
  if (IsWorkload(c->workload(), WorkloadId::kDdp) && !p->has_ddp_bucket_mb()) p->set_ddp_bucket_mb(kDefaultDdpBucketMb);
  const std::string_view model = ModelWorkload(c->workload(), p->ddp_model());
  const WorkloadInfo* info = FindWorkload(model);
  // A model of named shapes given its layers, widths or heads but no size
  // is a custom one.
  if (p->model_size().empty() && info != nullptr && info->size_shape != nullptr &&
      (p->num_layers() != 0 || p->hidden_size() != 0 || p->num_heads() != 0 ||
       p->num_kv_heads() != 0 || p->ffn_hidden_size() != 0)) {
    p->set_model_size("custom");
  }
  if (p->model_size().empty()) p->set_model_size(DefaultsOf(model).model_size);
  const WorkloadDefaults d = DefaultsOf(model, p->model_size());
  if (p->image_size() == 0) p->set_image_size(d.image_size);
  if (p->num_classes() == 0) p->set_num_classes(d.num_classes);
  if (p->sequence_length() == 0) p->set_sequence_length(d.sequence_length);
  if (p->num_layers() == 0) p->set_num_layers(d.num_layers);
  if (p->hidden_size() == 0) p->set_hidden_size(d.hidden_size);
  if (p->num_heads() == 0) p->set_num_heads(d.num_heads);
  if (p->vocab_size() == 0) p->set_vocab_size(d.vocab_size);
  if (p->num_kv_heads() == 0) p->set_num_kv_heads(d.num_kv_heads);
  if (p->ffn_hidden_size() == 0) p->set_ffn_hidden_size(d.ffn_hidden_size);
  if (p->matmul_m() == 0) p->set_matmul_m(d.matmul_size);
  if (p->matmul_n() == 0) p->set_matmul_n(d.matmul_size);
  if (p->matmul_k() == 0) p->set_matmul_k(d.matmul_size);
  if (p->copy_bytes() == 0) p->set_copy_bytes(d.copy_bytes);
  if (p->copy_direction() == 0) {
    p->set_copy_direction(static_cast<v1::CopyDirection>(d.copy_direction));
  }
  if (p->collective_bytes() == 0) p->set_collective_bytes(d.collective_bytes);
  if (p->collective_op() == 0) {
    p->set_collective_op(static_cast<v1::CollectiveOp>(d.collective_op));
  }
  // Only distributed workloads carry a world_size, so that other configs'
  // keys stay as runs stored before it had one.
  if (c->world_size() == 0 && IsDistributedWorkload(c->workload())) c->set_world_size(1);
  // Train, unless the workload only infers (attention).
  if (c->mode() == v1::MODE_UNSPECIFIED) {
    c->set_mode(info != nullptr && !info->trains && info->infers ? v1::MODE_INFER
                                                                 : v1::MODE_TRAIN);
  }
  // A language model's prompt and new tokens are its inference's; its
  // attention kernel is named (other configs keep their keys as stored
  // before there was a choice: unset is auto).
  const bool language_model = info != nullptr && info->language_model;
  if (language_model && c->mode() == v1::MODE_INFER) {
    if (p->prompt_length() == 0) p->set_prompt_length(d.prompt_length);
    if (p->new_tokens() == 0) p->set_new_tokens(d.new_tokens);
  }
  if (language_model && c->attention() == v1::ATTENTION_UNSPECIFIED) {
    c->set_attention(v1::ATTENTION_AUTO);
  }
  if (c->device().empty()) c->set_device("auto");
  if (c->batch_size() == 0) c->set_batch_size(kDefaultBatchSize);
  if (c->precision() == v1::PRECISION_UNSPECIFIED) c->set_precision(v1::PRECISION_FP32);
  if (c->execution() == v1::EXECUTION_UNSPECIFIED) c->set_execution(v1::EXECUTION_EAGER);
  if (c->input_source() == v1::INPUT_SOURCE_UNSPECIFIED) {
    c->set_input_source(v1::INPUT_SOURCE_DEVICE);
  }
  if (c->input_source() == v1::INPUT_SOURCE_HOST && c->pipeline().prefetch_depth() == 0) {
    c->mutable_pipeline()->set_prefetch_depth(kDefaultPrefetchDepth);
  }
  if (c->optimizer() == v1::OPTIMIZER_UNSPECIFIED) c->set_optimizer(v1::OPTIMIZER_SGD);
  if (c->learning_rate() == 0) {
    c->set_learning_rate(c->optimizer() == v1::OPTIMIZER_ADAMW ? kDefaultAdamWLearningRate
                                                              : kDefaultSgdLearningRate);
  }
  // A parameter with one default for every workload that reads it.
  FillParamDefaults(model, p);
  if (c->mode() == v1::MODE_SERVE) FillServeDefaults(d, c);
}

absl::StatusOr<std::vector<v1::RunConfig>> ExpandSweep(
    const v1::JobSpec& spec) {
  if (auto s = ValidateJobSpec(spec); !s.ok()) return s;
  const v1::Sweep& w = spec.sweep();
  // The non-empty axes in declaration order, the last varying fastest.
  const std::vector<const SchemaField*> axes = SweptFields(w);
  std::vector<int> sizes;
  for (const SchemaField* f : axes) sizes.push_back(w.GetReflection()->FieldSize(w, f->sweep));
  const int total = CountSweepPoints(w);
  std::vector<v1::RunConfig> runs;
  runs.reserve(total);
  std::vector<int> index(sizes.size(), 0);
  for (int n = 0; n < total; ++n) {
    v1::RunConfig config = spec.base();
    for (size_t a = 0; a < axes.size(); ++a) ApplySweepValue(*axes[a], w, index[a], &config);
    if (auto s = ValidatePoint(spec, n, &config); !s.ok()) return s;
    runs.push_back(std::move(config));
    // Odometer increment, last axis fastest.
    for (int a = static_cast<int>(sizes.size()) - 1; a >= 0; --a) {
      if (++index[a] < sizes[a]) break;
      index[a] = 0;
    }
  }
  return runs;
}

}  // namespace gpubench
