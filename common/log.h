// The daemon's log: one line per event on stderr, where journald and
// `kubectl logs` pick it up:
//   2026-11-25T07:12:03.123Z I gpubenchd: job j1a2 queued by alice (3 runs)
// The letter is the level (D debug, I info, W warning, E error). Debug lines
// are written only with SetLogVerbose(true) (gpubenchd -v). A message's
// control and bidirectional characters are escaped (Printable), so an event
// never spans two lines nor drives a terminal. Thread-safe: lines from
// several threads never interleave.
#ifndef GPUBENCH_COMMON_LOG_H_
#define GPUBENCH_COMMON_LOG_H_

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace gpubench {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

// The program name every line carries ("gpubenchd" until set).
void SetLogProgram(std::string_view program);
// Whether debug lines are written (default false).
void SetLogVerbose(bool verbose);
bool LogVerbose();

// Writes one line at level (a debug line only when verbose).
void LogLine(LogLevel level, std::string_view message);

// LOG-style helpers: Log(LogLevel::kInfo, "job ", id, " queued").
template <typename... Parts>
void Log(LogLevel level, const Parts&... parts) {
  if (level == LogLevel::kDebug && !LogVerbose()) return;
  LogLine(level, absl::StrCat(parts...));
}

// The line LogLine writes, without the time stamp (for tests).
std::string FormatLogLine(LogLevel level, std::string_view program, std::string_view message);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_LOG_H_
