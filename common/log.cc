#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gpubench {
namespace {

std::mutex& LogMutex() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
std::string& Program() {
  static std::string* program = new std::string("gpubenchd");
  return *program;
}
std::atomic<bool> g_verbose{false};

char Letter(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return 'D';
    case LogLevel::kInfo: return 'I';
    case LogLevel::kWarning: return 'W';
    case LogLevel::kError: return 'E';
  }
  return '?';
}

}  // namespace

void SetLogProgram(std::string_view program) {
  std::lock_guard<std::mutex> lock(LogMutex());
  Program() = std::string(program);
}

void SetLogVerbose(bool verbose) { g_verbose = verbose; }
bool LogVerbose() { return g_verbose; }

std::string FormatLogLine(LogLevel level, std::string_view program, std::string_view message) {
  std::string line(1, Letter(level));
  line += " ";
  line += program;
  line += ": ";
  for (size_t i = 0; i < message.size(); ++i) {
    const unsigned char c = message[i];
    if (c == '\n') {
      line += "\\n";
    } else if (c == '\t') {
      line += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      line += absl::StrFormat("\\x%02x", c);
    } else if (c == 0xc2 && i + 1 < message.size() &&
               (static_cast<unsigned char>(message[i + 1]) & 0xe0) == 0x80) {
      // U+0080..U+009F in UTF-8: C1 controls, which terminals obey too
      // (U+009B is CSI).
      line += absl::StrFormat("\\u%04x", static_cast<unsigned char>(message[++i]));
    } else {
      line += static_cast<char>(c);
    }
  }
  return line;
}

void LogLine(LogLevel level, std::string_view message) {
  if (level == LogLevel::kDebug && !LogVerbose()) return;
  const std::string stamp =
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  std::lock_guard<std::mutex> lock(LogMutex());
  const std::string line = stamp + " " + FormatLogLine(level, Program(), message) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace gpubench
