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
#include "common/spec_checks.h"
#include "common/spec_schema.h"
#include "common/workload_registry.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/io/coded_stream.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace gpubench {

using google::protobuf::EnumDescriptor;

bool IsSha256Hex(std::string_view s) {
  return s.size() == 64 &&
         s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

namespace {

// Rewrites, in a parsed JSON value of message type `type`, each enum
// field's short name ("train", "fp16") to the full one protobuf's JSON
// takes ("MODE_TRAIN"); fields are found by their proto or JSON name. A name
// that is no value of its enum is InvalidArgument naming the field and the
// values it takes.
absl::Status FullEnumNames(const google::protobuf::Descriptor* type, const std::string& path,
                           google::protobuf::Value* value) {
  if (!value->has_struct_value()) return absl::OkStatus();
  for (auto& [key, field_value] : *value->mutable_struct_value()->mutable_fields()) {
    const google::protobuf::FieldDescriptor* field = type->FindFieldByName(key);
    if (field == nullptr) field = type->FindFieldByCamelcaseName(key);
    if (field == nullptr || field->is_map()) continue;
    const std::string name = path + "." + field->name();
    std::vector<google::protobuf::Value*> items;
    if (field_value.has_list_value()) {
      for (auto& item : *field_value.mutable_list_value()->mutable_values()) items.push_back(&item);
    } else {
      items.push_back(&field_value);
    }
    for (size_t i = 0; i < items.size(); ++i) {
      google::protobuf::Value* item = items[i];
      const std::string item_name =
          field->is_repeated() ? absl::StrCat(name, "[", i, "]") : name;
      if (field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
        if (auto s = FullEnumNames(field->message_type(), item_name, item); !s.ok()) return s;
      } else if (field->type() == google::protobuf::FieldDescriptor::TYPE_ENUM &&
                 item->has_string_value()) {
        auto number = ParseEnumShortName(field->enum_type(), item->string_value());
        if (!number.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(item_name, ": ", number.status().message()));
        }
        item->set_string_value(field->enum_type()->FindValueByNumber(*number)->name());
      }
    }
  }
  return absl::OkStatus();
}

// Where a JSON spec writes 0 for a number field that protobuf's JSON cannot
// tell from an absent one, and absent reads as a non-zero default: "0" must
// not silently become 32. Paths as validation names them ("base.batch_size").
void ExplicitZeros(const google::protobuf::Descriptor* type, const google::protobuf::Value& value,
                   const std::string& path,
                   std::vector<std::pair<std::string, std::vector<const google::protobuf::FieldDescriptor*>>>* out,
                   std::vector<const google::protobuf::FieldDescriptor*> chain = {}) {
  using google::protobuf::FieldDescriptor;
  if (!value.has_struct_value()) return;
  for (const auto& [key, field_value] : value.struct_value().fields()) {
    const FieldDescriptor* field = type->FindFieldByName(key);
    if (field == nullptr) field = type->FindFieldByCamelcaseName(key);
    const bool message = field != nullptr && field->type() == FieldDescriptor::TYPE_MESSAGE;
    if (field == nullptr || field->is_repeated() || (field->has_presence() && !message)) continue;
    std::vector<const FieldDescriptor*> here = chain;
    here.push_back(field);
    const std::string name = path + "." + field->name();
    if (message) {
      ExplicitZeros(field->message_type(), field_value, name, out, here);
      continue;
    }
    const bool number = field->cpp_type() != FieldDescriptor::CPPTYPE_STRING &&
                        field->cpp_type() != FieldDescriptor::CPPTYPE_BOOL &&
                        field->cpp_type() != FieldDescriptor::CPPTYPE_ENUM;
    const bool zero = field_value.has_number_value() ? field_value.number_value() == 0
                      : field_value.has_string_value() ? field_value.string_value() == "0"
                                                       : false;
    if (number && zero) out->push_back({name, here});
  }
}

// A numeric field's value along a chain of singular fields, as a double.
double NumberAt(const google::protobuf::Message& root,
                const std::vector<const google::protobuf::FieldDescriptor*>& chain) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Message* m = &root;
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    m = &m->GetReflection()->GetMessage(*m, chain[i]);
  }
  const FieldDescriptor* f = chain.back();
  const google::protobuf::Reflection* r = m->GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: return r->GetInt32(*m, f);
    case FieldDescriptor::CPPTYPE_INT64: return static_cast<double>(r->GetInt64(*m, f));
    case FieldDescriptor::CPPTYPE_UINT32: return r->GetUInt32(*m, f);
    case FieldDescriptor::CPPTYPE_UINT64: return static_cast<double>(r->GetUInt64(*m, f));
    case FieldDescriptor::CPPTYPE_DOUBLE: return r->GetDouble(*m, f);
    case FieldDescriptor::CPPTYPE_FLOAT: return r->GetFloat(*m, f);
    default: return 0;
  }
}

