#include "common/spec_schema.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/spec.h"
#include "common/spec_checks.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/text_format.h"

namespace gpubench {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

void Collect(const Descriptor* type, const std::string& prefix,
             std::vector<const FieldDescriptor*>* chain, std::vector<SchemaField>* out) {
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* f = type->field(i);
    chain->push_back(f);
    const std::string path = prefix.empty() ? f->name() : absl::StrCat(prefix, ".", f->name());
    if (f->options().HasExtension(v1::schema)) {
      SchemaField s;
      s.path = path;
      s.chain = *chain;
      s.schema = &f->options().GetExtension(v1::schema);
      if (!s.schema->sweep().empty()) {
        s.sweep = v1::Sweep::descriptor()->FindFieldByName(s.schema->sweep());
        // A schema naming an axis that is not there, or one of another
        // type, is this tree's own mistake (spec_schema_test finds it first).
        if (s.sweep == nullptr || s.sweep->cpp_type() != f->cpp_type()) std::abort();
      }
      out->push_back(std::move(s));
    } else if (f->message_type() != nullptr && !f->is_repeated() && !f->is_map() &&
               f->message_type() != v1::Sweep::descriptor()) {
      Collect(f->message_type(), path, chain, out);
    }
    chain->pop_back();
  }
}

bool IsNumber(const FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: return true;
    default: return false;
  }
}

// Field f of m (index < 0: singular; else that element) as a double.
double NumberOf(const Message& m, const FieldDescriptor* f, int index) {
  const Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return static_cast<double>(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f);
    case FieldDescriptor::CPPTYPE_UINT64:
      return static_cast<double>(rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f);
    default: return 0;
  }
}

// The value's check against the schema's bounds (strict: 0 is a value) and
// an enum's against its values.
absl::Status CheckValue(const std::string& path, const FieldDescriptor* f,
                        const v1::FieldSchema* schema, const Message& m, int index) {
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {
    const int v = index >= 0 ? m.GetReflection()->GetRepeatedEnumValue(m, f, index)
                             : m.GetReflection()->GetEnumValue(m, f);
    if (f->enum_type()->FindValueByNumber(v) == nullptr) {
      return Invalid(path, absl::StrCat("unknown ", f->enum_type()->name(), " value ", v));
    }
    return absl::OkStatus();
  }
  if (schema == nullptr || !IsNumber(f) || (schema->min() == 0 && schema->max() == 0)) {
    return absl::OkStatus();
  }
  const double v = NumberOf(m, f, index);
  // Written so that NaN, which compares false with everything, fails.
  if (!(v >= schema->min() && v <= schema->max())) {
    return Invalid(path, absl::StrCat("must be in [", BoundText(f, schema->min()), ", ",
                                      BoundText(f, schema->max()), "], got ",
                                      FieldText(m, f, index)));
  }
  return absl::OkStatus();
}

const v1::FieldSchema* SchemaOf(const FieldDescriptor* f) {
  return f->options().HasExtension(v1::schema) ? &f->options().GetExtension(v1::schema) : nullptr;
}

// The field f's target: the schema field whose axis it is.
const SchemaField* TargetOfAxis(const FieldDescriptor* axis) {
  static const auto* targets = [] {
    auto* m = new std::map<const FieldDescriptor*, const SchemaField*>;
    for (const SchemaField& f : SpecSchema()) {
      if (f.sweep != nullptr) (*m)[f.sweep] = &f;
    }
    return m;
  }();
  auto it = targets->find(axis);
  return it == targets->end() ? nullptr : it->second;
}

Message* MutableParent(const std::vector<const FieldDescriptor*>& chain, size_t skip,
                       Message* root) {
  Message* m = root;
  for (size_t i = skip; i + 1 < chain.size(); ++i) {
    m = m->GetReflection()->MutableMessage(m, chain[i]);
  }
  return m;
}

// Copies element i of the repeated axis in sweep into f of m.
void CopyElement(const Message& sweep, const FieldDescriptor* axis, int i, Message* m,
                 const FieldDescriptor* f) {
  const Reflection* in = sweep.GetReflection();
  const Reflection* out = m->GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      out->SetInt32(m, f, in->GetRepeatedInt32(sweep, axis, i)); break;
    case FieldDescriptor::CPPTYPE_INT64:
      out->SetInt64(m, f, in->GetRepeatedInt64(sweep, axis, i)); break;
    case FieldDescriptor::CPPTYPE_UINT32:
      out->SetUInt32(m, f, in->GetRepeatedUInt32(sweep, axis, i)); break;
    case FieldDescriptor::CPPTYPE_UINT64:
      out->SetUInt64(m, f, in->GetRepeatedUInt64(sweep, axis, i)); break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      out->SetDouble(m, f, in->GetRepeatedDouble(sweep, axis, i)); break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      out->SetFloat(m, f, in->GetRepeatedFloat(sweep, axis, i)); break;
    case FieldDescriptor::CPPTYPE_BOOL:
      out->SetBool(m, f, in->GetRepeatedBool(sweep, axis, i)); break;
    case FieldDescriptor::CPPTYPE_ENUM:
      out->SetEnumValue(m, f, in->GetRepeatedEnumValue(sweep, axis, i)); break;
    case FieldDescriptor::CPPTYPE_STRING:
      out->SetString(m, f, in->GetRepeatedString(sweep, axis, i)); break;
    default: break;
  }
}

