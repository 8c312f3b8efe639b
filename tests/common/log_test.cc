#include "common/log.h"
#include "common/printable.h"

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
  // C1 controls (U+0080..U+009F, two bytes in UTF-8): U+009B is a CSI that
  // terminals obey like ESC [. Other characters of that lead byte stay.
  EXPECT_EQ(FormatLogLine(LogLevel::kInfo, "gpubenchd",
                          "name \xc2\x9b" "2J \xc2\x85 end \xc2\xa9 caf\xc3\xa9"),
            "I gpubenchd: name \\u009b2J \\u0085 end \xc2\xa9 caf\xc3\xa9");
  // A lone lead byte at the end is left as it is.
  EXPECT_EQ(FormatLogLine(LogLevel::kInfo, "x", "a\xc2"), "I x: a\xc2");
  EXPECT_EQ(FormatLogLine(LogLevel::kWarning, "x", "").substr(0, 2), "W ");
  EXPECT_EQ(FormatLogLine(LogLevel::kDebug, "x", "").substr(0, 2), "D ");
}

// A model's error is the model's to choose: Bounded keeps its head, whole
// characters only, and says how much it cut.
TEST(Bounded, CutsAtACharacterAndSaysHowMuch) {
  EXPECT_EQ(Bounded("short", 16), "short");
  EXPECT_EQ(Bounded("abcdefgh", 4), "abcd ... (4 more bytes)");
  // "é" is two bytes: a cut inside it backs off to before it.
  EXPECT_EQ(Bounded("ab\xc3\xa9z", 3), "ab ... (3 more bytes)");
}

}  // namespace
}  // namespace gpubench