// InvalidArgument naming the first field the JSON sets to 0 where 0 reads
// as unset and unset is a default that is not 0.
absl::Status RefuseZerosThatMeanDefault(std::string_view json, const v1::JobSpec& spec) {
  google::protobuf::Value value;
  const google::protobuf::StringPiece text(json.data(), json.size());
  if (!google::protobuf::util::JsonStringToMessage(text, &value).ok()) return absl::OkStatus();
  std::vector<std::pair<std::string, std::vector<const google::protobuf::FieldDescriptor*>>> zeros;
  ExplicitZeros(v1::JobSpec::descriptor(), value, "spec", &zeros);
  const v1::RunConfig base_defaults = DefaultsFor(spec.base());
  for (const auto& [path, chain] : zeros) {
    if (chain.front() == v1::JobSpec::descriptor()->FindFieldByName("base")) {
      const std::vector<const google::protobuf::FieldDescriptor*> rest(chain.begin() + 1, chain.end());
      const double fallback = NumberAt(base_defaults, rest);
      if (fallback == 0) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": 0 is not a value here: protobuf reads 0 as unset, and unset is the default ",
          fallback, "; leave the field out for the default"));
    }
    if (ZeroIsNotAValue(path)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": 0 is not a value here: protobuf reads 0 as unset, and unset is the "
                "default; leave the field out for the default, or give 1 or more"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::JobSpec> ParseAsWritten(std::string_view json) {
  if (auto s = CheckStrictJson(json, "spec", kMaxJsonDepth); !s.ok()) return s;
  v1::JobSpec spec;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const google::protobuf::StringPiece text(json.data(), json.size());
  auto status = google::protobuf::util::JsonStringToMessage(text, &spec, options);
  if (!status.ok()) {
    // Enum values as users write them ("mode": "train") are taken too. Only
    // then does the spec go through a generic JSON value (whose numbers are
    // doubles), so that every other spec parses exactly as written.
    google::protobuf::Value value;
    std::string full;
    if (google::protobuf::util::JsonStringToMessage(text, &value).ok()) {
      if (auto s = FullEnumNames(v1::JobSpec::descriptor(), "spec", &value); !s.ok()) return s;
      (void)google::protobuf::util::MessageToJsonString(value, &full);
      spec.Clear();
      if (google::protobuf::util::JsonStringToMessage(full, &spec, options).ok()) return spec;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("spec: ", std::string(status.message())));
  }
  return spec;
}

}  // namespace

absl::StatusOr<v1::JobSpec> ParseJobSpecJson(std::string_view json) {
  auto spec = ParseAsWritten(json);
  if (!spec.ok()) return spec;
  if (auto s = RefuseZerosThatMeanDefault(json, *spec); !s.ok()) return s;
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
  if (run.state() == v1::RUN_STATE_FAILED) job->set_runs_failed(job->runs_failed() + 1);
  if (run.state() != v1::RUN_STATE_SUCCEEDED) return;
  int32_t& fits = (*job->mutable_max_batch_size_fits())[ConfigKeyWithoutBatch(run.config())];
  fits = std::max(fits, run.config().batch_size());
}

v1::RunSettings WorkerSettingsOf(const v1::JobSpec& spec) {
  v1::RunSettings settings;
  *settings.mutable_measurement() = spec.measurement();
  *settings.mutable_profiling() = spec.profiling();
  *settings.mutable_telemetry() = spec.telemetry();
  settings.set_check_numerics(spec.check_numerics());
  settings.set_cpu_threads(spec.cpu_threads());
  return settings;
}

}  // namespace gpubench
