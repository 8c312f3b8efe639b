#include "common/workload_registry.h"

#include <utility>

#include "common/workloads/builtin.h"

namespace gpubench {

const std::vector<const WorkloadInfo*>& Workloads() {
  // One line per workload: its entry, common/workloads/NAME.cc.
  static const auto* kAll = new std::vector<const WorkloadInfo*>{
      new WorkloadInfo(workloads::Mlp()),         new WorkloadInfo(workloads::SimpleCnn()),
      new WorkloadInfo(workloads::ResNet18()),    new WorkloadInfo(workloads::ResNet50()),
      new WorkloadInfo(workloads::UNet()),        new WorkloadInfo(workloads::BiLstm()),
      new WorkloadInfo(workloads::CnnLstm()),     new WorkloadInfo(workloads::Transformer()),
      new WorkloadInfo(workloads::Gpt()),         new WorkloadInfo(workloads::Llama()),
      new WorkloadInfo(workloads::Matmul()),      new WorkloadInfo(workloads::Attention()),
      new WorkloadInfo(workloads::Copy()),        new WorkloadInfo(workloads::Empty()),
      new WorkloadInfo(workloads::TorchScript()), new WorkloadInfo(workloads::Collective()),
      new WorkloadInfo(workloads::Ddp()),
  };
  return *kAll;
}

std::string NameOf(WorkloadId id) {
  for (const WorkloadInfo* w : Workloads()) {
    if (w->id == id) return w->name;
  }
  return "";
}

WorkloadId IdOf(std::string_view name) {
  const WorkloadInfo* w = FindWorkload(name);
  return w == nullptr ? WorkloadId::kUnknown : w->id;
}

const WorkloadInfo* FindWorkload(std::string_view name) {
  for (const WorkloadInfo* w : Workloads()) {
    if (w->name == name) return w;
  }
  return nullptr;
}

std::string WorkloadNames(bool (*pick)(const WorkloadInfo&)) {
  std::string names;
  for (const WorkloadInfo* w : Workloads()) {
    if (!pick(*w)) continue;
    if (!names.empty()) names += ", ";
    names += w->name;
  }
  return names;
}

bool IsModelWorkload(std::string_view workload) {
  const WorkloadInfo* w = FindWorkload(workload);
  return w != nullptr && w->model;
}

bool IsDistributedWorkload(std::string_view workload) {
  const WorkloadInfo* w = FindWorkload(workload);
  return w != nullptr && w->distributed;
}

std::string_view ModelWorkload(std::string_view workload, std::string_view ddp_model) {
  if (workload != "ddp") return workload;
  return ddp_model.empty() ? std::string_view(kDefaultDdpModel) : ddp_model;
}

std::string DefaultText(const WorkloadInfo& w, std::string_view param) {
  const WorkloadDefaults& d = w.defaults;
  if (param == "model_size") return d.model_size;
  if (param == "ddp_model") return kDefaultDdpModel;
  if (param == "ddp_bucket_mb") return std::to_string(kDefaultDdpBucketMb);
  if (param == "copy_direction") return d.copy_direction == 1 ? "host_to_device" : "";
  if (param == "collective_op") return d.collective_op == 1 ? "all_reduce" : "";
  const std::pair<std::string_view, int64_t> numbers[] = {
      {"image_size", d.image_size},   {"num_classes", d.num_classes},
      {"sequence_length", d.sequence_length}, {"num_layers", d.num_layers},
      {"hidden_size", d.hidden_size}, {"num_heads", d.num_heads},
      {"vocab_size", d.vocab_size},   {"num_kv_heads", d.num_kv_heads},
      {"ffn_hidden_size", d.ffn_hidden_size}, {"prompt_length", d.prompt_length},
      {"new_tokens", d.new_tokens},   {"matmul_m", d.matmul_size},
      {"matmul_n", d.matmul_size},    {"matmul_k", d.matmul_size},
      {"copy_bytes", d.copy_bytes},   {"collective_bytes", d.collective_bytes}};
  for (const auto& [name, value] : numbers) {
    if (param == name && value != 0) return std::to_string(value);
  }
  return "";
}

ModelShape DefaultShape(const WorkloadInfo& w, std::string_view model_size) {
  const WorkloadDefaults d = DefaultsOf(w.name, model_size);
  ModelShape s;
  s.model_size = model_size.empty() ? d.model_size : std::string(model_size);
  s.image_size = d.image_size;
  s.num_classes = d.num_classes;
  s.sequence_length = d.sequence_length;
  s.num_layers = d.num_layers;
  s.hidden_size = d.hidden_size;
  s.num_heads = d.num_heads;
  s.vocab_size = d.vocab_size;
  s.num_kv_heads = d.num_kv_heads;
  s.ffn_hidden_size = d.ffn_hidden_size;
  return s;
}

WorkloadDefaults DefaultsOf(std::string_view workload, std::string_view model_size) {
  const WorkloadInfo* w = FindWorkload(workload);
  if (w == nullptr) return WorkloadDefaults{};
  WorkloadDefaults d = w->defaults;
  if (w->size_shape != nullptr && !model_size.empty()) w->size_shape(model_size, &d);
  return d;
}

namespace workloads {

bool ApplySizeShape(const std::vector<SizeShape>& shapes, std::string_view size,
                    WorkloadDefaults* d) {
  if (size == "custom") return true;
  for (const SizeShape& s : shapes) {
    if (size != s.name) continue;
    for (auto [value, field] : {std::pair{s.layers, &d->num_layers}, {s.width, &d->hidden_size},
                                {s.heads, &d->num_heads}, {s.kv_heads, &d->num_kv_heads},
                                {s.ffn, &d->ffn_hidden_size}, {s.vocab, &d->vocab_size}}) {
      if (value != 0) *field = value;
    }
    return true;
  }
  return false;
}

}  // namespace workloads
}  // namespace gpubench