// Sets the also_sets siblings of f in parent m: a number to f's value, a
// bool to true.
void SetSiblings(const SchemaField& f, Message* m) {
  const Descriptor* type = m->GetDescriptor();
  const Reflection* r = m->GetReflection();
  for (const std::string& name : f.schema->also_sets()) {
    const FieldDescriptor* sibling = type->FindFieldByName(name);
    if (sibling == nullptr) std::abort();  // spec_schema_test names it
    if (sibling->cpp_type() == FieldDescriptor::CPPTYPE_BOOL) {
      r->SetBool(m, sibling, true);
    } else if (sibling->cpp_type() == FieldDescriptor::CPPTYPE_INT64 &&
               f.field()->cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
      r->SetInt64(m, sibling, r->GetInt64(*m, f.field()));
    } else {
      std::abort();  // no other kind is declared
    }
  }
}

}  // namespace

std::string BoundText(const FieldDescriptor* f, double v) {
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE ||
      f->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
    // A whole number as one ("1000000", not StrCat's "1e+06").
    if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrCat(static_cast<int64_t>(v));
    return absl::StrCat(v);
  }
  return absl::StrCat(static_cast<int64_t>(v));
}

const std::vector<SchemaField>& SpecSchema() {
  static const auto* fields = [] {
    auto* out = new std::vector<SchemaField>;
    std::vector<const FieldDescriptor*> chain;
    Collect(v1::JobSpec::descriptor(), "", &chain, out);
    return out;
  }();
  return *fields;
}

const SchemaField* SchemaFieldByFlag(std::string_view flag) {
  for (const SchemaField& f : SpecSchema()) {
    if (!flag.empty() && f.schema->flag() == flag) return &f;
  }
  return nullptr;
}

