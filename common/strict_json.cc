#include "common/strict_json.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gpubench {
namespace {

absl::Status Invalid(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// A JSON key as protobuf's parser takes it: "batchSize" and "batch_size"
// name one field.
std::string FieldKey(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (absl::ascii_isupper(static_cast<unsigned char>(c))) {
      out += '_';
      out += absl::ascii_tolower(static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out;
}

// A strict RFC 8259 reader run over a spec's text before protobuf's JSON
// parser: that parser also takes JavaScript's forms (single-quoted strings,
// bare keys), which this reader's checks would not see. It refuses a key
// given twice in one object (protobuf's parser keeps the last value and
// merges two objects), nesting deeper than kMaxJsonDepth (it recurses as
// deep as the text goes), and anything that is not RFC 8259 JSON, naming
// the field and the line and column. Not thread-safe; one per text.
class StrictJson {
 public:
  StrictJson(std::string_view json, int max_depth) : json_(json), max_depth_(max_depth) {}

  absl::Status Check(const std::string& root) {
    SkipSpace();
    if (auto s = Value(root, 0); !s.ok()) return s;
    SkipSpace();
    const std::string after = "text after the end of the " + root;
    if (i_ < json_.size()) return Fault(root, after.c_str());
    return absl::OkStatus();
  }

 private:
  absl::Status Value(const std::string& path, int depth) {
    if (i_ >= json_.size()) return Fault(path, "a value is missing");
    switch (json_[i_]) {
      case '{':
      case '[':
        if (depth >= max_depth_) {
          return Invalid(path, absl::StrCat("nested deeper than ", max_depth_));
        }
        return json_[i_] == '{' ? Object(path, depth + 1) : Array(path, depth + 1);
      case '"': {
        std::string ignored;
        return String(path, &ignored);
      }
      case '\'':
        return Fault(path, "strings take double quotes in JSON (RFC 8259)");
      case 't': return Literal(path, "true");
      case 'f': return Literal(path, "false");
      case 'n': return Literal(path, "null");
      default:
        if (json_[i_] == '-' || absl::ascii_isdigit(static_cast<unsigned char>(json_[i_]))) {
          return Number(path);
        }
        return Fault(path, "not a JSON value (RFC 8259)");
    }
  }

  absl::Status Object(const std::string& path, int depth) {
    ++i_;  // '{'
    std::set<std::string> keys;
    SkipSpace();
    if (At('}')) return absl::OkStatus();
    while (true) {
      if (i_ < json_.size() && json_[i_] != '"') {
        return Fault(path, "keys are strings in double quotes in JSON (RFC 8259)");
      }
      std::string key;
      if (auto s = String(path, &key); !s.ok()) return s;
      const std::string member = path + "." + key;
      if (!keys.insert(FieldKey(key)).second) {
        return Invalid(member, "given twice in one object (the last would silently win)");
      }
      SkipSpace();
      if (!At(':')) return Fault(member, "':' must follow a key");
      SkipSpace();
      if (auto s = Value(member, depth); !s.ok()) return s;
      SkipSpace();
      if (At('}')) return absl::OkStatus();
      if (!At(',')) return Fault(path, "',' or '}' must follow a member");
      SkipSpace();
    }
  }

  absl::Status Array(const std::string& path, int depth) {
    ++i_;  // '['
    SkipSpace();
    if (At(']')) return absl::OkStatus();
    for (int index = 0;; ++index) {
      if (auto s = Value(absl::StrCat(path, "[", index, "]"), depth); !s.ok()) return s;
      SkipSpace();
      if (At(']')) return absl::OkStatus();
      if (!At(',')) return Fault(path, "',' or ']' must follow an element");
      SkipSpace();
    }
  }

  // Reads the string at json_[i_] == '"' into *out, escapes decoded (a
  // \u escape as the UTF-8 of its code unit: keys only need to differ).
  absl::Status String(const std::string& path, std::string* out) {
    ++i_;  // '"'
    while (i_ < json_.size()) {
      const unsigned char c = json_[i_];
      if (c == '"') {
        ++i_;
        return absl::OkStatus();
      }
      if (c < 0x20) return Fault(path, "a control character must be escaped in a string");
      if (c >= 0x80) {
        const size_t n = Utf8Length(json_.substr(i_));
        if (n == 0) return Fault(path, "not UTF-8");
        out->append(json_.substr(i_, n));
        i_ += n;
        continue;
      }
      ++i_;
      if (c != '\\') {
        *out += static_cast<char>(c);
        continue;
      }
      if (i_ >= json_.size()) break;
      const char e = json_[i_];
      static constexpr std::string_view kFrom = "\"\\/bfnrt", kTo = "\"\\/\b\f\n\r\t";
      if (const size_t k = kFrom.find(e); k != std::string_view::npos) {
        *out += kTo[k];
        ++i_;
      } else if (e == 'u') {
        unsigned code = 0;
        for (int k = 1; k <= 4; ++k) {
          const char h = i_ + k < json_.size() ? json_[i_ + k] : ' ';
          if (!absl::ascii_isxdigit(static_cast<unsigned char>(h))) {
            return Fault(path, "\\u takes four hex digits");
          }
          code = code * 16 + (absl::ascii_isdigit(static_cast<unsigned char>(h))
                                  ? h - '0'
                                  : absl::ascii_tolower(static_cast<unsigned char>(h)) - 'a' + 10);
        }
        i_ += 5;
        AppendUtf8(code, out);
      } else {
        return Fault(path, "not a JSON escape (RFC 8259)");
      }
    }
    return Fault(path, "the text ends inside a string");
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  absl::Status Number(const std::string& path) {
    auto digits = [this] {
      const size_t from = i_;
      while (i_ < json_.size() && absl::ascii_isdigit(static_cast<unsigned char>(json_[i_]))) ++i_;
      return i_ - from;
    };
    At('-');
    const size_t int_start = i_;
    const size_t int_digits = digits();
    if (int_digits == 0) return Fault(path, "a number needs a digit here");
    if (int_digits > 1 && json_[int_start] == '0') {
      i_ = int_start;
      return Fault(path, "a number does not start with 0 in JSON (RFC 8259)");
    }
    if (At('.') && digits() == 0) return Fault(path, "a digit must follow '.'");
    if (At('e') || At('E')) {
      if (!At('+')) At('-');
      if (digits() == 0) return Fault(path, "an exponent needs a digit");
    }
    return absl::OkStatus();
  }

  absl::Status Literal(const std::string& path, std::string_view word) {
    if (json_.substr(i_, word.size()) != word) return Fault(path, "not a JSON value (RFC 8259)");
    i_ += word.size();
    return absl::OkStatus();
  }

  // The length of the valid UTF-8 sequence at the start of s (no overlong
  // forms, surrogates or code points past U+10FFFF), else 0.
  static size_t Utf8Length(std::string_view s) {
    const unsigned char c = s[0];
    const size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    if (n == 0 || c > 0xf4 || s.size() < n) return 0;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[k]) & 0xc0) != 0x80) return 0;
    }
    const unsigned char c1 = s[1];
    if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0) || (c == 0xf0 && c1 < 0x90) ||
        (c == 0xf4 && c1 >= 0x90)) {
      return 0;
    }
    return n;
  }

  static void AppendUtf8(unsigned code, std::string* out) {
    if (code < 0x80) {
      *out += static_cast<char>(code);
    } else if (code < 0x800) {
      *out += static_cast<char>(0xc0 | code >> 6);
      *out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      *out += static_cast<char>(0xe0 | code >> 12);
      *out += static_cast<char>(0x80 | (code >> 6 & 0x3f));
      *out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  // Consumes c if it is next.
  bool At(char c) {
    if (i_ >= json_.size() || json_[i_] != c) return false;
    ++i_;
    return true;
  }

  void SkipSpace() {
    while (i_ < json_.size() &&
           (json_[i_] == ' ' || json_[i_] == '\t' || json_[i_] == '\n' || json_[i_] == '\r')) {
      ++i_;
    }
  }

  // "what (found 'x' at line L, column C)", as InvalidArgument naming path.
  absl::Status Fault(const std::string& path, const char* what) const {
    size_t line = 1, column = 1;
    for (size_t k = 0; k < i_ && k < json_.size(); ++k) {
      if (json_[k] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string found = "the end of the text";
    if (i_ < json_.size()) {
      const unsigned char c = json_[i_];
      found = c >= 0x21 && c < 0x7f ? absl::StrCat("'", std::string(1, c), "'")
                                    : absl::StrCat("byte 0x", absl::Hex(c, absl::kZeroPad2));
    }
    return Invalid(path, absl::StrCat(what, " (found ", found, " at line ", line, ", column ",
                                      column, ")"));
  }

  const std::string_view json_;
  const int max_depth_;
  size_t i_ = 0;
};

}  // namespace

absl::Status CheckStrictJson(std::string_view json, const std::string& root, int max_depth) {
  return StrictJson(json, max_depth).Check(root);
}

}  // namespace gpubench
