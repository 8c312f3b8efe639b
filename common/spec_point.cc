// The checks of one planned point, base and axes combined and its defaults
// filled in: what relates two fields, and what the registry says applies
// to its workload.
#include <algorithm>
#include <cmath>
#include <utility>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/spec.h"
#include "common/spec_checks.h"
#include "common/spec_schema.h"
#include "common/workload_registry.h"
#include "google/protobuf/text_format.h"

namespace gpubench {

ModelCost CostOf(const v1::RunConfig& c) {
  const WorkloadInfo* model = FindWorkload(ModelWorkload(c.workload(), c.params().ddp_model()));
  if (model == nullptr || model->cost == nullptr) return {};
  const v1::WorkloadParams& p = c.params();
  ModelShape s;
  s.model_size = p.model_size();
  s.image_size = p.image_size();
  s.num_classes = p.num_classes();
  s.sequence_length = p.sequence_length();
  s.num_layers = p.num_layers();
  s.hidden_size = p.hidden_size();
  s.num_heads = p.num_heads();
  s.vocab_size = p.vocab_size();
  s.decoder = p.decoder();
  s.num_kv_heads = p.num_kv_heads();
  s.ffn_hidden_size = p.ffn_hidden_size();
  return model->cost(s);
}

// What one run's input would weigh, against its bounds: batch × image²
// (× frames for cnn_lstm), batch × sequence length, and each torchscript
// input's elements; and the model's own floor on the image. Defaults
// filled in.
absl::Status CheckSize(const std::string& path, const v1::RunConfig& c) {
  const WorkloadInfo* model = FindWorkload(ModelWorkload(c.workload(), c.params().ddp_model()));
  if (model == nullptr) return absl::OkStatus();  // ddp_model was refused already
  const SampleShape shape = model->sample;
  const int64_t batch = c.batch_size();
  const bool images = shape == SampleShape::kImage || shape == SampleShape::kFrames;
  const bool sequence = shape == SampleShape::kTokens || shape == SampleShape::kFrames;
  const int64_t image = images ? c.params().image_size() : 0;
  const int64_t tokens = sequence ? c.params().sequence_length() : 0;
  if (images && image < model->min_image_size) {
    return Invalid(path + ".params.image_size",
                   absl::StrCat(model->name, " needs at least ", model->min_image_size,
                                " pixels (its pools), got ", image));
  }
  const int64_t frames = shape == SampleShape::kFrames ? tokens : 1;
  const int64_t pixels = batch * frames * image * image;
  if (pixels > kMaxBatchPixels) {
    return Invalid(path, absl::StrCat("batch_size ", batch, " × ",
                                      frames > 1 ? absl::StrCat(frames, " frames × ") : "",
                                      "image_size ", image, "² = ", pixels,
                                      " pixels; at most ", kMaxBatchPixels));
  }
  if (shape == SampleShape::kTokens && batch * tokens > kMaxBatchTokens) {
    return Invalid(path, absl::StrCat("batch_size ", batch, " × sequence_length ", tokens,
                                      " = ", batch * tokens, " tokens; at most ",
                                      kMaxBatchTokens));
  }
  if (model->language_model && c.mode() == v1::MODE_INFER) {
    // The KV cache holds the prompt and the new tokens of every sequence;
    // gpt's learnt positions end at its context, sequence_length.
    const int64_t context = int64_t{c.params().prompt_length()} + c.params().new_tokens();
    if (model->id == WorkloadId::kGpt && context > tokens) {
      return Invalid(path + ".params.new_tokens",
                     absl::StrCat("prompt_length ", c.params().prompt_length(), " + new_tokens ",
                                  c.params().new_tokens(), " passes gpt's context, ",
                                  "sequence_length ", tokens));
    }
    if (batch * context > kMaxBatchTokens) {
      return Invalid(path, absl::StrCat("batch_size ", batch, " × (prompt_length + new_tokens) ",
                                        context, " = ", batch * context,
                                        " cached tokens; at most ", kMaxBatchTokens));
    }
  }
  for (int i = 0; i < c.params().inputs_size(); ++i) {
    int64_t elements = batch;
    const auto& dims = c.params().inputs(i).shape();
    for (int d = 1; d < dims.size() && elements <= kMaxInputElements; ++d) {
      elements *= dims.Get(d);
    }
    if (elements > kMaxInputElements) {
      return Invalid(absl::StrCat(path, ".params.inputs[", i, "]"),
                     absl::StrCat("batch_size × the other dimensions exceeds ",
                                  kMaxInputElements, " elements"));
    }
  }
  return absl::OkStatus();
}

// Whether the point's mode, execution, input and device apply to its
// workload (the registry's entry), defaults filled in.
absl::Status CheckApplies(const std::string& path, const v1::RunConfig& c) {
  const WorkloadInfo& w = *FindWorkload(c.workload());
  const bool compiled =
      c.execution() == v1::EXECUTION_AOT || c.execution() == v1::EXECUTION_AOT_CUDA_GRAPH;
  if (compiled && !w.compiles) {
    return Invalid(path + ".execution",
                   absl::StrCat("aot compiles the built-in models (",
                                WorkloadNames([](const WorkloadInfo& i) { return i.compiles; }),
                                "), not ", w.name,
                                w.id == WorkloadId::kTorchscript
                                    ? "; upload your model's AOTInductor package (.pt2) "
                                      "and run it as torchscript"
                                    : ""));
  }
  if (compiled && c.mode() == v1::MODE_TRAIN) {
    return Invalid(path + ".execution",
                   "aot compiles inference only (AOTInductor); use mode infer, or "
                   "execution eager or cuda_graph to train");
  }
  if (compiled && c.device() == "mps") {
    return Invalid(path + ".execution", "aot compiles for cpu or cuda, not mps");
  }
  if (c.execution() == v1::EXECUTION_CUDA_GRAPH && !w.graphs) {
    return Invalid(path + ".execution", absl::StrCat(w.name, " runs eager only"));
  }
  if (c.mode() == v1::MODE_INFER && !w.infers) {
    return Invalid(path + ".mode", absl::StrCat(w.name, " trains only; use mode train"));
  }
  if (c.mode() == v1::MODE_TRAIN && !w.trains) {
    return Invalid(path + ".mode", absl::StrCat(w.name, " infers only; use mode infer"));
  }
  if (c.input_source() == v1::INPUT_SOURCE_HOST && !w.host_input) {
    return Invalid(path + ".input_source",
                   absl::StrCat(w.name, " takes its input on the device"));
  }
  if (c.device() == "mps" && !w.on_mps) {
    return Invalid(path + ".device", absl::StrCat(w.name, " runs on cuda or cpu, not mps"));
  }
  if (c.attention() > v1::ATTENTION_AUTO && !w.attends) {
    return Invalid(path + ".attention",
                   absl::StrCat(w.name, " has no attention; the models with attention: ",
                                WorkloadNames([](const WorkloadInfo& i) { return i.attends; })));
  }
  if (c.power_limit_w() != 0 || !c.gpu_clocks().empty()) {
    const char* field = c.power_limit_w() != 0 ? ".power_limit_w" : ".gpu_clocks";
    if (c.device() != "cuda" && !absl::StartsWith(c.device(), "cuda:")) {
      return Invalid(path + field,
                     absl::StrCat("sets a GPU's clocks or power: it needs device cuda, cuda:N or "
                                  "cuda:all, not \"", c.device().empty() ? "auto" : c.device(),
                                  "\""));
    }
    if (IsDistributedWorkload(c.workload())) {
      return Invalid(path + field,
                     absl::StrCat("is set for the one GPU a run names; ", c.workload(),
                                  " takes whichever GPUs are free"));
    }
  }
  if (c.precision() == v1::PRECISION_FP8 && w.id != WorkloadId::kMatmul) {
    return Invalid(path + ".precision",
                   "fp8 is for the matmul workload (torch._scaled_mm, e4m3 operands)");
  }
  return absl::OkStatus();
}

// What a point of several ranks (ddp, collective) needs, defaults filled in.
absl::Status CheckDistributed(const std::string& path, const v1::RunConfig& c) {
  if (!IsDistributedWorkload(c.workload())) {
    if (c.world_size() > 1) {
      return Invalid(path + ".world_size",
                     absl::StrCat(c.workload(), " runs on one rank; several ranks are for ",
                                  WorkloadNames([](const WorkloadInfo& w) { return w.distributed; })));
    }
    return absl::OkStatus();
  }
  if (c.device() == kEveryGpu) {
    return Invalid(path + ".device",
                   absl::StrCat(c.workload(), " spreads over world_size GPUs: use device cuda "
                                "(any free GPUs) or cpu, not cuda:all"));
  }
  // A collective on a named GPU and a peer: a pair (CheckPair). A rank of
  // a pair across hosts (the daemon's probe report::kHostPairProbe; no
  // caller's spec names a probe) is one of the two on its named GPU.
  const bool across_hosts = absl::EndsWith(c.probe(), "/host_pair");
  if (absl::StartsWith(c.device(), "cuda:") && c.world_size() > 1 && !across_hosts &&
      !(c.params().has_peer_device() && IsWorkload(c.workload(), WorkloadId::kCollective))) {
    return Invalid(path + ".device",
                   absl::StrCat(c.device(), " names one GPU; world_size ", c.world_size(),
                                " takes any free GPUs: use device cuda"));
  }
  if (c.execution() != v1::EXECUTION_EAGER) {
    return Invalid(path + ".execution", absl::StrCat(c.workload(), " runs eager only"));
  }
  if (!IsWorkload(c.workload(), WorkloadId::kCollective)) return absl::OkStatus();
  const int64_t element = c.precision() == v1::PRECISION_FP16 ||
                                  c.precision() == v1::PRECISION_BF16
                              ? 2
                              : 4;
  const v1::CollectiveOp op = c.params().collective_op();
  const bool split = op == v1::COLLECTIVE_OP_ALL_GATHER || op == v1::COLLECTIVE_OP_REDUCE_SCATTER;
  const int64_t unit = element * (split ? c.world_size() : 1);
  if (c.params().collective_bytes() % unit != 0) {
    return Invalid(path + ".params.collective_bytes",
                   absl::StrCat(c.params().collective_bytes(), " is not a multiple of ", unit,
                                " (", element, "-byte elements",
                                split ? absl::StrCat(" times world_size ", c.world_size()) : "",
                                ")"));
  }
  return absl::OkStatus();
}

// What a point naming a pair of GPUs (peer_device) or a kernel copy needs.
absl::Status CheckPair(const std::string& path, const v1::RunConfig& c) {
  const v1::WorkloadParams& p = c.params();
  const bool copy = IsWorkload(c.workload(), WorkloadId::kCopy);
  const bool d2d = p.copy_direction() == v1::COPY_DIRECTION_DEVICE_TO_DEVICE;
  if (copy && p.copy_kernel()) {
    if (!d2d) return Invalid(path + ".params.copy_kernel", "a kernel copy is device_to_device");
    if (p.copy_bytes() % 4 != 0) {
      return Invalid(path + ".params.copy_bytes",
                     absl::StrCat(p.copy_bytes(), " is not a multiple of 4 (a kernel copy moves "
                                  "4-byte elements)"));
    }
  }
  if (!p.has_peer_device()) return absl::OkStatus();
  if (!copy && !IsWorkload(c.workload(), WorkloadId::kCollective)) {
    return Invalid(path + ".params.peer_device",
                   absl::StrCat("is for copy and collective, not ", c.workload()));
  }
  const bool cpu = c.device() == "cpu" || c.device() == "mps";
  if (copy && (!d2d || cpu)) {
    return Invalid(path + ".params.peer_device",
                   "a copy to a peer GPU is device_to_device on a CUDA device");
  }
  if (IsWorkload(c.workload(), WorkloadId::kCollective)) {
    const std::string own = absl::StartsWith(c.device(), "cuda:") ? c.device().substr(5) : "";
    if (own.empty() || c.world_size() != 2) {
      return Invalid(path + ".params.peer_device",
                     absl::StrCat("names rank 1's GPU of a pair: world_size 2 on a named GPU "
                                  "(cuda:N), not world_size ", c.world_size(), " on ",
                                  c.device().empty() ? "auto" : c.device()));
    }
    if (own == absl::StrCat(p.peer_device())) {
      return Invalid(path + ".params.peer_device",
                     absl::StrCat("cuda:", p.peer_device(), " is rank 0's GPU already"));
    }
  }
  return absl::OkStatus();
}

namespace {

// A serving trace: its size, each request's arrival (in order) and lengths,
// and the warm-up and measured requests within it. at: "... .serve".
absl::Status CheckTrace(const std::string& at, const v1::ServeLoad& s) {
  if (s.trace_size() == 0) return absl::OkStatus();
  if (s.trace_size() > kMaxTraceRequests) {
    return Invalid(at + ".trace", absl::StrCat(s.trace_size(), " requests; at most ",
                                               kMaxTraceRequests));
  }
  if (s.request_rate() != 0) {
    return Invalid(at + ".request_rate", "a trace sets the arrivals: leave the rate out");
  }
  double last = 0;
  for (int i = 0; i < s.trace_size(); ++i) {
    const v1::TraceRequest& t = s.trace(i);
    const std::string item = absl::StrCat(at, ".trace[", i, "]");
    if (!std::isfinite(t.arrival_ms()) || t.arrival_ms() < last ||
        t.arrival_ms() > kMaxTraceArrivalMs) {
      return Invalid(item + ".arrival_ms",
                     absl::StrCat(t.arrival_ms(), " is not a time at or after the one before, ",
                                  last, ", and within a day of the start (",
                                  static_cast<int64_t>(kMaxTraceArrivalMs),
                                  " ms)"));
    }
    last = t.arrival_ms();
    for (const auto& [name, n] : {std::pair{".input_tokens", t.input_tokens()},
                                  std::pair{".output_tokens", t.output_tokens()}}) {
      if (n < 1 || n > kMaxTraceTokens) {
        return Invalid(item + name,
                       absl::StrCat("must be in [1, ", kMaxTraceTokens, "], got ", n));
      }
    }
  }
  if (int64_t{s.warmup_requests()} + s.num_requests() > s.trace_size()) {
    return Invalid(at + ".num_requests",
                   absl::StrCat("warmup_requests ", s.warmup_requests(), " + num_requests ",
                                s.num_requests(), " pass the trace's ", s.trace_size(),
                                " requests"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckServe(const std::string& path, const v1::RunConfig& c) {
  const std::string at = path + ".serve";
  if (c.mode() != v1::MODE_SERVE) {
    if (c.has_serve()) {
      return Invalid(at, "is the load of a serving run: set mode serve, or leave it out");
    }
    return absl::OkStatus();
  }
  const WorkloadInfo& w = *FindWorkload(c.workload());
  if (!w.language_model) {
    const std::string models =
        WorkloadNames([](const WorkloadInfo& i) { return i.language_model; });
    return Invalid(path + ".mode",
                   absl::StrCat("serve is for the language models (", models, "), not ", w.name));
  }
  const v1::ServeLoad& s = c.serve();
  // A compiled package's prefill takes whole prompts at position 0.
  const bool compiled =
      c.execution() == v1::EXECUTION_AOT || c.execution() == v1::EXECUTION_AOT_CUDA_GRAPH;
  if (compiled && s.prefill_chunk() > 0) {
    return Invalid(at + ".prefill_chunk",
                   "execution aot prefills whole prompts (leave prefill_chunk 0, or run eager "
                   "or cuda_graph)");
  }
  if (auto status = CheckTrace(at, s); !status.ok()) return status;
  // A rate so low that its gaps pass int64 nanoseconds means a closed loop
  // or a mistake.
  if (s.request_rate() > 0 && s.request_rate() < kMinRequestRate) {
    return Invalid(at + ".request_rate",
                   absl::StrCat(s.request_rate(), " is below ", kMinRequestRate,
                                " requests/s; 0 is a closed loop"));
  }
  if (s.input_len_max() != 0 && s.input_len_max() < s.input_len()) {
    return Invalid(at + ".input_len_max", absl::StrCat(s.input_len_max(), " is below input_len ",
                                                       s.input_len()));
  }
  if (s.output_len_max() != 0 && s.output_len_max() < s.output_len()) {
    return Invalid(at + ".output_len_max", absl::StrCat(s.output_len_max(),
                                                        " is below output_len ", s.output_len()));
  }
  // A slot of the cache holds the longest prompt and its tokens; gpt's
  // learnt positions end at its context, sequence_length.
  int64_t input = std::max(s.input_len(), s.input_len_max());
  int64_t output = std::max(s.output_len(), s.output_len_max());
  if (s.trace_size() > 0) {
    input = output = 1;
    for (const v1::TraceRequest& t : s.trace()) {
      input = std::max<int64_t>(input, t.input_tokens());
      output = std::max<int64_t>(output, t.output_tokens());
    }
  }
  const int64_t tokens = c.params().sequence_length();
  if (IsWorkload(c.workload(), WorkloadId::kGpt) && input + output > tokens) {
    return Invalid(at + ".output_len",
                   absl::StrCat("the longest prompt ", input, " + the longest output ", output,
                                " passes gpt's context, sequence_length ", tokens));
  }
  // Every measured token's gap is kept (ITL).
  if (int64_t{s.num_requests()} * output > kMaxBatchTokens) {
    return Invalid(at + ".num_requests",
                   absl::StrCat(s.num_requests(), " requests × the longest output ", output, " = ",
                                int64_t{s.num_requests()} * output, " measured tokens; at most ",
                                kMaxBatchTokens));
  }
  if (c.batch_size() * (input + output) > kMaxBatchTokens) {
    return Invalid(path + ".batch_size",
                   absl::StrCat("batch_size ", c.batch_size(), " slots × (input + output) ",
                                input + output, " = ", c.batch_size() * (input + output),
                                " cached tokens; at most ", kMaxBatchTokens));
  }
  return absl::OkStatus();
}

v1::RunConfig DefaultsFor(const v1::RunConfig& config) {
  v1::RunConfig reference;
  reference.set_workload(config.workload());
  reference.set_mode(config.mode());
  reference.set_input_source(config.input_source());
  reference.mutable_params()->set_ddp_model(config.params().ddp_model());
  FillConfigDefaults(&reference);
  return reference;
}

std::vector<std::string> UnreadParams(const v1::RunConfig& config) {
  std::set<std::string> read;
  for (std::string_view name :
       {std::string_view(config.workload()),
        ModelWorkload(config.workload(), config.params().ddp_model())}) {
    for (const std::string& p : ParamsReadBy(name)) read.insert(p);
  }
  v1::RunConfig filled = config;
  FillConfigDefaults(&filled);
  const v1::RunConfig reference = DefaultsFor(config);
  const v1::WorkloadParams& p = filled.params();
  const google::protobuf::Reflection* r = p.GetReflection();
  std::vector<std::string> unread;
  for (int i = 0; i < p.GetDescriptor()->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = p.GetDescriptor()->field(i);
    if (read.count(f->name())) continue;
    bool set;
    if (f->is_repeated()) {
      set = r->FieldSize(p, f) > 0;
    } else if (f->has_presence()) {
      set = r->HasField(p, f);
    } else {
      std::string value, default_value;
      google::protobuf::TextFormat::PrintFieldValueToString(p, f, -1, &value);
      google::protobuf::TextFormat::PrintFieldValueToString(reference.params(), f, -1,
                                                            &default_value);
      set = value != default_value;
    }
    if (set) unread.push_back(f->name());
  }
  return unread;
}

}  // namespace gpubench
