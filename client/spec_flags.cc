#include "client/spec_flags.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/suggest.h"
#include "common/spec.h"
#include "common/spec_schema.h"

namespace gpubench::client {
namespace {

using Values = std::vector<std::string>;

absl::Status Bad(const std::string& flag, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

absl::StatusOr<int64_t> ToInt(const std::string& flag, const std::string& v) {
  int64_t n;
  if (!absl::SimpleAtoi(v, &n)) return Bad(flag, absl::StrCat("not an integer: \"", v, "\""));
  return n;
}

// One flag: its help, whether it is a switch (bare means on) or free text
// (a comma is part of the value, not a list), and the schema field it sets.
struct Flag {
  std::string help;
  const SchemaField* field = nullptr;
  bool boolean = false;
  bool text = false;
};

// The help of f's flag: its line, unit, values and default, from the schema.
std::string HelpOf(const SchemaField& f) {
  const v1::FieldSchema& s = *f.schema;
  std::string help = s.help();
  if (!s.unit().empty()) absl::StrAppend(&help, " [", s.unit(), "]");
  if (f.field()->enum_type() != nullptr) {
    absl::StrAppend(&help, ": ", EnumValuesText(f.field()->enum_type()));
  }
  if (f.sweep != nullptr) absl::StrAppend(&help, "; a comma list sweeps");
  if (s.powers_of_two()) absl::StrAppend(&help, "; MIN:MAX for the powers of two between");
  if (!s.default_text().empty()) {
    absl::StrAppend(&help, " (default ", s.default_text(), ")");
  } else if (s.default_number() != 0) {
    absl::StrAppend(&help, " (default ", s.default_number(), ")");
  }
  return help;
}

// "MIN:MAX" as every power-of-two multiple of MIN up to MAX (nccl-tests'
// -b MIN -e MAX -f 2); other values as they are.
absl::StatusOr<Values> PowersOfTwo(const std::string& flag, const Values& values) {
  Values expanded;
  for (const std::string& v : values) {
    const std::vector<std::string> ends = absl::StrSplit(v, ':');
    if (ends.size() == 1) {
      expanded.push_back(v);
      continue;
    }
    auto lo = ToInt(flag, ends[0]);
    if (!lo.ok()) return lo.status();
    auto hi = ends.size() == 2 ? ToInt(flag, ends[1]) : Bad(flag, "MIN:MAX");
    if (!hi.ok()) return hi.status();
    if (*lo < 1 || *hi < *lo || *hi > (int64_t{1} << 40)) {
      return Bad(flag, absl::StrCat("range ", v, ": need 1 <= MIN <= MAX <= 2^40"));
    }
    for (int64_t n = *lo; n <= *hi; n *= 2) expanded.push_back(absl::StrCat(n));
  }
  return expanded;
}

// Sets values on the base (one value) or f's sweep axis (several).
absl::Status Apply(const std::string& flag, const SchemaField& f, const Values& given,
                   v1::JobSpec* spec) {
  Values values = given;
  if (f.schema->powers_of_two()) {
    auto expanded = PowersOfTwo(flag, given);
    if (!expanded.ok()) return expanded.status();
    values = *expanded;
  }
  if (values.size() > 1 && f.sweep == nullptr) return Bad(flag, "takes one value");
  for (const std::string& v : values) {
    if (auto s = SetFromText(f, v, /*to_sweep=*/values.size() > 1, spec); !s.ok()) {
      return Bad(flag, std::string(s.message()));
    }
  }
  return absl::OkStatus();
}

// Every spec flag, from the schema.
const std::map<std::string, Flag>& Flags() {
  static const auto* flags = [] {
    auto* m = new std::map<std::string, Flag>;
    for (const SchemaField& f : SpecSchema()) {
      if (f.schema->flag().empty()) continue;
      Flag flag;
      flag.help = HelpOf(f);
      flag.field = &f;
      flag.boolean = f.field()->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_BOOL;
      flag.text = f.schema->text();
      (*m)[f.schema->flag()] = flag;
    }
    return m;
  }();
  return *flags;
}

}  // namespace

const std::map<std::string, std::string>& SpecFlagHelp() {
  static const auto* help = [] {
    auto* m = new std::map<std::string, std::string>;
    for (const auto& [name, flag] : Flags()) (*m)[name] = flag.help;
    return m;
  }();
  return *help;
}

bool IsSpecSwitch(const std::string& name) {
  auto it = Flags().find(name);
  return it != Flags().end() && it->second.boolean;
}

absl::Status ApplySpecFlags(const std::map<std::string, std::string>& flags,
                            v1::JobSpec* spec) {
  for (const auto& [name, value] : flags) {
    auto it = Flags().find(name);
    if (it == Flags().end()) {
      std::vector<std::string> known;
      for (const auto& [flag, unused] : Flags()) known.push_back(flag);
      return Bad(name, absl::StrCat("unknown flag", DidYouMean(name, known), "; see --help"));
    }
    const Values values = it->second.text ? Values{value}
                                          : Values(absl::StrSplit(value, ',', absl::SkipEmpty()));
    if (values.empty()) return Bad(name, "needs a value");
    if (auto s = Apply(name, *it->second.field, values, spec); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace gpubench::client
