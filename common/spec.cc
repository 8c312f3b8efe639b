#include "common/spec.h"

#include <algorithm>
#include <functional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/strict_json.h"
#include "common/workload_defaults.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/io/coded_stream.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"

namespace gpubench {
namespace {

using google::protobuf::EnumDescriptor;

absl::Status Invalid(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// A spec's strings reach file systems (model_path), SQLite and terminals. A
// NUL byte is cut by every C API on the way ("ok.pt\0/etc/shadow" loads
// ok.pt but is stored and shown whole), so it is refused in every string.
// Free text (the job's name, label values) may hold other control bytes, which
// every output escapes; the other strings are paths and names, where a control
// byte is only ever a mistake or a trick.
absl::Status CheckStringBytes(const std::string& path, const std::string& value,
                              bool free_text) {
  for (unsigned char ch : value) {
    if (ch == 0) return Invalid(path, "contains a NUL byte");
    if (!free_text && (ch < 0x20 || ch == 0x7f)) {
      return Invalid(path, absl::StrCat("contains the control byte \\x",
                                        absl::Hex(ch, absl::kZeroPad2)));
    }
  }
  return absl::OkStatus();
}

// Walks every string field of `message`, by reflection so that a field added
// to the spec later is covered too. `path` is the message's own path.
absl::Status CheckStringsOf(const std::string& path,
                            const google::protobuf::Message& message) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const std::string at = absl::StrCat(path, ".", field->name());
    if (field->is_map()) {
      // Only JobSpec.labels is a map today: keys are names, values free text.
      const FieldDescriptor* key = field->message_type()->map_key();
      const FieldDescriptor* value = field->message_type()->map_value();
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        const auto& entry = reflection->GetRepeatedMessage(message, field, i);
        const auto* er = entry.GetReflection();
        std::string key_text = key->cpp_type() == FieldDescriptor::CPPTYPE_STRING
                                   ? er->GetString(entry, key)
                                   : std::string();
        if (auto s = CheckStringBytes(at + " key", key_text, false); !s.ok()) return s;
        const std::string entry_at =
            absl::StrCat(at, "[", absl::CEscape(key_text.substr(0, 80)), "]");
        if (value->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
          if (auto s = CheckStringBytes(entry_at, er->GetString(entry, value), true);
              !s.ok())
            return s;
        } else if (value->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          if (auto s = CheckStringsOf(entry_at, er->GetMessage(entry, value)); !s.ok())
            return s;
        }
      }
      continue;
    }
    const bool free_text = field->full_name() == "gpubench.v1.JobSpec.name";
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
          if (auto s = CheckStringBytes(absl::StrCat(at, "[", i, "]"),
                                        reflection->GetRepeatedString(message, field, i),
                                        free_text);
              !s.ok())
            return s;
        }
      } else if (auto s = CheckStringBytes(at, reflection->GetString(message, field),
                                           free_text);
                 !s.ok()) {
        return s;
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
          if (auto s = CheckStringsOf(absl::StrCat(at, "[", i, "]"),
                                      reflection->GetRepeatedMessage(message, field, i));
              !s.ok())
            return s;
        }
      } else if (auto s = CheckStringsOf(at, reflection->GetMessage(message, field));
                 !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status CheckRange(const std::string& path, T value, T lo, T hi) {
  // Written so that NaN, which compares false with everything, fails.
  if (!(value >= lo && value <= hi)) {
    return Invalid(path, absl::StrCat("must be in [", lo, ", ", hi, "], got ",
                                      value));
  }
  return absl::OkStatus();
}

// Zero means "default" for most numeric knobs, so the range admits it.
template <typename T>
absl::Status CheckOptionalRange(const std::string& path, T value, T lo, T hi) {
  if (value == 0) return absl::OkStatus();
  return CheckRange(path, value, lo, hi);
}

absl::Status CheckEnum(const std::string& path, const EnumDescriptor* type,
                       int value) {
  if (type->FindValueByNumber(value) == nullptr) {
    return Invalid(path, absl::StrCat("unknown ", type->name(), " value ", value));
  }
  return absl::OkStatus();
}

absl::Status CheckWorkload(const std::string& path, const std::string& name) {
  const auto& all = BuiltinWorkloads();
  if (std::find(all.begin(), all.end(), name) == all.end()) {
    return Invalid(path, absl::StrCat("unknown workload \"", name,
                                      "\"; expected one of ",
                                      absl::StrJoin(all, ", ")));
  }
  return absl::OkStatus();
}

absl::Status CheckModelSize(const std::string& path, const std::string& size) {
  if (size.empty() || size == "small" || size == "medium" || size == "large") {
    return absl::OkStatus();
  }
  return Invalid(path, absl::StrCat("must be small, medium or large, got \"",
                                    size, "\""));
}

absl::Status CheckDevice(const std::string& path, const std::string& device) {
  if (device.empty() || device == "auto" || device == "cpu" ||
      device == "cuda" || device == "mps" || device == kEveryGpu) {
    return absl::OkStatus();
  }
  // Exactly "cuda:N", N in decimal without sign, space or leading zero:
  // SimpleAtoi alone takes "cuda: 1" and "cuda:+1", which then hold a lease
  // of their own beside "cuda:1".
  const std::string digits = absl::StartsWith(device, "cuda:") ? device.substr(5) : "";
  int index;
  if (!digits.empty() && digits.size() <= 2 &&
      digits.find_first_not_of("0123456789") == std::string::npos &&
      (digits == "0" || digits[0] != '0') && absl::SimpleAtoi(digits, &index) &&
      index < 64) {
    return absl::OkStatus();
  }
  return Invalid(path, absl::StrCat("must be auto, cpu, cuda, cuda:N, cuda:all or mps, got \"",
                                    device, "\""));
}

constexpr int32_t kMaxBatch = 65536;
constexpr int64_t kMaxMatmul = 65536;
constexpr int64_t kMaxCopyBytes = int64_t{64} << 30;
constexpr int64_t kMaxCollectiveBytes = int64_t{16} << 30;
constexpr int32_t kMaxWorldSize = 64;

absl::Status CheckBatch(const std::string& path, int32_t batch) {
  return CheckRange(path, batch, 1, kMaxBatch);
}

absl::Status ValidatePipeline(const std::string& path,
                              const v1::InputPipeline& p) {
  if (auto s = CheckRange(path + ".loader_threads", p.loader_threads(), 0, 256);
      !s.ok())
    return s;
  if (auto s = CheckRange(path + ".prefetch_depth", p.prefetch_depth(), 0, 64);
      !s.ok())
    return s;
  return CheckRange(path + ".extra_cost_us_per_sample",
                    p.extra_cost_us_per_sample(), 0, 1000000);
}

// An integer input's [low, high): inside its dtype, not empty.
absl::Status CheckValueRange(const std::string& in, const v1::TensorSpec& t) {
  if (t.low() == 0 && t.high() == 0) return absl::OkStatus();
  int64_t min = 0, max = 0;  // the range [low, high) must lie in [min, max]
  switch (t.dtype()) {
    case v1::DTYPE_UINT8: max = 256; break;
    case v1::DTYPE_INT32: min = -(int64_t{1} << 31), max = int64_t{1} << 31; break;
    case v1::DTYPE_INT64: min = -(int64_t{1} << 62), max = int64_t{1} << 62; break;
    default:
      return Invalid(in + ".low", "a value range applies to integer inputs (int64, int32, uint8)");
  }
  if (auto st = CheckRange(in + ".low", t.low(), min, max - 1); !st.ok()) return st;
  if (auto st = CheckRange(in + ".high", t.high(), min + 1, max); !st.ok()) return st;
  if (t.high() <= t.low()) return Invalid(in + ".high", "must be greater than low");
  return absl::OkStatus();
}

absl::Status ValidateParams(const std::string& path, const std::string& workload,
                            const v1::WorkloadParams& p) {
  absl::Status s;
  if (!(s = CheckModelSize(path + ".model_size", p.model_size())).ok()) return s;
  if (!(s = CheckOptionalRange(path + ".image_size", p.image_size(), 8, 4096))
           .ok())
    return s;
  if (!(s = CheckOptionalRange(path + ".num_classes", p.num_classes(), 2,
                               1000000))
           .ok())
    return s;
  if (!(s = CheckOptionalRange(path + ".sequence_length", p.sequence_length(),
                               1, 1 << 20))
           .ok())
    return s;
  if (!(s = CheckOptionalRange(path + ".num_layers", p.num_layers(), 1, 256))
           .ok())
    return s;
  if (!(s = CheckOptionalRange(path + ".hidden_size", p.hidden_size(), 8,
                               65536))
           .ok())
    return s;
  if (!(s = CheckOptionalRange(path + ".num_heads", p.num_heads(), 1, 1024))
           .ok())
    return s;
  // With the workload's defaults for what is left 0: the run gets them.
  const WorkloadDefaults defaults = DefaultsOf(ModelWorkload(workload, p.ddp_model()));
  const int hidden = p.hidden_size() != 0 ? p.hidden_size() : defaults.hidden_size;
  const int heads = p.num_heads() != 0 ? p.num_heads() : defaults.num_heads;
  if (hidden != 0 && heads != 0 && hidden % heads != 0) {
    return Invalid(path + (p.num_heads() != 0 ? ".num_heads" : ".hidden_size"),
                   absl::StrCat("num_heads ", heads, " must divide hidden_size ", hidden));
  }
  if (!(s = CheckOptionalRange(path + ".vocab_size", p.vocab_size(), 2,
                               10000000))
           .ok())
    return s;
  if (!(s = CheckOptionalRange(path + ".matmul_m", p.matmul_m(), int64_t{1},
                               kMaxMatmul))
           .ok())
    return s;
  if (!(s = CheckOptionalRange(path + ".matmul_n", p.matmul_n(), int64_t{1},
                               kMaxMatmul))
           .ok())
    return s;
  if (!(s = CheckOptionalRange(path + ".matmul_k", p.matmul_k(), int64_t{1},
                               kMaxMatmul))
           .ok())
    return s;
  if (!(s = CheckOptionalRange(path + ".copy_bytes", p.copy_bytes(), int64_t{1},
                               kMaxCopyBytes))
           .ok())
    return s;
  if (!(s = CheckEnum(path + ".copy_direction", v1::CopyDirection_descriptor(),
                      p.copy_direction()))
           .ok())
    return s;
  if (!(s = CheckEnum(path + ".collective_op", v1::CollectiveOp_descriptor(),
                      p.collective_op()))
           .ok())
    return s;
  if (!(s = CheckOptionalRange(path + ".collective_bytes", p.collective_bytes(), int64_t{1},
                               kMaxCollectiveBytes))
           .ok())
    return s;
  if (p.has_ddp_bucket_mb() && (p.ddp_bucket_mb() < 0 || p.ddp_bucket_mb() > 4096)) {
    return Invalid(path + ".ddp_bucket_mb",
                   absl::StrCat("must be 0 (one message after backward) to 4096 MiB, got ",
                                p.ddp_bucket_mb()));
  }
  if (!p.ddp_model().empty() && !IsModelWorkload(p.ddp_model())) {
    return Invalid(path + ".ddp_model",
                   absl::StrCat("must be a built-in model (mlp, simple_cnn, resnet18, resnet50, "
                                "unet, bilstm, cnn_lstm, transformer), got \"",
                                p.ddp_model().substr(0, 64),
                                p.ddp_model().size() > 64 ? "..." : "", "\""));
  }
  if (!p.model_sha256().empty() && !IsSha256Hex(p.model_sha256())) {
    return Invalid(path + ".model_sha256", "must be 64 lower-case hex digits");
  }
  if (p.model_path().size() > kMaxModelPathBytes) {
    return Invalid(path + ".model_path",
                   absl::StrCat("must be at most ", kMaxModelPathBytes, " bytes"));
  }
  if (p.inputs_size() > kMaxInputs) {
    return Invalid(path + ".inputs", absl::StrCat("at most ", kMaxInputs, " inputs"));
  }
  for (int i = 0; i < p.inputs_size(); ++i) {
    const std::string in = absl::StrCat(path, ".inputs[", i, "]");
    if (p.inputs(i).shape_size() == 0) return Invalid(in + ".shape", "must not be empty");
    if (p.inputs(i).shape_size() > kMaxInputRank) {
      return Invalid(in + ".shape", absl::StrCat("at most ", kMaxInputRank, " dimensions"));
    }
    for (int d = 0; d < p.inputs(i).shape_size(); ++d) {
      if (auto st = CheckRange(absl::StrCat(in, ".shape[", d, "]"),
                               p.inputs(i).shape(d), int64_t{1}, int64_t{1} << 24);
          !st.ok())
        return st;
    }
    if (auto st = CheckEnum(in + ".dtype", v1::DType_descriptor(), p.inputs(i).dtype());
        !st.ok())
      return st;
    if (auto st = CheckValueRange(in, p.inputs(i)); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status ValidateRunConfig(const std::string& path, const v1::RunConfig& c,
                               bool workload_swept) {
  absl::Status s;
  if (!workload_swept || !c.workload().empty()) {
    if (!(s = CheckWorkload(path + ".workload", c.workload())).ok()) return s;
  }
  if (!(s = ValidateParams(path + ".params", c.workload(), c.params())).ok()) return s;
  if (c.workload() == "torchscript" && c.params().model_path().empty() &&
      c.params().model_sha256().empty()) {
    return Invalid(path + ".params.model_path",
                   "torchscript needs model_path or model_sha256");
  }
  if (c.workload() == "torchscript" && c.params().inputs_size() == 0) {
    return Invalid(path + ".params.inputs", "torchscript needs its input shapes");
  }
  if (!(s = CheckEnum(path + ".mode", v1::Mode_descriptor(), c.mode())).ok())
    return s;
  if (!(s = CheckDevice(path + ".device", c.device())).ok()) return s;
  if (!(s = CheckOptionalRange(path + ".world_size", c.world_size(), 1, kMaxWorldSize)).ok())
    return s;
  if (!(s = CheckOptionalRange(path + ".batch_size", c.batch_size(), 1,
                               kMaxBatch))
           .ok())
    return s;
  if (!(s = CheckEnum(path + ".precision", v1::Precision_descriptor(),
                      c.precision()))
           .ok())
    return s;
  if (!(s = CheckEnum(path + ".execution", v1::Execution_descriptor(),
                      c.execution()))
           .ok())
    return s;
  if ((c.execution() == v1::EXECUTION_CUDA_GRAPH ||
       c.execution() == v1::EXECUTION_AOT_CUDA_GRAPH) &&
      (c.device() == "cpu" || c.device() == "mps")) {
    return Invalid(path + ".execution",
                   absl::StrCat("CUDA graphs need a CUDA device, not \"",
                                c.device(), "\""));
  }
  if (!(s = CheckEnum(path + ".input_source", v1::InputSource_descriptor(),
                      c.input_source()))
           .ok())
    return s;
  if (!(s = ValidatePipeline(path + ".pipeline", c.pipeline())).ok()) return s;
  if (!(s = CheckEnum(path + ".optimizer", v1::Optimizer_descriptor(),
                      c.optimizer()))
           .ok())
    return s;
  return CheckRange(path + ".learning_rate", c.learning_rate(), 0.0, 100.0);
}

// Validates every value of a repeated sweep field with one check.
template <typename Values, typename Check>
absl::Status ForEachValue(const std::string& path, const Values& values,
                          Check check) {
  for (int i = 0; i < values.size(); ++i) {
    if (auto s = check(absl::StrCat(path, "[", i, "]"), values.Get(i)); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

template <typename Values>
absl::Status ForEachEnum(const std::string& path, const Values& values,
                         const EnumDescriptor* type) {
  return ForEachValue(path, values, [type](const std::string& p, int v) {
    return CheckEnum(p, type, v);
  });
}

absl::Status ValidateSweep(const std::string& path, const v1::Sweep& w) {
  absl::Status s;
  if (!(s = ForEachValue(path + ".workload", w.workload(), CheckWorkload)).ok())
    return s;
  if (!(s = ForEachValue(path + ".model_size", w.model_size(), CheckModelSize))
           .ok())
    return s;
  if (!(s = ForEachEnum(path + ".mode", w.mode(), v1::Mode_descriptor())).ok())
    return s;
  if (!(s = ForEachValue(path + ".device", w.device(), CheckDevice)).ok())
    return s;
  if (!(s = ForEachEnum(path + ".precision", w.precision(),
                        v1::Precision_descriptor()))
           .ok())
    return s;
  if (!(s = ForEachEnum(path + ".execution", w.execution(),
                        v1::Execution_descriptor()))
           .ok())
    return s;
  if (!(s = ForEachEnum(path + ".input_source", w.input_source(),
                        v1::InputSource_descriptor()))
           .ok())
    return s;
  auto range = [](int64_t lo, int64_t hi) {
    return [lo, hi](const std::string& p, int64_t v) {
      return CheckRange(p, v, lo, hi);
    };
  };
  if (!(s = ForEachValue(path + ".loader_threads", w.loader_threads(),
                         range(0, 256)))
           .ok())
    return s;
  if (!(s = ForEachValue(path + ".prefetch_depth", w.prefetch_depth(),
                         range(0, 64)))
           .ok())
    return s;
  if (!(s = ForEachValue(path + ".image_size", w.image_size(), range(8, 4096)))
           .ok())
    return s;
  if (!(s = ForEachValue(path + ".sequence_length", w.sequence_length(),
                         range(1, 1 << 20)))
           .ok())
    return s;
  if (!(s = ForEachValue(path + ".matmul_size", w.matmul_size(),
                         range(1, kMaxMatmul)))
           .ok())
    return s;
  if (!(s = ForEachValue(path + ".copy_bytes", w.copy_bytes(),
                         range(1, kMaxCopyBytes)))
           .ok())
    return s;
  if (!(s = ForEachValue(path + ".world_size", w.world_size(), range(1, kMaxWorldSize))).ok())
    return s;
  if (!(s = ForEachEnum(path + ".collective_op", w.collective_op(),
                        v1::CollectiveOp_descriptor()))
           .ok())
    return s;
  if (!(s = ForEachValue(path + ".collective_bytes", w.collective_bytes(),
                         range(1, kMaxCollectiveBytes)))
           .ok())
    return s;
  return ForEachValue(path + ".batch_size", w.batch_size(), CheckBatch);
}

absl::Status ValidateMeasurement(const std::string& path,
                                 const v1::Measurement& m) {
  absl::Status s;
  if (!(s = CheckRange(path + ".warmup_iterations", m.warmup_iterations(), 0,
                       1000000))
           .ok())
    return s;
  if (!(s = CheckRange(path + ".warmup_ms", m.warmup_ms(), int64_t{0},
                       int64_t{3600000}))
           .ok())
    return s;
  if (!(s = CheckRange(path + ".min_iterations", m.min_iterations(), 0,
                       10000000))
           .ok())
    return s;
  if (!(s = CheckRange(path + ".min_time_ms", m.min_time_ms(), int64_t{0},
                       int64_t{86400000}))
           .ok())
    return s;
  if (!(s = CheckRange(path + ".max_time_ms", m.max_time_ms(), int64_t{0},
                       int64_t{86400000}))
           .ok())
    return s;
  if (m.max_time_ms() != 0 && m.max_time_ms() < m.min_time_ms()) {
    return Invalid(path + ".max_time_ms",
                   absl::StrCat("must be at least min_time_ms ", m.min_time_ms(),
                                ", got ", m.max_time_ms()));
  }
  if (!(s = CheckRange(path + ".window_iterations", m.window_iterations(), 0,
                       1000000))
           .ok())
    return s;
  // Negated so that NaN is refused: it would never count a run as stable.
  if (!(m.cv_threshold() >= 0 && m.cv_threshold() < 1)) {
    return Invalid(path + ".cv_threshold",
                   absl::StrCat("must be in [0, 1), got ", m.cv_threshold()));
  }
  if (!(s = CheckRange(path + ".trials", m.trials(), 0, 100)).ok()) return s;
  return CheckRange(path + ".max_iterations", m.max_iterations(), 0, 100000000);
}

// What one run's input would weigh, against its bounds: batch × image²
// (× frames for cnn_lstm), batch × sequence length, and each torchscript
// input's elements. Sizes left 0 count at the workload's default.
absl::Status CheckSize(const std::string& path, const v1::RunConfig& c) {
  const int64_t batch = c.batch_size() > 0 ? c.batch_size() : kDefaultBatchSize;
  const WorkloadDefaults defaults = DefaultsOf(ModelWorkload(c.workload(), c.params().ddp_model()));
  const int64_t image_default = defaults.image_size, tokens_default = defaults.sequence_length;
  const int64_t image = image_default == 0           ? 0
                        : c.params().image_size() > 0 ? c.params().image_size()
                                                      : image_default;
  const int64_t tokens = tokens_default == 0                ? 0
                         : c.params().sequence_length() > 0 ? c.params().sequence_length()
                                                            : tokens_default;
  const int64_t frames = ModelWorkload(c.workload(), c.params().ddp_model()) == "cnn_lstm" ? tokens : 1;
  const int64_t pixels = batch * frames * image * image;
  if (pixels > kMaxBatchPixels) {
    return Invalid(path, absl::StrCat("batch_size ", batch, " × ",
                                      frames > 1 ? absl::StrCat(frames, " frames × ") : "",
                                      "image_size ", image, "² = ", pixels,
                                      " pixels; at most ", kMaxBatchPixels));
  }
  if (batch * tokens > kMaxBatchTokens) {
    return Invalid(path, absl::StrCat("batch_size ", batch, " × sequence_length ", tokens,
                                      " = ", batch * tokens, " tokens; at most ",
                                      kMaxBatchTokens));
  }
  for (int i = 0; i < c.params().inputs_size(); ++i) {
    int64_t elements = batch;
    const auto& shape = c.params().inputs(i).shape();
    for (int d = 1; d < shape.size() && elements <= kMaxInputElements; ++d) {
      elements *= shape.Get(d);
    }
    if (elements > kMaxInputElements) {
      return Invalid(absl::StrCat(path, " params.inputs[", i, "]"),
                     absl::StrCat("batch_size × the other dimensions exceeds ",
                                  kMaxInputElements, " elements"));
    }
  }
  return absl::OkStatus();
}

template <typename Values, typename Apply>
void AddAxis(std::vector<std::function<void(int, v1::RunConfig*)>>* setters,
             std::vector<int>* sizes, const Values& values, Apply apply) {
  if (values.empty()) return;
  sizes->push_back(values.size());
  setters->push_back([&values, apply](int i, v1::RunConfig* c) {
    apply(values.Get(i), c);
  });
}

}  // namespace

bool IsSha256Hex(std::string_view s) {
  return s.size() == 64 &&
         s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

const std::vector<std::string>& BuiltinWorkloads() {
  static const auto* kNames = new std::vector<std::string>{
      "mlp",      "simple_cnn",  "resnet18", "resnet50", "unet",  "bilstm",
      "cnn_lstm", "transformer", "matmul",   "copy",     "empty",
      "torchscript", "collective", "ddp"};
  return *kNames;
}

absl::StatusOr<v1::JobSpec> ParseJobSpecJson(std::string_view json) {
  if (auto s = CheckStrictJson(json, "spec", kMaxJsonDepth); !s.ok()) return s;
  v1::JobSpec spec;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &spec, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec: ", std::string(status.message())));
  }
  return spec;
}

std::string MessageToJson(const google::protobuf::Message& message,
                          bool multiline) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = multiline;
  options.preserve_proto_field_names = true;
  std::string out;
  // Printing a valid message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

absl::Status ValidateJobSpec(const v1::JobSpec& spec) {
  absl::Status s;
  if (spec.name().size() > kMaxNameBytes) {
    return Invalid("spec.name", absl::StrCat("at most ", kMaxNameBytes, " bytes, got ",
                                             spec.name().size()));
  }
  if (spec.labels_size() > kMaxLabels) {
    return Invalid("spec.labels", absl::StrCat("at most ", kMaxLabels, " labels, got ",
                                               spec.labels_size()));
  }
  for (const auto& [key, value] : spec.labels()) {
    if (key.empty() || key.size() > kMaxLabelKeyBytes ||
        key.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              "0123456789_.-/") != std::string::npos) {
      return Invalid("spec.labels",
                     absl::StrCat("a key must be 1 to ", kMaxLabelKeyBytes,
                                  " of A-Z a-z 0-9 _ . - /, got \"", absl::CEscape(key.substr(0, 80)),
                                  "\""));
    }
    if (value.size() > kMaxLabelValueBytes) {
      return Invalid(absl::StrCat("spec.labels[", key, "]"),
                     absl::StrCat("at most ", kMaxLabelValueBytes, " bytes"));
    }
  }
  // After the label keys' own check, which names what a key may hold.
  if (!(s = CheckStringsOf("spec", spec)).ok()) return s;
  if (!(s = ValidateRunConfig("spec.base", spec.base(),
                              !spec.sweep().workload().empty()))
           .ok())
    return s;
  if (!(s = ValidateSweep("spec.sweep", spec.sweep())).ok()) return s;
  if (!(s = ValidateMeasurement("spec.measurement", spec.measurement())).ok())
    return s;
  if (!(s = CheckRange("spec.profiling.iterations", spec.profiling().iterations(),
                       0, 1000))
           .ok())
    return s;
  if (!(s = CheckRange("spec.profiling.top_operators",
                       spec.profiling().top_operators(), 0, 1000))
           .ok())
    return s;
  if (!(s = CheckOptionalRange("spec.telemetry.interval_ms",
                               spec.telemetry().interval_ms(), 10, 60000))
           .ok())
    return s;
  if (!(s = CheckRange("spec.priority", spec.priority(), -1000, 1000)).ok())
    return s;
  if (!(s = CheckRange("spec.timeout_s", spec.timeout_s(), int64_t{0},
                       int64_t{7 * 86400}))
           .ok())
    return s;
  const int points = CountSweepPoints(spec.sweep());
  if (points > kMaxSweepPoints) {
    return Invalid("spec.sweep",
                   absl::StrCat("expands to more than ", kMaxSweepPoints,
                                " runs; split the job or drop an axis"));
  }
  return absl::OkStatus();
}

int CountSweepPoints(const v1::Sweep& w) {
  const int sizes[] = {
      w.workload_size(),        w.model_size_size(),     w.mode_size(),
      w.device_size(),          w.precision_size(),      w.channels_last_size(),
      w.cudnn_benchmark_size(), w.execution_size(),      w.input_source_size(),
      w.loader_threads_size(),  w.pinned_memory_size(),  w.prefetch_depth_size(),
      w.image_size_size(),      w.sequence_length_size(), w.matmul_size_size(),
      w.copy_bytes_size(),      w.batch_size_size(),      w.world_size_size(),
      w.collective_op_size(),   w.collective_bytes_size()};
  int64_t product = 1;
  for (int n : sizes) {
    if (n == 0) continue;
    product *= n;
    if (product > kMaxSweepPoints) return kMaxSweepPoints + 1;
  }
  return static_cast<int>(product);
}

void FillConfigDefaults(v1::RunConfig* c) {
  v1::WorkloadParams* p = c->mutable_params();
  if (c->workload() == "ddp" && p->ddp_model().empty()) p->set_ddp_model(kDefaultDdpModel);
  if (c->workload() == "ddp" && !p->has_ddp_bucket_mb()) p->set_ddp_bucket_mb(kDefaultDdpBucketMb);
  const WorkloadDefaults d = DefaultsOf(ModelWorkload(c->workload(), p->ddp_model()));
  if (p->model_size().empty()) p->set_model_size(d.model_size);
  if (p->image_size() == 0) p->set_image_size(d.image_size);
  if (p->num_classes() == 0) p->set_num_classes(d.num_classes);
  if (p->sequence_length() == 0) p->set_sequence_length(d.sequence_length);
  if (p->num_layers() == 0) p->set_num_layers(d.num_layers);
  if (p->hidden_size() == 0) p->set_hidden_size(d.hidden_size);
  if (p->num_heads() == 0) p->set_num_heads(d.num_heads);
  if (p->vocab_size() == 0) p->set_vocab_size(d.vocab_size);
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
  if (c->mode() == v1::MODE_UNSPECIFIED) c->set_mode(v1::MODE_TRAIN);
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
}

namespace {

// What compiled execution needs of a whole point, defaults filled in (the
// mode may come from the sweep, and unset means train).
absl::Status CheckCompiled(const std::string& path, const v1::RunConfig& c) {
  if (c.execution() != v1::EXECUTION_AOT && c.execution() != v1::EXECUTION_AOT_CUDA_GRAPH) {
    return absl::OkStatus();
  }
  const std::string& w = c.workload();
  if (w == "matmul" || w == "copy" || w == "empty" || w == "torchscript") {
    return Invalid(path + ".execution",
                   absl::StrCat("aot compiles the built-in models (mlp, simple_cnn, resnet18, "
                                "resnet50, unet, bilstm, cnn_lstm, transformer), not ", w,
                                w == "torchscript"
                                    ? "; upload your model's AOTInductor package (.pt2) "
                                      "and run it as torchscript"
                                    : ""));
  }
  if (c.mode() != v1::MODE_INFER) {
    return Invalid(path + ".execution",
                   "aot compiles inference only (AOTInductor); use mode infer, or "
                   "execution eager or cuda_graph to train");
  }
  if (c.device() == "mps") {
    return Invalid(path + ".execution", "aot compiles for cpu or cuda, not mps");
  }
  return absl::OkStatus();
}

// What a point of several ranks (ddp, collective) needs, defaults filled in.
absl::Status CheckDistributed(const std::string& path, const v1::RunConfig& c) {
  const bool distributed = IsDistributedWorkload(c.workload());
  if (!distributed) {
    if (c.world_size() > 1) {
      return Invalid(path + ".world_size",
                     absl::StrCat("only ddp and collective run on several ranks, not ",
                                  c.workload()));
    }
    return absl::OkStatus();
  }
  if (c.device() == kEveryGpu) {
    return Invalid(path + ".device",
                   absl::StrCat(c.workload(), " spreads over world_size GPUs: use device cuda "
                                "(any free GPUs) or cpu, not cuda:all"));
  }
  if (c.device() == "mps") {
    return Invalid(path + ".device", absl::StrCat(c.workload(), " runs on cuda or cpu, not mps"));
  }
  if (absl::StartsWith(c.device(), "cuda:") && c.world_size() > 1) {
    return Invalid(path + ".device",
                   absl::StrCat(c.device(), " names one GPU; world_size ", c.world_size(),
                                " takes any free GPUs: use device cuda"));
  }
  if (c.execution() != v1::EXECUTION_EAGER) {
    return Invalid(path + ".execution", absl::StrCat(c.workload(), " runs eager only"));
  }
  if (c.workload() == "ddp") {
    if (c.mode() != v1::MODE_TRAIN) {
      return Invalid(path + ".mode", "ddp trains (data-parallel training); use mode train");
    }
    if (c.input_source() != v1::INPUT_SOURCE_DEVICE) {
      return Invalid(path + ".input_source", "ddp takes its input on the device");
    }
    return absl::OkStatus();
  }
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

}  // namespace

absl::StatusOr<std::vector<v1::RunConfig>> ExpandSweep(
    const v1::JobSpec& spec) {
  if (auto s = ValidateJobSpec(spec); !s.ok()) return s;
  const v1::Sweep& w = spec.sweep();
  std::vector<std::function<void(int, v1::RunConfig*)>> setters;
  std::vector<int> sizes;
  using C = v1::RunConfig;
  AddAxis(&setters, &sizes, w.workload(),
          [](const std::string& v, C* c) { c->set_workload(v); });
  AddAxis(&setters, &sizes, w.model_size(), [](const std::string& v, C* c) {
    c->mutable_params()->set_model_size(v);
  });
  AddAxis(&setters, &sizes, w.mode(),
          [](int v, C* c) { c->set_mode(static_cast<v1::Mode>(v)); });
  AddAxis(&setters, &sizes, w.device(),
          [](const std::string& v, C* c) { c->set_device(v); });
  AddAxis(&setters, &sizes, w.precision(), [](int v, C* c) {
    c->set_precision(static_cast<v1::Precision>(v));
  });
  AddAxis(&setters, &sizes, w.channels_last(),
          [](bool v, C* c) { c->set_channels_last(v); });
  AddAxis(&setters, &sizes, w.cudnn_benchmark(),
          [](bool v, C* c) { c->set_cudnn_benchmark(v); });
  AddAxis(&setters, &sizes, w.execution(), [](int v, C* c) {
    c->set_execution(static_cast<v1::Execution>(v));
  });
  AddAxis(&setters, &sizes, w.input_source(), [](int v, C* c) {
    c->set_input_source(static_cast<v1::InputSource>(v));
  });
  AddAxis(&setters, &sizes, w.loader_threads(), [](int v, C* c) {
    c->mutable_pipeline()->set_loader_threads(v);
  });
  AddAxis(&setters, &sizes, w.pinned_memory(), [](bool v, C* c) {
    c->mutable_pipeline()->set_pinned_memory(v);
  });
  AddAxis(&setters, &sizes, w.prefetch_depth(), [](int v, C* c) {
    c->mutable_pipeline()->set_prefetch_depth(v);
  });
  AddAxis(&setters, &sizes, w.image_size(),
          [](int v, C* c) { c->mutable_params()->set_image_size(v); });
  AddAxis(&setters, &sizes, w.sequence_length(),
          [](int v, C* c) { c->mutable_params()->set_sequence_length(v); });
  AddAxis(&setters, &sizes, w.matmul_size(), [](int64_t v, C* c) {
    c->mutable_params()->set_matmul_m(v);
    c->mutable_params()->set_matmul_n(v);
    c->mutable_params()->set_matmul_k(v);
  });
  AddAxis(&setters, &sizes, w.copy_bytes(),
          [](int64_t v, C* c) { c->mutable_params()->set_copy_bytes(v); });
  AddAxis(&setters, &sizes, w.batch_size(),
          [](int v, C* c) { c->set_batch_size(v); });
  AddAxis(&setters, &sizes, w.world_size(), [](int v, C* c) { c->set_world_size(v); });
  AddAxis(&setters, &sizes, w.collective_op(), [](int v, C* c) {
    c->mutable_params()->set_collective_op(static_cast<v1::CollectiveOp>(v));
  });
  AddAxis(&setters, &sizes, w.collective_bytes(),
          [](int64_t v, C* c) { c->mutable_params()->set_collective_bytes(v); });

  const int total = CountSweepPoints(w);
  std::vector<v1::RunConfig> runs;
  runs.reserve(total);
  std::vector<int> index(sizes.size(), 0);
  for (int n = 0; n < total; ++n) {
    v1::RunConfig config = spec.base();
    for (size_t a = 0; a < setters.size(); ++a) setters[a](index[a], &config);
    // The base and the axes passed one by one; the checks that relate two
    // fields (a CUDA graph and its device, torchscript and its model, the
    // batch and the image) must also hold for each combination of values.
    if (auto s = ValidateRunConfig(absl::StrCat("spec.sweep (run ", n, ")"),
                                   config, /*workload_swept=*/false);
        !s.ok())
      return s;
    if (auto s = CheckSize(absl::StrCat("spec (run ", n, " of the sweep)"), config); !s.ok()) {
      return s;
    }
    FillConfigDefaults(&config);
    if (auto s = CheckCompiled(absl::StrCat("spec.sweep (run ", n, ")"), config); !s.ok()) {
      return s;
    }
    if (auto s = CheckDistributed(absl::StrCat("spec.sweep (run ", n, ")"), config); !s.ok()) {
      return s;
    }
    if (spec.check_numerics() && IsDistributedWorkload(config.workload())) {
      return Invalid("spec.check_numerics",
                     absl::StrCat("not for ", config.workload(), " (run ", n, " of the sweep)"));
    }
    runs.push_back(std::move(config));
    // Odometer increment, last axis fastest.
    for (int a = static_cast<int>(sizes.size()) - 1; a >= 0; --a) {
      if (++index[a] < sizes[a]) break;
      index[a] = 0;
    }
  }
  return runs;
}

std::string EnumShortName(const EnumDescriptor* type, int value) {
  const auto* v = type->FindValueByNumber(value);
  if (v == nullptr) return absl::StrCat(value);
  // The prefix is the enum's name in UPPER_SNAKE_CASE plus '_'.
  std::string prefix;
  for (char ch : type->name()) {
    if (absl::ascii_isupper(ch) && !prefix.empty()) prefix += '_';
    prefix += absl::ascii_toupper(ch);
  }
  prefix += '_';
  std::string name = v->name();
  if (absl::StartsWith(name, prefix)) name = name.substr(prefix.size());
  return absl::AsciiStrToLower(std::string(name));
}

absl::StatusOr<int> ParseEnumShortName(const EnumDescriptor* type,
                                       std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(std::string(name));
  std::vector<std::string> choices;
  for (int i = 0; i < type->value_count(); ++i) {
    const auto* v = type->value(i);
    if (v->number() == 0) continue;
    const std::string short_name = EnumShortName(type, v->number());
    if (lower == short_name || lower == absl::AsciiStrToLower(v->name())) {
      return v->number();
    }
    choices.push_back(short_name);
  }
  return absl::NotFoundError(absl::StrCat("unknown ", type->name(), " \"", std::string(name),
                                          "\"; expected one of ",
                                          absl::StrJoin(choices, ", ")));
}

std::string ConfigKey(const v1::RunConfig& config) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    config.SerializeToCodedStream(&out);
  }
  return absl::StrCat("k1:", absl::Base64Escape(bytes));
}

absl::StatusOr<v1::RunConfig> ParseConfigKey(const std::string& key) {
  v1::RunConfig config;
  std::string bytes;
  if (absl::StartsWith(key, "k1:")) {
    if (absl::Base64Unescape(absl::string_view(key).substr(3), &bytes) &&
        config.ParseFromString(bytes)) {
      return config;
    }
  } else if (google::protobuf::TextFormat::ParseFromString(key, &config)) {
    return config;  // written by a version before ConfigKey
  }
  return absl::InvalidArgumentError("not a config key");
}

std::string ConfigKeyWithoutBatch(const v1::RunConfig& config) {
  v1::RunConfig rest = config;
  rest.clear_batch_size();
  return ConfigKey(rest);
}

void CountFinishedRun(const v1::Run& run, v1::Job* job) {
  job->set_runs_done(job->runs_done() + 1);
  if (run.state() != v1::RUN_STATE_SUCCEEDED) return;
  int32_t& fits = (*job->mutable_max_batch_size_fits())[ConfigKeyWithoutBatch(run.config())];
  fits = std::max(fits, run.config().batch_size());
}

}  // namespace gpubench
