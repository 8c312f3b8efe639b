#include "client/repro.h"

#include <map>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/spec_flags.h"
#include "common/spec.h"
#include "common/spec_schema.h"
#include "google/protobuf/util/message_differencer.h"

namespace gpubench::client {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// The message that holds f in spec, or null where one on the way is unset.
const Message* HolderOf(const SchemaField& f, const v1::JobSpec& spec) {
  const Message* m = &spec;
  for (size_t i = 0; i + 1 < f.chain.size(); ++i) {
    const Reflection* r = m->GetReflection();
    if (!r->HasField(*m, f.chain[i])) return nullptr;
    m = &r->GetMessage(*m, f.chain[i]);
  }
  return m;
}

// Whether m's field holds a value: set, where it has presence; not its
// zero, where it has none; an element, where it repeats.
bool Holds(const Message& m, const FieldDescriptor* f) {
  const Reflection* r = m.GetReflection();
  return f->is_repeated() ? r->FieldSize(m, f) > 0 : r->HasField(m, f);
}

// m's field f (element i where it repeats) as its flag takes it.
std::string ValueText(const Message& m, const FieldDescriptor* f, int i) {
  return FieldText(m, f, f->is_repeated() ? i : -1);
}

// f's value and, for a range whose MAX is set, ":MAX".
std::string BaseText(const SchemaField& f, const Message& holder) {
  std::string text = ValueText(holder, f.field(), 0);
  if (f.schema->range_max().empty()) return text;
  const std::string parent = f.path.substr(0, f.path.rfind('.') + 1);
  const SchemaField* max = SchemaFieldAt(parent + f.schema->range_max());
  if (max != nullptr && Holds(holder, max->field())) {
    absl::StrAppend(&text, ":", ValueText(holder, max->field(), 0));
  }
  return text;
}

// The first difference between a and b, as MessageDifferencer words it.
std::string FirstDifference(const Message& a, const Message& b) {
  std::string report;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&report);
  if (differ.Compare(a, b)) return "";
  return report.substr(0, report.find('\n'));
}

// What b plans that a does not ("" where they plan the same): each run's
// config, and the settings outside the runs.
absl::StatusOr<std::string> PlanDifference(const v1::JobSpec& a, const v1::JobSpec& b) {
  auto runs_a = ExpandSweep(a);
  if (!runs_a.ok()) return runs_a.status();
  auto runs_b = ExpandSweep(b);
  if (!runs_b.ok()) return absl::StrCat("the flags' spec: ", runs_b.status().message());
  if (runs_a->size() != runs_b->size()) {
    return absl::StrCat(runs_b->size(), " runs, not ", runs_a->size());
  }
  for (size_t i = 0; i < runs_a->size(); ++i) {
    const std::string d = FirstDifference((*runs_a)[i], (*runs_b)[i]);
    if (!d.empty()) return absl::StrCat("run ", i, ": ", d);
  }
  v1::JobSpec rest_a = a, rest_b = b;
  for (v1::JobSpec* s : {&rest_a, &rest_b}) {
    s->clear_base();
    s->clear_sweep();
    FillSpecDefaults(s);
  }
  return FirstDifference(rest_a, rest_b);
}

// The first field spec sets that no flag says (a trace, a field without a
// flag; a range's MAX is said with its MIN), or "": what a plan that
// differs from the flags' likely lacks.
std::string Unsaid(const v1::JobSpec& spec) {
  for (const SchemaField& f : SpecSchema()) {
    const Message* holder = HolderOf(f, spec);
    if (holder == nullptr || !Holds(*holder, f.field())) continue;
    const bool said = f.field()->message_type() == nullptr &&
                      (!f.schema->flag().empty() || !f.schema->flag_group().empty());
    const std::string name = f.field()->name();
    const bool range_max = absl::c_any_of(SpecSchema(), [&](const SchemaField& g) {
      return g.schema->range_max() == name && g.chain.size() == f.chain.size();
    });
    if (!said && !range_max) return f.path;
  }
  return "";
}

// text as one word of a POSIX shell.
std::string ShellWord(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_not_of(
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.,:=/+-") ==
      std::string::npos;
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

}  // namespace

std::vector<SpecFlag> FlagsOf(const v1::JobSpec& spec) {
  // The settings outside the runs as the daemon fills them in: a field at
  // its default says nothing (and a flag of profiling's would turn
  // profiling on).
  static const v1::JobSpec* const defaults = [] {
    auto* d = new v1::JobSpec;
    FillSpecDefaults(d);
    return d;
  }();
  std::vector<SpecFlag> flags;
  std::map<std::string, std::vector<std::string>> groups;  // --slo's NAME=VALUE pairs
  const Message& sweep = spec.sweep();
  for (const SchemaField& f : SpecSchema()) {
    const std::string& flag = f.schema->flag();
    const int axis = f.sweep != nullptr ? sweep.GetReflection()->FieldSize(sweep, f.sweep) : 0;
    if (axis > 0 && !flag.empty()) {
      // The axis replaces the base's value; one value is the base's.
      std::vector<std::string> values;
      for (int i = 0; i < axis; ++i) values.push_back(ValueText(sweep, f.sweep, i));
      flags.emplace_back(flag, absl::StrJoin(values, ","));
      continue;
    }
    const Message* holder = HolderOf(f, spec);
    if (holder == nullptr || !Holds(*holder, f.field()) || f.field()->is_repeated()) continue;
    if (const Message* d = HolderOf(f, *defaults); !f.in_run() && d != nullptr &&
        ValueText(*d, f.field(), 0) == ValueText(*holder, f.field(), 0)) {
      continue;
    }
    const std::string& group = f.schema->flag_group();
    if (!group.empty()) {
      groups[group].push_back(absl::StrCat(f.field()->name().substr(group.size() + 1), "=",
                                           ValueText(*holder, f.field(), 0)));
    } else if (!flag.empty()) {
      flags.emplace_back(flag, BaseText(f, *holder));
    }
  }
  for (const auto& [group, pairs] : groups) flags.emplace_back(group, absl::StrJoin(pairs, ","));
  return flags;
}

absl::StatusOr<std::vector<SpecFlag>> SpecFlagsFor(const v1::JobSpec& spec) {
  std::vector<SpecFlag> flags = FlagsOf(spec);
  v1::JobSpec back;
  if (auto s = ApplySpecFlags(std::map<std::string, std::string>(flags.begin(), flags.end()),
                              &back);
      !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("its flags do not apply: ", s.message()));
  }
  auto difference = PlanDifference(spec, back);
  if (!difference.ok()) return difference.status();
  if (!difference->empty()) {
    // A field without a flag is the likely cause (a default the daemon
    // filled in plans the same).
    const std::string unsaid = Unsaid(spec);
    return absl::FailedPreconditionError(
        unsaid.empty() ? absl::StrCat("flags cannot say all of it: ", *difference)
                       : absl::StrCat(unsaid, " has no flag (", *difference, ")"));
  }
  return flags;
}

std::string ReproCommand(const std::string& job_id, const v1::JobSpec& spec) {
  auto flags = SpecFlagsFor(spec);
  if (!flags.ok()) {
    const std::string file = ShellWord(job_id + ".json");
    return absl::StrCat("gpubench show ", ShellWord(job_id), " --output spec > ", file,
                        " && gpubench submit ", file, "  # ", flags.status().message());
  }
  std::string line = "gpubench submit";
  for (const auto& [name, value] : *flags) {
    absl::StrAppend(&line, " --", name, " ", ShellWord(value));
  }
  return line;
}

}  // namespace gpubench::client
