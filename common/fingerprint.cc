#include "common/fingerprint.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"

namespace gpubench {
namespace {

using google::protobuf::FieldDescriptor;

// Words of field names as people write them.
const std::map<std::string, std::string>& Words() {
  static const auto* words = new std::map<std::string, std::string>{
      {"cuda", "CUDA"},   {"cudnn", "cuDNN"}, {"nccl", "NCCL"},   {"blas", "BLAS"},
      {"gpu", "GPU"},     {"uuid", "UUID"},   {"vbios", "VBIOS"}, {"ecc", "ECC"},
      {"mig", "MIG"},     {"sm", "SM"},       {"pcie", "PCIe"},   {"nvlink", "NVLink"},
      {"cpu", "CPU"},     {"torch", "LibTorch"}};
  return *words;
}

// The field's unit, from its name's last word.
std::string UnitOf(const std::string& name) {
  static const std::pair<const char*, const char*> kUnits[] = {
      {"_w", " W"}, {"_mhz", " MHz"}, {"_cores", " cores"}};
  for (const auto& [suffix, unit] : kUnits) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      return unit;
    }
  }
  return "";
}

// "power_limit_default_w" -> "power limit default"; "driver_version" ->
// "driver"; "ecc_enabled" -> "ECC".
std::string LabelOf(const std::string& name) {
  std::vector<std::string> words = absl::StrSplit(name, '_');
  const std::string& last = words.back();
  if (last == "w" || last == "mhz" || last == "cores" || last == "version" ||
      last == "enabled") {
    words.pop_back();
  }
  for (std::string& w : words) {
    auto it = Words().find(w);
    if (it != Words().end()) w = it->second;
  }
  return absl::StrJoin(words, " ");
}

std::string ValueOf(const v1::Fingerprint& f, const FieldDescriptor* field) {
  const auto* r = f.GetReflection();
  const std::string unit = UnitOf(field->name());
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      return r->GetString(f, field);
    case FieldDescriptor::CPPTYPE_BOOL:
      return r->GetBool(f, field) ? "on" : "off";
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(r->GetInt32(f, field), unit);
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      const double v = r->GetDouble(f, field);
      if (field->name() == "cpu_quota_cores" && v == 0) return "unlimited";
      return absl::StrCat(absl::StrFormat("%g", v), unit);
    }
    default:
      return "?";
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> FingerprintFields(const v1::Fingerprint& f) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto* d = f.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* field = d->field(i);
    if (f.GetReflection()->HasField(f, field)) {
      out.emplace_back(LabelOf(field->name()), ValueOf(f, field));
    }
  }
  return out;
}

std::vector<std::string> FingerprintChanges(const v1::Fingerprint& before,
                                            const v1::Fingerprint& after) {
  std::vector<std::string> out;
  if (before.ByteSizeLong() == 0 || after.ByteSizeLong() == 0) return out;
  const auto* d = before.GetDescriptor();
  const auto* r = before.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* field = d->field(i);
    // The card's identity is the host's, not its setup; the link's current
    // generation and width drop when the GPU idles (the maximum ones stay).
    if (field->name() == "gpu_uuid" || field->name() == "gpu_serial" ||
        field->name() == "pcie_generation" || field->name() == "pcie_width") {
      continue;
    }
    const bool had = r->HasField(before, field), has = r->HasField(after, field);
    if (!had && !has) continue;
    const std::string a = had ? ValueOf(before, field) : "-";
    const std::string b = has ? ValueOf(after, field) : "-";
    if (a != b) out.push_back(absl::StrCat(LabelOf(field->name()), " ", a, " \u2192 ", b));
  }
  return out;
}

std::string EnvironmentDiffers(const v1::Fingerprint& before, const v1::Fingerprint& after) {
  const std::vector<std::string> changes = FingerprintChanges(before, after);
  return changes.empty() ? "" : absl::StrCat("environment differs: ", absl::StrJoin(changes, ", "));
}

}  // namespace gpubench
