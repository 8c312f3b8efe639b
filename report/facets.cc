#include "report/facets.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "report/format.h"
#include "common/spec.h"
#include "common/workload_registry.h"

namespace gpubench::report {
namespace internal {
namespace {

std::string OnOff(bool b) { return b ? "on" : "off"; }

// Measures a model, which has a mode and a batch; the kernels and the empty
// workload have neither.
bool RunsModel(const v1::RunConfig& c) {
  const WorkloadInfo* w = FindWorkload(c.workload());
  return w == nullptr || w->batched;
}

// The facets DescribeConfig names, in its order: what runs, how, then where;
// a copy's memory kind follows its size. Each has a word.
constexpr FacetId kLabelOrder[] = {
    kWorkload,  kModelSize,    kParams,         kPinned,    kMode,  kBatch,
    kPrecision, kChannelsLast, kCudnnBenchmark, kExecution, kInput, kGpuSetup, kDevice};

// The power limit and clock lock a run asked for: "500 W, clocks max";
// empty where it asked for neither.
std::string GpuSetupWords(const v1::RunConfig& c, const char* separator) {
  std::vector<std::string> words;
  if (c.power_limit_w() > 0) words.push_back(absl::StrFormat("%gW", c.power_limit_w()));
  if (!c.gpu_clocks().empty()) words.push_back("clocks=" + c.gpu_clocks());
  return absl::StrJoin(words, separator);
}

// The mode in a word; a serving run's with its load: "serve 4 req/s",
// "serve c16" (a closed loop's clients), "serve trace of 500", and its
// prefill chunk where it has one ("serve c16 chunk 512").
std::string ModeWords(const v1::RunConfig& c) {
  const std::string mode = Short(v1::Mode_descriptor(), c.mode());
  if (c.mode() != v1::MODE_SERVE) return mode;
  const v1::ServeLoad& s = c.serve();
  const std::string chunk =
      s.prefill_chunk() > 0 ? absl::StrCat(" chunk ", s.prefill_chunk()) : "";
  if (s.trace_size() > 0) return absl::StrCat(mode, " trace of ", s.trace_size(), chunk);
  if (s.request_rate() <= 0) return absl::StrCat(mode, " c", s.concurrency(), chunk);
  return absl::StrCat(mode, " ", absl::StrFormat("%g", s.request_rate()), " req/s",
                      s.concurrency() > 0 ? absl::StrCat(" c", s.concurrency()) : "", chunk);
}

}  // namespace

bool HostInput(const v1::RunConfig& c) {
  return c.input_source() == v1::INPUT_SOURCE_HOST;
}

bool Trains(const v1::RunConfig& c) { return c.mode() == v1::MODE_TRAIN; }

const std::array<Facet, kFacetCount>& Facets() {
  using C = v1::RunConfig;
  using R = v1::RunResult;
  static const std::array<Facet, kFacetCount> facets = {{
      {"workload", "", "",
       [](const C& c, const R&) {
         return c.workload().empty() ? "-" : c.workload();
       },
       [](const C& c) { return c.workload().empty() ? "?" : c.workload(); }},
      {"size", "", "",
       [](const C& c, const R&) {
         return c.params().model_size().empty() ? "-" : c.params().model_size();
       },
       [](const C& c) {
         // The workload's default size goes without saying (configs are
         // stored with their defaults filled in).
         const std::string& size = c.params().model_size();
         return size == DefaultsOf(ModelWorkload(c.workload(), c.params().ddp_model())).model_size
                    ? std::string()
                    : size;
       }},
      {"params", "", "",
       [](const C& c, const R&) {
         v1::WorkloadParams rest = c.params();
         rest.clear_model_size();
         const std::string text = rest.ShortDebugString();
         return text.empty() ? std::string("-") : text;
       },
       [](const C& c) {
         const v1::WorkloadParams& p = c.params();
         if (IsWorkload(c.workload(), WorkloadId::kMatmul)) {
           return absl::StrFormat("%dx%dx%d", p.matmul_m(), p.matmul_n(),
                                  p.matmul_k());
         }
         if (IsWorkload(c.workload(), WorkloadId::kCopy)) {
           return absl::StrCat(
               Bytes(p.copy_bytes()), " ",
               Short(v1::CopyDirection_descriptor(), p.copy_direction()));
         }
         // Ranks as " x4": a distributed run's width (none where a chart
         // draws along it).
         const std::string ranks =
             c.world_size() > 0 ? absl::StrCat(" x", c.world_size()) : std::string();
         if (IsWorkload(c.workload(), WorkloadId::kCollective)) {
           return absl::StrCat(
               Short(v1::CollectiveOp_descriptor(), p.collective_op()),
               p.collective_bytes() > 0 ? absl::StrCat(" ", Bytes(p.collective_bytes())) : "",
               ranks);
         }
         if (IsWorkload(c.workload(), WorkloadId::kDdp)) return absl::StrCat(p.ddp_model(), ranks);
         return std::string();
       }},
      {"mode", "", "",
       [](const C& c, const R&) { return ModeWords(c); },
       [](const C& c) { return RunsModel(c) ? ModeWords(c) : std::string(); }},
      {"device", "", "",
       [](const C& c, const R& r) {
         // The resolved device, so "auto" runs group by where they ran.
         if (!r.resolved_device().empty()) return r.resolved_device();
         return c.device().empty() ? std::string("auto") : c.device();
       },
       [](const C& c) {
         return c.device() == "auto" ? std::string() : c.device();
       }},
      {"batch", "batch ", "",
       [](const C& c, const R&) {
         return c.batch_size() > 0 ? absl::StrCat(c.batch_size())
                                   : std::string("default");
       },
       [](const C& c) {
         // 32 is the batch size a config without one runs at.
         return RunsModel(c)
                    ? absl::StrCat("b",
                                   c.batch_size() > 0 ? c.batch_size() : 32)
                    : std::string();
       }},
      {"precision", "", "",
       [](const C& c, const R&) {
         return Short(v1::Precision_descriptor(), c.precision());
       },
       [](const C& c) {
         return c.precision() == v1::PRECISION_FP32 || c.precision() == v1::PRECISION_UNSPECIFIED
                    ? std::string()
                    : Short(v1::Precision_descriptor(), c.precision());
       }},
      {"channels_last", "channels_last ", "",
       [](const C& c, const R&) { return OnOff(c.channels_last()); },
       [](const C& c) {
         return c.channels_last() ? std::string("cl") : std::string();
       }},
      {"cudnn_benchmark", "cudnn_benchmark ", "",
       [](const C& c, const R&) { return OnOff(c.cudnn_benchmark()); },
       [](const C& c) {
         return c.cudnn_benchmark() ? std::string("cudnn-bm") : std::string();
       }},
      {"execution", "", "",
       [](const C& c, const R&) {
         return Short(v1::Execution_descriptor(), c.execution());
       },
       [](const C& c) {
         switch (c.execution()) {
           case v1::EXECUTION_CUDA_GRAPH: return std::string("graph");
           case v1::EXECUTION_AOT: return std::string("aot");
           case v1::EXECUTION_AOT_CUDA_GRAPH: return std::string("aot+graph");
           default: return std::string();
         }
       }},
      {"input", "input ", "",
       [](const C& c, const R&) {
         return Short(v1::InputSource_descriptor(), c.input_source());
       },
       [](const C& c) {
         if (!HostInput(c)) return std::string();
         return absl::StrFormat("host/%dL%s", c.pipeline().loader_threads(),
                                c.pipeline().pinned_memory() ? "/pinned" : "");
       }},
      {"loaders", "", " loaders",
       [](const C& c, const R&) {
         return HostInput(c) ? absl::StrCat(c.pipeline().loader_threads())
                             : std::string("-");
       },
       nullptr},
      {"pinned", "pinned ", "",
       [](const C& c, const R&) {
         return HostInput(c) ? OnOff(c.pipeline().pinned_memory())
                             : std::string("-");
       },
       [](const C& c) {
         // A copy's source or destination; the input word names a pipeline's.
         if (!IsWorkload(c.workload(), WorkloadId::kCopy)) return std::string();
         return std::string(c.pipeline().pinned_memory() ? "pinned"
                                                         : "pageable");
       }},
      {"pipeline", "", "",
       [](const C& c, const R&) {
         if (!HostInput(c)) return std::string("-");
         v1::InputPipeline rest = c.pipeline();
         rest.clear_loader_threads();
         rest.clear_pinned_memory();
         const std::string text = rest.ShortDebugString();
         return text.empty() ? std::string("-") : text;
       },
       nullptr},
      {"optimizer", "", "",
       [](const C& c, const R&) {
         return Trains(c) ? Short(v1::Optimizer_descriptor(), c.optimizer())
                          : std::string("-");
       },
       nullptr},
      {"lr", "lr ", "",
       [](const C& c, const R&) {
         if (!Trains(c)) return std::string("-");
         return c.learning_rate() > 0 ? absl::StrFormat("%g", c.learning_rate())
                                      : std::string("default");
       },
       nullptr},
      {"gpu setup", "", "",
       [](const C& c, const R&) {
         const std::string words = GpuSetupWords(c, ", ");
         return words.empty() ? std::string("-") : words;
       },
       [](const C& c) { return GpuSetupWords(c, " "); }},
  }};
  return facets;
}

FacetValues ValuesOf(const v1::RunConfig& c, const v1::RunResult& r) {
  FacetValues v;
  for (int f = 0; f < kFacetCount; ++f) v[f] = Facets()[f].value(c, r);
  return v;
}

std::string GroupKey(const FacetValues& v, FacetMask excluded) {
  std::string key;
  for (int f = 0; f < kFacetCount; ++f) {
    if (excluded & Bit(FacetId(f))) continue;
    absl::StrAppend(&key, v[f], "\x1f");
  }
  return key;
}

std::string GroupLabel(const FacetValues& v,
                       const std::array<bool, kFacetCount>& varying,
                       FacetMask excluded) {
  std::vector<std::string> parts;
  for (int f = 0; f < kFacetCount; ++f) {
    if (!varying[f] || (excluded & Bit(FacetId(f))) || v[f] == "-") continue;
    parts.push_back(absl::StrCat(Facets()[f].prefix, v[f], Facets()[f].suffix));
  }
  return absl::StrJoin(parts, ", ");
}

JobView MakeView(const ReportJob& job) {
  JobView view;
  view.src = &job;
  for (const v1::Run& r : job.runs) view.runs.push_back(&r);
  std::stable_sort(view.runs.begin(), view.runs.end(),
                   [](const v1::Run* a, const v1::Run* b) {
                     return a->index() < b->index();
                   });
  for (const v1::Run* r : view.runs)
    view.values.push_back(ValuesOf(r->config(), r->result()));
  for (size_t i = 1; i < view.values.size(); ++i) {
    for (int f = 0; f < kFacetCount; ++f) {
      if (view.values[i][f] != view.values[0][f]) view.varying[f] = true;
    }
  }
  return view;
}

}  // namespace internal

namespace internal {
namespace {

// A field's value as a label word: on/off, an enum's short name, a hash cut
// to 12 characters, a model path with its file name whole.
std::string FieldWord(const google::protobuf::Message& m, const google::protobuf::FieldDescriptor* f) {
  using FD = google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* r = m.GetReflection();
  switch (f->cpp_type()) {
    case FD::CPPTYPE_BOOL: return OnOff(r->GetBool(m, f));
    case FD::CPPTYPE_INT32: return absl::StrCat(r->GetInt32(m, f));
    case FD::CPPTYPE_INT64: return absl::StrCat(r->GetInt64(m, f));
    case FD::CPPTYPE_UINT32: return absl::StrCat(r->GetUInt32(m, f));
    case FD::CPPTYPE_UINT64: return absl::StrCat(r->GetUInt64(m, f));
    case FD::CPPTYPE_DOUBLE: return absl::StrFormat("%g", r->GetDouble(m, f));
    case FD::CPPTYPE_FLOAT: return absl::StrFormat("%g", r->GetFloat(m, f));
    case FD::CPPTYPE_ENUM: return Short(f->enum_type(), r->GetEnumValue(m, f));
    case FD::CPPTYPE_STRING: {
      const std::string value = r->GetString(m, f);
      if (f->name() != "model_path") return value.substr(0, 12);
      // A path keeps its file name, which tells models apart; a long
      // path's folders give way first.
      const size_t slash = value.rfind('/');
      if (value.size() <= 40 || slash == std::string::npos) return value;
      return "\u2026" + value.substr(slash);
    }
    default: return "";
  }
}

// "name=value" for each singular field of m that differs from reference,
// but those in `named` (the label says them another way).
void ChangedFields(const google::protobuf::Message& m, const google::protobuf::Message& reference,
                   const std::set<std::string>& named, std::vector<std::string>* words) {
  const google::protobuf::Descriptor* type = m.GetDescriptor();
  for (int i = 0; i < type->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = type->field(i);
    if (f->is_repeated() || f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE ||
        named.count(f->name())) {
      continue;
    }
    const std::string value = FieldWord(m, f);
    if (value != FieldWord(reference, f)) words->push_back(absl::StrCat(f->name(), "=", value));
  }
}

// What else in the config differs from its workload's defaults (an image
// size, a prefetch depth, a learning rate): two configs that differ anywhere
// get different labels.
std::vector<std::string> OtherSettings(const v1::RunConfig& config) {
  v1::RunConfig c = config;  // a field left 0 means its default
  FillConfigDefaults(&c);
  const v1::RunConfig reference = DefaultsFor(c);
  std::vector<std::string> words;
  ChangedFields(c.params(), reference.params(),
                {"model_size", "matmul_m", "matmul_n", "matmul_k", "copy_bytes",
                 "copy_direction", "collective_op", "collective_bytes", "ddp_model"},
                &words);
  if (HostInput(c)) {
    ChangedFields(c.pipeline(), reference.pipeline(), {"loader_threads", "pinned_memory"},
                  &words);
  }
  if (Trains(c) && RunsModel(c)) {
    if (c.optimizer() != reference.optimizer()) {
      words.push_back(absl::StrCat("optimizer=", Short(v1::Optimizer_descriptor(), c.optimizer())));
    }
    if (c.learning_rate() != reference.learning_rate()) {
      words.push_back(absl::StrFormat("lr=%g", c.learning_rate()));
    }
  }
  return words;
}

}  // namespace
}  // namespace internal

std::string DescribeConfig(const v1::RunConfig& config) {
  std::vector<std::string> words;
  for (internal::FacetId f : internal::kLabelOrder) {
    if (f == internal::kDevice) {
      for (std::string& w : internal::OtherSettings(config)) words.push_back(std::move(w));
    }
    std::string word = internal::Facets()[f].word(config);
    if (!word.empty()) words.push_back(std::move(word));
  }
  return absl::StrJoin(words, " ");
}

}  // namespace gpubench::report
