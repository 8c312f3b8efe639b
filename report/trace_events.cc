#include "report/trace_events.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gpubench::report {
namespace {

// One event's object: the fields a breakdown reads, the rest skipped.
class EventParser {
 public:
  explicit EventParser(std::string_view text) : s_(text) {}

  struct Fields {
    std::optional<std::string> name, cat;
    std::optional<double> ts, dur;
    int64_t stream = -1, correlation = -1;
  };

  bool Parse(Fields* f) {
    if (!Expect('{')) return false;
    if (Peek('}')) return true;
    do {
      std::string key;
      if (!String(&key) || !Expect(':')) return false;
      bool ok = true;
      if (key == "name" || key == "cat") {
        std::string v;
        if (Peek('"')) {
          ok = String(&v);
          (key == "name" ? f->name : f->cat) = std::move(v);
        } else {
          ok = Skip();
        }
      } else if (key == "ts" || key == "dur") {
        std::string_view text;
        if (Number(&text)) {
          const double v = std::strtod(std::string(text).c_str(), nullptr);
          (key == "ts" ? f->ts : f->dur) = v;
        } else {
          ok = Skip();
        }
      } else if (key == "args" && Peek('{')) {
        ok = Args(f);
      } else {
        ok = Skip();
      }
      if (!ok) return false;
    } while (Comma());
    return Expect('}');
  }

 private:
  // args.stream and args.correlation, as integers (a number or a numeric
  // string, as pandas' to_numeric takes it); anything else is -1.
  bool Args(Fields* f) {
    Expect('{');
    if (Peek('}')) return Expect('}');
    do {
      std::string key;
      if (!String(&key) || !Expect(':')) return false;
      if (key == "stream" || key == "correlation") {
        int64_t v = -1;
        std::string_view text;
        std::string str;
        if (Number(&text)) {
          v = static_cast<int64_t>(std::strtod(std::string(text).c_str(), nullptr));
        } else if (Peek('"')) {
          if (!String(&str)) return false;
          char* end = nullptr;
          const double d = std::strtod(str.c_str(), &end);
          if (!str.empty() && end != nullptr && *end == '\0' && std::isfinite(d)) v = d;
        } else if (!Skip()) {
          return false;
        }
        (key == "stream" ? f->stream : f->correlation) = v;
      } else if (!Skip()) {
        return false;
      }
    } while (Comma());
    return Expect('}');
  }

  void Space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) {
      ++i_;
    }
  }
  bool Peek(char c) {
    Space();
    return i_ < s_.size() && s_[i_] == c;
  }
  bool Expect(char c) {
    if (!Peek(c)) return false;
    ++i_;
    return true;
  }
  bool Comma() { return Expect(','); }

  bool String(std::string* out) {
    if (!Expect('"')) return false;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\') {
        if (i_ >= s_.size()) return false;
        c = s_[i_++];
        switch (c) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u':  // kept as text: names are compared, not shown decoded
            out->append("\\u");
            continue;
          default: break;
        }
      }
      out->push_back(c);
    }
    return Expect('"');
  }

  bool Number(std::string_view* text) {
    Space();
    const size_t start = i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-' ||
                              s_[i_] == '+' || s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
    }
    *text = s_.substr(start, i_ - start);
    return i_ > start;
  }

  // Any value, nested at most 64 deep (a hostile trace's event of a
  // million '[' fails rather than overflow the stack).
  bool Skip(int depth = 0) {
    Space();
    if (i_ >= s_.size() || depth > 64) return false;
    const char c = s_[i_];
    if (c == '"') {
      std::string ignored;
      return String(&ignored);
    }
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++i_;
      if (Expect(close)) return true;
      do {
        if (c == '{') {
          std::string key;
          if (!String(&key) || !Expect(':')) return false;
        }
        if (!Skip(depth + 1)) return false;
      } while (Comma());
      return Expect(close);
    }
    std::string_view text;
    if (Number(&text)) return true;
    for (std::string_view word : {"true", "false", "null"}) {
      if (s_.substr(i_, word.size()) == word) {
        i_ += word.size();
        return true;
      }
    }
    return false;
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

int32_t TraceEvents::Intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  const int32_t id = static_cast<int32_t>(names.size());
  names.emplace_back(s);
  ids_.emplace(std::string(s), id);
  return id;
}

absl::Status TraceReader::EndEvent() {
  const int64_t index = out_.seen++;
  EventParser::Fields f;
  if (!EventParser(event_).Parse(&f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("traceEvents[", index, "]: not a JSON object of a trace event"));
  }
  // HTA's reading: an event without a duration or a category is none, nor
  // is the profiler's own span (category "Trace").
  if (!f.dur.has_value() || !f.cat.has_value() || *f.cat == "Trace" || !f.ts.has_value()) {
    return absl::OkStatus();
  }
  const std::string name = f.name.value_or("");
  if (f.stream < 0 && f.correlation < 0 && !absl::StrContains(name, "ProfilerStep")) {
    return absl::OkStatus();
  }
  TraceEvent e;
  e.ts = *f.ts;
  e.dur = *f.dur;
  e.name = out_.Intern(name);
  e.cat = out_.Intern(*f.cat);
  e.stream = static_cast<int32_t>(std::clamp<int64_t>(f.stream, -1, INT32_MAX));
  e.correlation = f.correlation;
  e.index = static_cast<int32_t>(std::min<int64_t>(index, INT32_MAX));
  out_.events.push_back(e);
  return absl::OkStatus();
}

absl::Status TraceReader::Feed(std::string_view chunk) {
  for (const char c : chunk) {
    if (capturing_) {
      if (event_.size() >= max_event_bytes_) {
        return absl::InvalidArgumentError(absl::StrCat("traceEvents[", out_.seen, "]: over ",
                                                       max_event_bytes_, " bytes"));
      }
      event_.push_back(c);
    }
    if (in_string_) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
      } else if (depth_ == 1 && key_.size() < 64) {
        key_.push_back(c);
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string_ = true;
        if (depth_ == 1) key_.clear();
        break;
      case '{':
      case '[':
        ++depth_;
        if (depth_ == 2 && c == '[' && key_ == "traceEvents") in_events_ = found_events_ = true;
        if (depth_ == 3 && in_events_ && c == '{') {
          capturing_ = true;
          event_.assign("{");
        }
        break;
      case '}':
      case ']':
        if (depth_ == 0) return absl::InvalidArgumentError("trace: unbalanced brackets");
        --depth_;
        if (depth_ == 2 && capturing_) {
          capturing_ = false;
          if (auto s = EndEvent(); !s.ok()) return s;
          event_.clear();
        }
        if (depth_ == 1) in_events_ = false;
        break;
      default:
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status TraceReader::Finish() {
  if (depth_ != 0 || in_string_) return absl::InvalidArgumentError("trace: the JSON ends early");
  if (!found_events_) return absl::InvalidArgumentError("trace: no traceEvents array");
  return absl::OkStatus();
}

absl::Status ReadTraceFile(const std::string& path, TraceEvents* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  TraceReader reader;
  std::string buffer(size_t{1} << 20, '\0');
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    if (auto s = reader.Feed(std::string_view(buffer.data(), in.gcount())); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
    }
  }
  if (auto s = reader.Finish(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  }
  *out = std::move(reader.events());
  return absl::OkStatus();
}

}  // namespace gpubench::report
