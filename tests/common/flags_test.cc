// FlagParser: Abseil flags read with gpubench's spellings.
#include "common/flags.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"

ABSL_FLAG(std::string, listen_at, "127.0.0.1:1", "where to listen");
ABSL_FLAG(int64_t, max_things, 10, "how many things");
ABSL_FLAG(bool, be_loud, false, "shout");
ABSL_FLAG(std::vector<std::string>, root_dir, {}, "a root (repeatable)");

namespace gpubench {
namespace {

absl::StatusOr<std::vector<std::string>> Parse(FlagParser& parser,
                                               std::vector<const char*> args) {
  args.insert(args.begin(), "prog");
  return parser.Parse(static_cast<int>(args.size()), args.data());
}

TEST(Flags, EverySpellingSetsTheFlag) {
  absl::FlagSaver restore;
  FlagParser parser;
  auto rest = Parse(parser, {"--listen-at", "0.0.0.0:2", "pos", "--max_things=7", "--be-loud",
                             "--root-dir", "/a", "--root-dir=/b,/c"});
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(*rest, std::vector<std::string>{"pos"});
  EXPECT_EQ(absl::GetFlag(FLAGS_listen_at), "0.0.0.0:2");
  EXPECT_EQ(absl::GetFlag(FLAGS_max_things), 7);
  EXPECT_TRUE(absl::GetFlag(FLAGS_be_loud));
  EXPECT_EQ(absl::GetFlag(FLAGS_root_dir), (std::vector<std::string>{"/a", "/b", "/c"}));
  EXPECT_FALSE(parser.help_requested());
}

TEST(Flags, ErrorsNameTheFlag) {
  absl::FlagSaver restore;
  for (auto [args, says] : std::vector<std::pair<std::vector<const char*>, std::string>>{
           {{"--no-such-flag"}, "unknown flag --no-such-flag"},
           {{"--max-things", "many"}, "--max-things: \"many\""},
           {{"--listen-at"}, "--listen-at needs a value"},
           {{"--be-loud=maybe"}, "--be-loud"}}) {
    FlagParser parser;
    auto rest = Parse(parser, args);
    ASSERT_FALSE(rest.ok()) << says;
    EXPECT_TRUE(absl::IsInvalidArgument(rest.status()));
    EXPECT_NE(rest.status().message().find(says), std::string::npos) << rest.status();
  }
  EXPECT_EQ(absl::GetFlag(FLAGS_max_things), 10);  // a failed parse leaves the value
}

TEST(Flags, AConfigFileFillsWhatTheCommandLineLeftAndAddsToLists) {
  absl::FlagSaver restore;
  const std::string path = ::testing::TempDir() + "/flags_test.conf";
  std::ofstream(path) << "# settings\n"
                      << "listen-at = 10.0.0.1:3\n"
                      << "max_things = 99   # ignored: the command line set it\n"
                      << "be-loud = yes\n"
                      << "root-dir = /from-file\n";
  FlagParser parser;
  ASSERT_TRUE(Parse(parser, {"--max-things", "5", "--root-dir", "/cli"}).ok());
  const absl::Status applied = parser.ApplyConfigFile(path);
  ASSERT_TRUE(applied.ok()) << applied.ToString();
  EXPECT_EQ(absl::GetFlag(FLAGS_listen_at), "10.0.0.1:3");
  EXPECT_EQ(absl::GetFlag(FLAGS_max_things), 5);
  EXPECT_TRUE(absl::GetFlag(FLAGS_be_loud));
  EXPECT_EQ(absl::GetFlag(FLAGS_root_dir), (std::vector<std::string>{"/cli", "/from-file"}));

  std::ofstream(path) << "max-things = 1\nthis line has no equals sign\n";
  FlagParser again;
  auto s = again.ApplyConfigFile(path);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("flags_test.conf:2: expected name = value"), std::string::npos) << s;
  std::ofstream(path) << "nonsense = 1\n";
  s = FlagParser().ApplyConfigFile(path);
  EXPECT_NE(s.message().find("flags_test.conf:1: unknown flag --nonsense"), std::string::npos) << s;
  std::remove(path.c_str());
  EXPECT_FALSE(FlagParser().ApplyConfigFile(path).ok());
}

TEST(Flags, HelpListsThisFilesFlagsWithTheirDefaults) {
  FlagParser parser;
  ASSERT_TRUE(Parse(parser, {"--help"}).ok());
  EXPECT_TRUE(parser.help_requested());
  const std::string help = FlagsHelp("common/flags_test.cc");
  EXPECT_NE(help.find("--listen-at VALUE\n      where to listen (default 127.0.0.1:1)"),
            std::string::npos) << help;
  EXPECT_NE(help.find("--be-loud\n      shout\n"), std::string::npos) << help;
  EXPECT_LT(help.find("--be-loud"), help.find("--max-things"));  // sorted
  EXPECT_EQ(help.find("--flagfile"), std::string::npos);  // Abseil's own are not listed
}

}  // namespace
}  // namespace gpubench
