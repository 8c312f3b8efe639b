#include "common/printable.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpubench {
namespace {

// The UTF-8 length of a bidirectional formatting character at s[i] (ALM,
// LRM, RLM, the embeddings and overrides U+202A-U+202E, the isolates
// U+2066-U+2069), else 0. They reorder the text around them on screen, so a
// name could show something other than what it is.
size_t BidiControlAt(std::string_view s, size_t i) {
  auto at = [&](size_t k) -> unsigned char { return i + k < s.size() ? s[i + k] : 0; };
  if (at(0) == 0xd8 && at(1) == 0x9c) return 2;  // U+061C
  if (at(0) != 0xe2) return 0;
  if (at(1) == 0x80 && (at(2) == 0x8e || at(2) == 0x8f || (at(2) >= 0xaa && at(2) <= 0xae))) {
    return 3;
  }
  if (at(1) == 0x81 && at(2) >= 0xa6 && at(2) <= 0xa9) return 3;
  return 0;
}

// The code point of the valid UTF-8 sequence of n bytes at s[i].
unsigned CodePoint(std::string_view s, size_t i, size_t n) {
  unsigned code = static_cast<unsigned char>(s[i]) & (n == 2 ? 0x1f : 0x0f);
  for (size_t k = 1; k < n; ++k) code = code << 6 | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  return code;
}

}  // namespace

size_t Utf8Length(std::string_view s, size_t i) {
  const unsigned char c = s[i];
  if (c < 0x80) return 1;
  size_t n;
  uint32_t code;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2, code = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, code = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, code = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const unsigned char d = s[i + k];
    if ((d & 0xc0) != 0x80) return 0;
    code = (code << 6) | (d & 0x3f);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
  const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < least[n] || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) return 0;
  return n;
}

std::string ValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8Length(s, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string Printable(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = s[i];
    if (c == '\n' && keep_newlines) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += absl::StrFormat("\\x%02x", c);
    } else if (const size_t n = BidiControlAt(s, i); n > 0) {
      out += absl::StrFormat("\\u%04x", CodePoint(s, i, n));
      i += n - 1;
    } else if (c == 0xc2 && i + 1 < s.size() &&
               (static_cast<unsigned char>(s[i + 1]) & 0xe0) == 0x80) {
      // U+0080..U+009F in UTF-8: C1 controls, which terminals obey too
      // (U+009B is CSI).
      out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(s[++i]));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string Bounded(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  size_t cut = max_bytes;
  // Back off continuation bytes (10xxxxxx): never half a character.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
  return absl::StrCat(std::string(s.substr(0, cut)), " ... (", s.size() - cut, " more bytes)");
}

}  // namespace gpubench
