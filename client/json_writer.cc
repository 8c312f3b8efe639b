#include "client/json_writer.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common/printable.h"
#include "common/spec.h"

namespace gpubench::client {
namespace {

// s as a JSON string: escaped, and each byte that is not UTF-8 (a model's
// message may hold any) written as U+FFFD, so that strict parsers take it.
void Escaped(absl::string_view s, std::ostream& out) {
  static const char kHex[] = "0123456789abcdef";
  out << '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = s[i];
    if (c >= 0x80) {
      const size_t n = Utf8Length(std::string_view(s.data(), s.size()), i);  // common/printable.h
      if (n == 0) {
        out << "\\ufffd";
      } else {
        out << s.substr(i, n);
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"': out << "\\\""; break;
      case '\\': out << "\\\\"; break;
      case '\n': out << "\\n"; break;
      case '\t': out << "\\t"; break;
      case '\r': out << "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out << "\\u00" << kHex[c >> 4] << kHex[c & 15];
        } else {
          out << static_cast<char>(c);
        }
    }
  }
  out << '"';
}

}  // namespace

std::string ShortestNumber(double v) {
  std::string s = absl::StrFormat("%.15g", v);
  if (std::strtod(s.c_str(), nullptr) != v) s = absl::StrFormat("%.17g", v);
  return s;
}

JsonWriter::~JsonWriter() {
  if (wrote_ && open_.empty()) out_ << "\n";
}

void JsonWriter::Indent() {
  if (layout_ == Layout::kLine) return;
  out_ << "\n" << std::string(2 * open_.size(), ' ');
}

void JsonWriter::Next() {
  if (after_key_) {  // the value of the key just written
    after_key_ = false;
    return;
  }
  wrote_ = true;
  if (open_.empty()) return;
  if (open_.back()++ > 0) out_ << ",";
  Indent();
}

JsonWriter& JsonWriter::Object() {
  Next();
  out_ << "{";
  open_.push_back(0);
  is_object_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::Array() {
  Next();
  out_ << "[";
  open_.push_back(0);
  is_object_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::End() {
  if (open_.empty()) return *this;
  const bool empty = open_.back() == 0;
  const bool object = is_object_.back();
  open_.pop_back();
  is_object_.pop_back();
  if (!empty) Indent();
  out_ << (object ? "}" : "]");
  return *this;
}

JsonWriter& JsonWriter::Key(absl::string_view key) {
  Next();
  Escaped(key, out_);
  out_ << ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(absl::string_view value) {
  Next();
  Escaped(value, out_);
  return *this;
}

JsonWriter& JsonWriter::Number(double value) {
  Next();
  if (std::isfinite(value)) {
    out_ << ShortestNumber(value);
  } else {
    out_ << "null";
  }
  return *this;
}

JsonWriter& JsonWriter::Real(double value) {
  Number(value);
  if (std::isfinite(value)) {
    const std::string s = ShortestNumber(value);
    if (s.find_first_of(".e") == std::string::npos) out_ << ".0";
  }
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  Next();
  out_ << value;
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  Next();
  out_ << (value ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::Null() {
  Next();
  out_ << "null";
  return *this;
}

JsonWriter& JsonWriter::Message(const google::protobuf::Message& message) {
  Next();
  // Protobuf's JSON, indented to sit where it is written.
  std::string json = MessageToJson(message);
  while (!json.empty() && json.back() == '\n') json.pop_back();
  out_ << absl::StrReplaceAll(json, {{"\n", "\n" + std::string(2 * open_.size(), ' ')}});
  return *this;
}

}  // namespace gpubench::client
