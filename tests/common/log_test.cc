#include "common/log.h"

#include <gtest/gtest.h>

namespace gpubench {
namespace {

// A message never spans lines, and text from a client (a job name, a path,
// a worker's stderr) cannot forge a line or move a terminal's cursor.
TEST(Log, AnEventIsOneLineWhateverItsText) {
  EXPECT_EQ(FormatLogLine(LogLevel::kInfo, "gpubenchd", "job j1 queued"),
            "I gpubenchd: job j1 queued");
  EXPECT_EQ(FormatLogLine(LogLevel::kError, "gpubenchd",
                          "worker said:\nE fake line\ttab \x1b[2J\x7f"),
            "E gpubenchd: worker said:\\nE fake line\\ttab \\x1b[2J\\x7f");
  EXPECT_EQ(FormatLogLine(LogLevel::kWarning, "x", "").substr(0, 2), "W ");
  EXPECT_EQ(FormatLogLine(LogLevel::kDebug, "x", "").substr(0, 2), "D ");
}

}  // namespace
}  // namespace gpubench
