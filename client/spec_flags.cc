#include "client/spec_flags.h"

#include <fstream>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
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
// (a comma is part of the value, not a list), and the schema field it sets,
// or for a group's flag (--slo NAME=VALUE,...) the fields by NAME.
struct Flag {
  std::string help;
  const SchemaField* field = nullptr;
  bool boolean = false;
  bool text = false;
  std::map<std::string, const SchemaField*> group;
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

// The sibling of f that a range's MAX sets (the schema's range_max).
const SchemaField* RangeMaxOf(const SchemaField& f) {
  const std::string parent = f.path.substr(0, f.path.rfind('.') + 1);
  return SchemaFieldAt(parent + f.schema->range_max());
}

// The most bytes a JSON Lines flag's file may hold; its lines are the
// trace's bound.
constexpr std::streamoff kMaxFileBytes = std::streamoff{64} << 20;

// A repeated message's flag (--trace FILE): each line of the file one
// element, as JSON; blank lines skipped.
absl::Status ApplyJsonLines(const std::string& flag, const SchemaField& f, const std::string& path,
                            v1::JobSpec* spec) {
  std::ifstream in(path);
  if (!in) return Bad(flag, absl::StrCat("cannot read ", path));
  in.seekg(0, std::ios::end);
  if (in.tellg() > kMaxFileBytes) {
    return Bad(flag, absl::StrCat(path, " is over ", kMaxFileBytes >> 20, " MiB"));
  }
  in.seekg(0);
  std::string line;
  int n = 0, elements = 0;
  while (std::getline(in, line)) {
    ++n;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    if (++elements > kMaxTraceRequests) {
      return Bad(flag, absl::StrCat(path, ": more than ", kMaxTraceRequests, " lines"));
    }
    if (auto s = SetFromText(f, line, /*to_sweep=*/false, spec); !s.ok()) {
      return Bad(flag, absl::StrCat(path, " line ", n, ": ", s.message()));
    }
  }
  if (elements == 0) return Bad(flag, absl::StrCat(path, " holds no line"));
  return absl::OkStatus();
}

// Sets values on the base (one value) or f's sweep axis (several); a
// range's "MIN:MAX" sets f and its range_max sibling.
absl::Status Apply(const std::string& flag, const SchemaField& f, const Values& given,
                   v1::JobSpec* spec) {
  if (f.field()->message_type() != nullptr) return ApplyJsonLines(flag, f, given[0], spec);
  if (!f.schema->range_max().empty() && given.size() == 1 &&
      given[0].find(':') != std::string::npos) {
    const std::vector<std::string> ends = absl::StrSplit(given[0], ':');
    const SchemaField* max = RangeMaxOf(f);
    if (ends.size() != 2 || max == nullptr) return Bad(flag, "MIN:MAX");
    for (const auto& [field, text] : {std::pair{&f, ends[0]}, std::pair{max, ends[1]}}) {
      if (auto s = SetFromText(*field, text, /*to_sweep=*/false, spec); !s.ok()) {
        return Bad(flag, std::string(s.message()));
      }
    }
    return absl::OkStatus();
  }
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

// Sets a group's NAME=VALUE pairs (--slo ttft_ms=500,tpot_ms=50).
absl::Status ApplyGroup(const std::string& flag, const Flag& group, const Values& pairs,
                        v1::JobSpec* spec) {
  for (const std::string& pair : pairs) {
    const std::vector<std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    auto it = group.group.find(kv[0]);
    if (it == group.group.end()) {
      std::vector<std::string> known;
      for (const auto& [name, unused] : group.group) known.push_back(name);
      return Bad(flag, absl::StrCat("no ", kv[0], DidYouMean(kv[0], known), "; one of ",
                                    absl::StrJoin(known, ", ")));
    }
    if (kv.size() != 2) return Bad(flag, absl::StrCat(pair, ": NAME=VALUE"));
    if (auto s = SetFromText(*it->second, kv[1], /*to_sweep=*/false, spec); !s.ok()) {
      return Bad(flag, absl::StrCat(kv[0], ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

// Every spec flag, from the schema.
const std::map<std::string, Flag>& Flags() {
  static const auto* flags = [] {
    auto* m = new std::map<std::string, Flag>;
    for (const SchemaField& f : SpecSchema()) {
      const std::string& group = f.schema->flag_group();
      if (!group.empty()) {
        Flag& g = (*m)[group];
        const std::string name = f.field()->name().substr(group.size() + 1);
        g.group[name] = &f;
        absl::StrAppend(&g.help, g.help.empty() ? "NAME=VALUE pairs: " : "; ", name, ": ",
                        f.schema->help(), f.schema->unit().empty() ? "" : " [", f.schema->unit(),
                        f.schema->unit().empty() ? "" : "]");
        continue;
      }
      if (f.schema->flag().empty()) continue;
      Flag flag;
      flag.help = HelpOf(f);
      flag.field = &f;
      flag.boolean = f.field()->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_BOOL;
      // A file's path keeps its commas.
      flag.text = f.schema->text() || f.field()->message_type() != nullptr;
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
    if (!it->second.group.empty()) {
      if (auto s = ApplyGroup(name, it->second, values, spec); !s.ok()) return s;
      continue;
    }
    if (auto s = Apply(name, *it->second.field, values, spec); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace gpubench::client
