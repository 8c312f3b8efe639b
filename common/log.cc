#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/printable.h"

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
  line += Printable(message);
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
