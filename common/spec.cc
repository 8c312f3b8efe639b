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
// takes ("MODE_TRAIN"); fields are found by their proto or JSON name.
void FullEnumNames(const google::protobuf::Descriptor* type, google::protobuf::Value* value) {
  if (!value->has_struct_value()) return;
  for (auto& [key, field_value] : *value->mutable_struct_value()->mutable_fields()) {
    const google::protobuf::FieldDescriptor* field = type->FindFieldByName(key);
    if (field == nullptr) field = type->FindFieldByCamelcaseName(key);
    if (field == nullptr || field->is_map()) continue;
    std::vector<google::protobuf::Value*> items;
    if (field_value.has_list_value()) {
      for (auto& item : *field_value.mutable_list_value()->mutable_values()) items.push_back(&item);
    } else {
      items.push_back(&field_value);
    }
    for (google::protobuf::Value* item : items) {
      if (field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
        FullEnumNames(field->message_type(), item);
      } else if (field->type() == google::protobuf::FieldDescriptor::TYPE_ENUM &&
                 item->has_string_value()) {
        auto number = ParseEnumShortName(field->enum_type(), item->string_value());
        if (!number.ok()) continue;
        item->set_string_value(field->enum_type()->FindValueByNumber(*number)->name());
      }
    }
  }
}

}  // namespace

absl::StatusOr<v1::JobSpec> ParseJobSpecJson(std::string_view json) {
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
      FullEnumNames(v1::JobSpec::descriptor(), &value);
      (void)google::protobuf::util::MessageToJsonString(value, &full);
      spec.Clear();
      if (google::protobuf::util::JsonStringToMessage(full, &spec, options).ok()) return spec;
    }
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

}  // namespace gpubench
