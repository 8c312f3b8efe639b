#include "common/filter.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/spec.h"
#include "gpubench/v1/spec.pb.h"

namespace gpubench {

absl::StatusOr<ConfigPredicate> ParseConfigPredicate(absl::string_view entry,
                                                     absl::string_view name) {
  const size_t eq = entry.find('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": expected field=value, got \"", entry, "\""));
  }
  ConfigPredicate p;
  p.path = std::string(entry.substr(0, eq));
  const std::string value(entry.substr(eq + 1));
  using FD = google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor* message = v1::RunConfig::descriptor();
  const FD* field = nullptr;
  for (absl::string_view part : absl::StrSplit(p.path, '.')) {
    if (message == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": \"", p.path, "\" goes inside a field that is not a message"));
    }
    field = message->FindFieldByName(std::string(part));
    if (field == nullptr) {
      // A field of the run config's sub-messages named without its
      // prefix: image_size is params.image_size.
      std::string hint;
      for (int i = 0; i < message->field_count() && hint.empty(); ++i) {
        const FD* inner = message->field(i);
        if (inner->type() == FD::TYPE_MESSAGE && !inner->is_repeated() &&
            inner->message_type()->FindFieldByName(std::string(part)) != nullptr) {
          hint = absl::StrCat("; did you mean ", inner->name(), ".", part, "?");
        }
      }
      return absl::InvalidArgumentError(absl::StrCat(name, ": ", message->name(),
                                                     " has no field \"", part, "\"", hint));
    }
    message = field->type() == FD::TYPE_MESSAGE ? field->message_type() : nullptr;
  }
  if (field->is_repeated() || message != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": \"", p.path, "\" is not a single value"));
  }
  const auto wrong = [&](const char* takes) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", p.path, " takes ", takes, ", got \"", value, "\""));
  };
  switch (field->cpp_type()) {
    case FD::CPPTYPE_INT32:
    case FD::CPPTYPE_UINT32:
      p.kind = ConfigPredicate::Kind::kInt;
      if (!absl::SimpleAtoi(value, &p.int_value)) return wrong("an integer");
      break;
    case FD::CPPTYPE_INT64:
    case FD::CPPTYPE_UINT64:
      p.kind = ConfigPredicate::Kind::kInt64;
      if (!absl::SimpleAtoi(value, &p.int_value)) return wrong("an integer");
      p.text = absl::StrCat(p.int_value);
      break;
    case FD::CPPTYPE_DOUBLE:
    case FD::CPPTYPE_FLOAT:
      p.kind = ConfigPredicate::Kind::kReal;
      if (!absl::SimpleAtod(value, &p.real_value)) return wrong("a number");
      break;
    case FD::CPPTYPE_BOOL: {
      bool b;
      p.kind = ConfigPredicate::Kind::kBool;
      if (!absl::SimpleAtob(value, &b)) return wrong("true or false");
      p.int_value = b ? 1 : 0;
      break;
    }
    case FD::CPPTYPE_ENUM: {
      auto number = ParseEnumShortName(field->enum_type(), value);
      if (!number.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": ", p.path, ": ", number.status().message()));
      }
      p.kind = ConfigPredicate::Kind::kEnum;
      p.int_value = *number;
      p.text = field->enum_type()->FindValueByNumber(*number)->name();
      break;
    }
    default:
      p.kind = ConfigPredicate::Kind::kText;
      p.text = value;
  }
  return p;
}

}  // namespace gpubench
