#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/spec_checks.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"

namespace gpubench {
namespace {

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
}  // namespace

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

}  // namespace gpubench