const SchemaField* SchemaFieldAt(std::string_view path) {
  for (const SchemaField& f : SpecSchema()) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

absl::Status CheckSchemaBounds(const Message& m, const std::string& prefix) {
  const Descriptor* type = m.GetDescriptor();
  const Reflection* r = m.GetReflection();
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* f = type->field(i);
    const std::string path = absl::StrCat(prefix, ".", f->name());
    if (f->is_map()) continue;
    if (f->message_type() != nullptr) {
      // A JobSpec's base and sweep have checks of their own (ValidateRunConfig
      // calls this on the base, CheckSweepValues takes the axes).
      if (f->message_type() == v1::Sweep::descriptor() ||
          f->message_type() == v1::RunConfig::descriptor()) {
        continue;
      }
      if (f->is_repeated()) continue;  // inputs: their own checks
      if (auto s = CheckSchemaBounds(r->GetMessage(m, f), path); !s.ok()) return s;
      continue;
    }
    if (f->is_repeated()) continue;
    const v1::FieldSchema* schema = SchemaOf(f);
    if (schema != nullptr && schema->zero_is_default() && IsNumber(f) && NumberOf(m, f, -1) == 0) {
      continue;
    }
    if (auto s = CheckValue(path, f, schema, m, -1); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CheckSweepValues(const v1::Sweep& sweep, const std::string& prefix) {
  const Descriptor* type = v1::Sweep::descriptor();
  for (int a = 0; a < type->field_count(); ++a) {
    const FieldDescriptor* axis = type->field(a);
    const SchemaField* target = TargetOfAxis(axis);
    const int n = sweep.GetReflection()->FieldSize(sweep, axis);
    for (int i = 0; i < n; ++i) {
      const std::string path = absl::StrCat(prefix, ".", axis->name(), "[", i, "]");
      if (auto s = CheckValue(path, axis, target != nullptr ? target->schema : nullptr, sweep, i);
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

std::vector<const SchemaField*> SweptFields(const v1::Sweep& sweep) {
  std::vector<const SchemaField*> out;
  const Descriptor* type = v1::Sweep::descriptor();
  for (int a = 0; a < type->field_count(); ++a) {
    const FieldDescriptor* axis = type->field(a);
    if (sweep.GetReflection()->FieldSize(sweep, axis) == 0) continue;
    const SchemaField* target = TargetOfAxis(axis);
    if (target == nullptr) std::abort();  // spec_schema_test: every axis has one
    out.push_back(target);
  }
  return out;
}

void ApplySweepValue(const SchemaField& f, const v1::Sweep& sweep, int i,
                     v1::RunConfig* config) {
  // The chain starts at JobSpec.base: skip it.
  Message* parent = MutableParent(f.chain, 1, config);
  CopyElement(sweep, f.sweep, i, parent, f.field());
  SetSiblings(f, parent);
}

std::vector<std::string> ParamsReadBy(std::string_view workload) {
  std::vector<std::string> out;
  for (const SchemaField& f : SpecSchema()) {
    for (const std::string& w : f.schema->workloads()) {
      if (w == workload) out.push_back(f.field()->name());
    }
  }
  return out;
}

namespace {

// Adds json, one element of the repeated message field (a trace's request),
// to target; nothing where it does not parse.
absl::Status AddJsonElement(const std::string& json, Message* target,
                            const FieldDescriptor* field) {
  const Reflection* r = target->GetReflection();
  Message* element = r->AddMessage(target, field);
  if (auto s = google::protobuf::util::JsonStringToMessage(json, element); !s.ok()) {
    r->RemoveLast(target, field);
    return absl::InvalidArgumentError(std::string(s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SetFromText(const SchemaField& f, std::string_view text, bool to_sweep,
                         v1::JobSpec* spec) {
  const FieldDescriptor* field = f.field();
  Message* target = to_sweep ? spec->mutable_sweep() : MutableParent(f.chain, 0, spec);
  const FieldDescriptor* into = to_sweep ? f.sweep : field;
  const Reflection* r = target->GetReflection();
  const std::string value(text);
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      to_sweep ? r->AddString(target, into, value) : r->SetString(target, into, value);
      break;
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool on;
      if (value == "on" || value == "true" || value == "1" || value == "yes") {
        on = true;
      } else if (value == "off" || value == "false" || value == "0" || value == "no") {
        on = false;
      } else {
        return absl::InvalidArgumentError(absl::StrCat("expected on/off, got \"", value, "\""));
      }
      to_sweep ? r->AddBool(target, into, on) : r->SetBool(target, into, on);
      break;
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      auto n = ParseEnumShortName(field->enum_type(), value);
      if (!n.ok()) return absl::InvalidArgumentError(n.status().message());
      to_sweep ? r->AddEnumValue(target, into, *n) : r->SetEnumValue(target, into, *n);
      break;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      double d;
      if (!absl::SimpleAtod(value, &d)) {
        return absl::InvalidArgumentError(absl::StrCat("not a number: \"", value, "\""));
      }
      if (f.bounded() && !(d >= f.schema->min() && d <= f.schema->max())) {
        return absl::InvalidArgumentError(absl::StrCat("must be in [", BoundText(field, f.schema->min()),
                                                       ", ", BoundText(field, f.schema->max()),
                                                       "], got ", d));
      }
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
        to_sweep ? r->AddFloat(target, into, d) : r->SetFloat(target, into, d);
      } else {
        to_sweep ? r->AddDouble(target, into, d) : r->SetDouble(target, into, d);
      }
      break;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      if (!field->is_repeated() || to_sweep) {
        return absl::InvalidArgumentError("takes a file of JSON Lines");
      }
      return AddJsonElement(value, target, into);
    default: {
      int64_t n;
      if (!absl::SimpleAtoi(value, &n)) {
        return absl::InvalidArgumentError(absl::StrCat("not an integer: \"", value, "\""));
      }
      if (f.bounded() && (n < f.schema->min() || n > f.schema->max())) {
        return absl::InvalidArgumentError(absl::StrCat("must be in [", BoundText(field, f.schema->min()), ", ",
                                                       BoundText(field, f.schema->max()), "], got ", n));
      }
      switch (field->cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT32:
          to_sweep ? r->AddInt32(target, into, n) : r->SetInt32(target, into, n); break;
        case FieldDescriptor::CPPTYPE_INT64:
          to_sweep ? r->AddInt64(target, into, n) : r->SetInt64(target, into, n); break;
        case FieldDescriptor::CPPTYPE_UINT32:
          to_sweep ? r->AddUInt32(target, into, n) : r->SetUInt32(target, into, n); break;
        case FieldDescriptor::CPPTYPE_UINT64:
          to_sweep ? r->AddUInt64(target, into, n) : r->SetUInt64(target, into, n); break;
        default: break;
      }
    }
  }
  if (!to_sweep) SetSiblings(f, target);
  return absl::OkStatus();
}

namespace {

// Sets f, a number of parent that reads 0, to its default_number.
void FillDefault(const SchemaField& f, Message* parent) {
  if (f.schema->default_number() == 0 || !f.schema->zero_is_default()) return;
  if (NumberOf(*parent, f.field(), -1) != 0) return;
  const Reflection* r = parent->GetReflection();
  const double d = f.schema->default_number();
  switch (f.field()->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: r->SetInt32(parent, f.field(), d); break;
    case FieldDescriptor::CPPTYPE_INT64: r->SetInt64(parent, f.field(), d); break;
    case FieldDescriptor::CPPTYPE_DOUBLE: r->SetDouble(parent, f.field(), d); break;
    default: std::abort();  // spec_schema_test: no other type has a default_number
  }
}

}  // namespace

void FillParamDefaults(std::string_view workload, v1::WorkloadParams* p) {
  for (const SchemaField& f : SpecSchema()) {
    if (f.field()->containing_type() != v1::WorkloadParams::descriptor()) continue;
    for (const std::string& w : f.schema->workloads()) {
      if (w == workload) FillDefault(f, p);
    }
  }
}

void FillDefaultsOf(Message* m) {
  for (const SchemaField& f : SpecSchema()) {
    if (f.field()->containing_type() == m->GetDescriptor()) FillDefault(f, m);
  }
}

bool TakesHost(const v1::RunConfig& config) {
  for (const SchemaField& f : SpecSchema()) {
    if (!f.in_run() || !f.schema->takes_host()) continue;
    const Message* m = &config;
    for (size_t i = 1; i + 1 < f.chain.size(); ++i) {
      m = &m->GetReflection()->GetMessage(*m, f.chain[i]);
    }
    const Reflection* r = m->GetReflection();
    if (f.field()->has_presence() ? r->HasField(*m, f.field())
                                  : (IsNumber(f.field()) && NumberOf(*m, f.field(), -1) != 0)) {
      return true;
    }
  }
  return false;
}

void FillSpecDefaults(v1::JobSpec* spec) {
  for (const SchemaField& f : SpecSchema()) {
    if (!f.in_run()) FillDefault(f, MutableParent(f.chain, 0, spec));
  }
  v1::Measurement* m = spec->mutable_measurement();
  m->set_max_time_ms(std::max(m->max_time_ms(), m->min_time_ms()));
}

bool ZeroIsNotAValue(std::string_view path) {
  if (path.rfind("spec.", 0) != 0) return false;
  const SchemaField* f = SchemaFieldAt(path.substr(5));
  return f != nullptr && !f->in_run() && f->schema->zero_is_default() &&
         f->schema->default_number() != 0;
}

namespace {

// The shortest text that reads back as v.
std::string DoubleText(double v) {
  for (int digits = 6; digits < 17; ++digits) {
    const std::string text = absl::StrFormat("%.*g", digits, v);
    double back = 0;
    if (absl::SimpleAtod(text, &back) && back == v) return text;
  }
  return absl::StrFormat("%.17g", v);
}

}  // namespace

std::string FieldText(const Message& m, const FieldDescriptor* f, int index) {
  const Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return DoubleText(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return DoubleText(rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "on" : "off";
    case FieldDescriptor::CPPTYPE_ENUM:
      return EnumShortName(f->enum_type(),
                           rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f));
    case FieldDescriptor::CPPTYPE_STRING:
      return rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
    default:
      return "";
  }
}

std::string SettingsText(const v1::JobSpec& spec) {
  std::vector<std::string> sections;
  std::string section, items;
  for (const SchemaField& f : SpecSchema()) {
    if (f.chain.size() != 2 || f.in_run()) continue;  // a message's own fields only
    const std::string name = f.chain[0]->name();
    if (name != section) {
      if (!section.empty()) sections.push_back(absl::StrCat(section, ": ", items));
      section = name;
      items.clear();
    }
    const Message& parent = spec.GetReflection()->GetMessage(spec, f.chain[0]);
    std::string value;
    if (f.field()->cpp_type() == FieldDescriptor::CPPTYPE_BOOL) {
      value = parent.GetReflection()->GetBool(parent, f.field()) ? "on" : "off";
    } else {
      google::protobuf::TextFormat::PrintFieldValueToString(parent, f.field(), -1, &value);
    }
    absl::StrAppend(&items, items.empty() ? "" : ", ", f.field()->name(), " ", value);
  }
  if (!section.empty()) sections.push_back(absl::StrCat(section, ": ", items));
  return absl::StrJoin(sections, "; ");
}

std::string EnumValuesText(const google::protobuf::EnumDescriptor* type) {
  std::vector<std::string> names;
  for (int i = 0; i < type->value_count(); ++i) {
    if (type->value(i)->number() != 0) {
      names.push_back(EnumShortName(type, type->value(i)->number()));
    }
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace gpubench
