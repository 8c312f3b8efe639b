#include "common/spec.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/printable.h"
#include "common/spec_checks.h"
#include "common/spec_schema.h"
#include "common/workload_registry.h"

namespace gpubench {
namespace {


template <typename T>
absl::Status CheckRange(const std::string& path, T value, T lo, T hi) {
  // Written so that NaN, which compares false with everything, fails.
  if (!(value >= lo && value <= hi)) {
    return Invalid(path, absl::StrCat("must be in [", lo, ", ", hi, "], got ",
                                      value));
  }
  return absl::OkStatus();
}

// A clock lock: "base", "max" or a frequency in MHz (1 to 10000).
absl::Status CheckGpuClocks(const std::string& path, const std::string& clocks) {
  int mhz = 0;
  if (clocks == "base" || clocks == "max" ||
      (clocks.size() <= 5 && absl::SimpleAtoi(clocks, &mhz) && mhz >= 1 && mhz <= 10000 &&
       clocks.find_first_not_of("0123456789") == std::string::npos)) {
    return absl::OkStatus();
  }
  return Invalid(path, absl::StrCat("\"", Printable(clocks.substr(0, 32)),
                                    "\" is not base, max or a clock in MHz"));
}

absl::Status CheckWorkload(const std::string& path, const std::string& name) {
  if (FindWorkload(name) == nullptr) {
    return Invalid(path, absl::StrCat("unknown workload \"", name, "\"; expected one of ",
                                      WorkloadNames([](const WorkloadInfo&) { return true; })));
  }
  return absl::OkStatus();
}

// A size some workload takes (a sweep's sizes may serve several workloads;
// each point is held to its own workload's in CheckSizeOfWorkload).
absl::Status CheckModelSize(const std::string& path, const std::string& size) {
  if (size.empty()) return absl::OkStatus();
  std::vector<std::string> all;
  for (const WorkloadInfo* w : Workloads()) {
    if (absl::c_linear_search(w->model_sizes, size)) return absl::OkStatus();
    for (const std::string& name : w->model_sizes) {
      all.push_back(absl::StrCat(w->name, " ", name));
    }
  }
  return Invalid(path, absl::StrCat("must be one of ", absl::StrJoin(all, ", "), "; got \"",
                                    size.substr(0, 64), "\""));
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

// The size a point's workload takes, and, where the size names a shape
// (gpt "350m"), no layer count, width or head count that differs from it.
absl::Status CheckSizeOfWorkload(const std::string& path, const std::string& workload,
                                 const v1::WorkloadParams& p) {
  const WorkloadInfo* w = FindWorkload(ModelWorkload(workload, p.ddp_model()));
  if (w == nullptr || w->model_sizes.empty() || p.model_size().empty()) return absl::OkStatus();
  if (!absl::c_linear_search(w->model_sizes, p.model_size())) {
    return Invalid(path + ".model_size",
                   absl::StrCat(w->name, " takes ", absl::StrJoin(w->model_sizes, ", "),
                                "; got \"", p.model_size().substr(0, 64), "\""));
  }
  if (w->size_shape == nullptr || p.model_size() == "custom") return absl::OkStatus();
  const WorkloadDefaults d = DefaultsOf(w->name, p.model_size());
  const std::pair<const char*, std::pair<int64_t, int64_t>> given[] = {
      {"num_layers", {p.num_layers(), d.num_layers}},
      {"hidden_size", {p.hidden_size(), d.hidden_size}},
      {"num_heads", {p.num_heads(), d.num_heads}},
      {"num_kv_heads", {p.num_kv_heads(), d.num_kv_heads}},
      {"ffn_hidden_size", {p.ffn_hidden_size(), d.ffn_hidden_size}}};
  for (const auto& [field, values] : given) {
    if (values.first != 0 && values.first != values.second) {
      return Invalid(absl::StrCat(path, ".", field),
                     absl::StrCat("model_size ", p.model_size(), " has ", values.second,
                                  "; leave it out, or use model_size custom"));
    }
  }
  return absl::OkStatus();
}

// num_heads divides hidden_size (into an even head size where positions
// rotate), and num_kv_heads divides num_heads, with the workload's
// defaults for what is left 0: the run gets them.
absl::Status CheckHeads(const std::string& path, const std::string& workload,
                        const v1::WorkloadParams& p) {
  const std::string_view model = ModelWorkload(workload, p.ddp_model());
  const WorkloadDefaults defaults = DefaultsOf(model, p.model_size());
  const int hidden = p.hidden_size() != 0 ? p.hidden_size() : defaults.hidden_size;
  const int heads = p.num_heads() != 0 ? p.num_heads() : defaults.num_heads;
  const int kv_heads = p.num_kv_heads() != 0 ? p.num_kv_heads() : defaults.num_kv_heads;
  if (hidden != 0 && heads != 0 && hidden % heads != 0) {
    return Invalid(path + (p.num_heads() != 0 ? ".num_heads" : ".hidden_size"),
                   absl::StrCat("num_heads ", heads, " must divide hidden_size ", hidden));
  }
  if (IsWorkload(model, WorkloadId::kLlama) && hidden != 0 && heads != 0 && (hidden / heads) % 2 != 0) {
    return Invalid(path + ".hidden_size",
                   absl::StrCat("rotary positions need an even head size; hidden_size ", hidden,
                                " / num_heads ", heads, " is ", hidden / heads));
  }
  if (heads != 0 && kv_heads != 0 && heads % kv_heads != 0) {
    return Invalid(path + (p.num_kv_heads() != 0 ? ".num_kv_heads" : ".num_heads"),
                   absl::StrCat("num_kv_heads ", kv_heads, " must divide num_heads ", heads));
  }
  return absl::OkStatus();
}

absl::Status ValidateInputs(const std::string& path, const v1::WorkloadParams& p) {
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
    if (v1::DType_descriptor()->FindValueByNumber(p.inputs(i).dtype()) == nullptr) {
      return Invalid(in + ".dtype", absl::StrCat("unknown DType value ", p.inputs(i).dtype()));
    }
    if (auto st = CheckValueRange(in, p.inputs(i)); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status ValidateParams(const std::string& path, const std::string& workload,
                            const v1::WorkloadParams& p) {
  absl::Status s;
  if (!(s = CheckModelSize(path + ".model_size", p.model_size())).ok()) return s;
  if (!(s = CheckSizeOfWorkload(path, workload, p)).ok()) return s;
  if (!(s = CheckHeads(path, workload, p)).ok()) return s;
  if (!p.ddp_model().empty() && !IsModelWorkload(p.ddp_model())) {
    return Invalid(path + ".ddp_model",
                   absl::StrCat("must be a built-in model (",
                                WorkloadNames([](const WorkloadInfo& w) { return w.model; }),
                                "), got \"",
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
  return ValidateInputs(path, p);
}

absl::Status ValidateRunConfig(const std::string& path, const v1::RunConfig& c,
                               bool workload_swept) {
  absl::Status s;
  if (!workload_swept || !c.workload().empty()) {
    if (!(s = CheckWorkload(path + ".workload", c.workload())).ok()) return s;
  }
  // Every number against its schema bounds, every enum against its values.
  if (!(s = CheckSchemaBounds(c, path)).ok()) return s;
  if (!(s = ValidateParams(path + ".params", c.workload(), c.params())).ok()) return s;
  if (IsWorkload(c.workload(), WorkloadId::kTorchscript) && c.params().model_path().empty() &&
      c.params().model_sha256().empty()) {
    return Invalid(path + ".params.model_path",
                   "torchscript needs model_path or model_sha256");
  }
  if (IsWorkload(c.workload(), WorkloadId::kTorchscript) && c.params().inputs_size() == 0) {
    return Invalid(path + ".params.inputs", "torchscript needs its input shapes");
  }
  if (!(s = CheckDevice(path + ".device", c.device())).ok()) return s;
  if ((c.execution() == v1::EXECUTION_CUDA_GRAPH ||
       c.execution() == v1::EXECUTION_AOT_CUDA_GRAPH) &&
      (c.device() == "cpu" || c.device() == "mps")) {
    return Invalid(path + ".execution",
                   absl::StrCat("CUDA graphs need a CUDA device, not \"",
                                c.device(), "\""));
  }
  if (c.probe().size() > 64 ||
      c.probe().find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/.") != std::string::npos) {
    return Invalid(path + ".probe", "at most 64 letters, digits, '_', '/' and '.'");
  }
  if (!c.gpu_clocks().empty() && !(s = CheckGpuClocks(path + ".gpu_clocks", c.gpu_clocks())).ok())
    return s;
  return absl::OkStatus();
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

absl::Status ValidateSweep(const std::string& path, const v1::Sweep& w) {
  absl::Status s;
  if (!(s = CheckSweepValues(w, path)).ok()) return s;
  if (!(s = ForEachValue(path + ".workload", w.workload(), CheckWorkload)).ok()) return s;
  if (!(s = ForEachValue(path + ".model_size", w.model_size(), CheckModelSize)).ok()) return s;
  if (!(s = ForEachValue(path + ".device", w.device(), CheckDevice)).ok()) return s;
  return ForEachValue(path + ".gpu_clocks", w.gpu_clocks(), CheckGpuClocks);
}

// What the schema's bounds cannot say of a measurement.
absl::Status ValidateMeasurement(const std::string& path, const v1::Measurement& m) {
  if (m.max_time_ms() != 0 && m.max_time_ms() < m.min_time_ms()) {
    return Invalid(path + ".max_time_ms",
                   absl::StrCat("must be at least min_time_ms ", m.min_time_ms(),
                                ", got ", m.max_time_ms()));
  }
  // Negated so that NaN is refused: it would never count a run as stable.
  if (!(m.cv_threshold() >= 0 && m.cv_threshold() < 1)) {
    return Invalid(path + ".cv_threshold",
                   absl::StrCat("must be in [0, 1), got ", m.cv_threshold()));
  }
  return absl::OkStatus();
}

}  // namespace

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
  // The numbers and enums outside the runs (measurement, profiling,
  // telemetry, priority...); the base's own come with its checks below.
  if (!(s = ValidateMeasurement("spec.measurement", spec.measurement())).ok())
    return s;
  if (!(s = CheckSchemaBounds(spec, "spec")).ok()) return s;
  if (!(s = ValidateRunConfig("spec.base", spec.base(),
                              !spec.sweep().workload().empty()))
           .ok())
    return s;
  if (!(s = ValidateSweep("spec.sweep", spec.sweep())).ok()) return s;
  const int points = CountSweepPoints(spec.sweep());
  if (points > kMaxSweepPoints) {
    return Invalid("spec.sweep",
                   absl::StrCat("expands to more than ", kMaxSweepPoints,
                                " runs; split the job or drop an axis"));
  }
  return absl::OkStatus();
}

absl::Status ValidatePoint(const v1::JobSpec& spec, int n, v1::RunConfig* config) {
  // The base and the axes passed one by one; the checks that relate two
  // fields (a CUDA graph and its device, torchscript and its model, the
  // batch and the image) must also hold for each combination of values.
  const std::string path = absl::StrCat("spec.sweep (run ", n, ")");
  if (auto s = ValidateRunConfig(path, *config, /*workload_swept=*/false); !s.ok()) return s;
  FillConfigDefaults(config);
  for (auto check : {CheckSize, CheckApplies, CheckDistributed, CheckPair, CheckServe}) {
    if (auto s = check(path, *config); !s.ok()) return s;
  }
  // The run's bound holds at most kMaxServeSlices slices.
  const double slice_ms = config->serve().slice_ms();
  if (slice_ms > 0) {
    v1::JobSpec filled;
    *filled.mutable_measurement() = spec.measurement();
    FillSpecDefaults(&filled);
    const int64_t max_time_ms = filled.measurement().max_time_ms();
    if (slice_ms * kMaxServeSlices < static_cast<double>(max_time_ms)) {
      return Invalid(path + ".serve.slice_ms",
                     absl::StrCat(slice_ms, " ms cuts max_time_ms ", max_time_ms, " into more than ",
                                  kMaxServeSlices, " slices; at least ",
                                  static_cast<double>(max_time_ms) / kMaxServeSlices));
    }
  }
  // A kernel's run says it has no model to check; ranks cannot be checked.
  if (spec.check_numerics() && IsDistributedWorkload(config->workload())) {
    return Invalid("spec.check_numerics",
                   absl::StrCat("not for ", config->workload(), " (run ", n, " of the sweep)"));
  }
  return absl::OkStatus();
}

}  // namespace gpubench
