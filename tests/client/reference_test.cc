// docs/spec.md, docs/cli.md and docs/figures.md are `gpubench reference
// spec|cli|figures`: the committed files must be what the schema, the
// command table and the figure table give now.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "client/cli.h"
#include "client/cli_internal.h"

namespace gpubench::client {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Reference, DocsAreWhatTheSchemaAndCommandTableGive) {
  for (const char* which : {"spec", "cli", "figures"}) {
    std::ostringstream out, err;
    ASSERT_EQ(RunCli({"reference", which}, out, err), kExitOk) << err.str();
    const std::string path = std::string(GPUBENCH_SOURCE_DIR) + "/docs/" + which + ".md";
    EXPECT_TRUE(out.str() == Read(path))
        << path << " differs from `gpubench reference " << which
        << "`; regenerate it: build/bin/gpubench reference " << which << " > docs/" << which
        << ".md";
  }
}

// The spec reference has a row per schema field, flags and bounds included,
// and the CLI reference a section per command with its example.
TEST(Reference, SpecHasEveryFieldAndCliEveryCommand) {
  std::ostringstream spec, cli, err;
  ASSERT_EQ(RunCli({"reference", "spec"}, spec, err), kExitOk);
  ASSERT_EQ(RunCli({"reference", "cli"}, cli, err), kExitOk);
  for (const char* row : {"| `base.batch_size` | `--batch` | integer 1 to 65536 (0: default) | 32 "
                          "| `sweep.batch_size` |",
                          "| `measurement.max_time_ms` | `--max-time-ms` | integer 0 to 86400000 "
                          "ms (0: default) | 30000 |",
                          "| `base.params.prompt_length` | `--prompt-len` |"}) {
    EXPECT_NE(spec.str().find(row), std::string::npos) << row;
  }
  for (const Command& c : Commands()) {
    EXPECT_NE(cli.str().find(std::string("\n## gpubench ") + c.name + "\n"), std::string::npos)
        << c.name;
  }
  EXPECT_NE(cli.str().find("| `--prompt-len` |"), std::string::npos);
  std::ostringstream out, usage;
  EXPECT_EQ(RunCli({"reference", "html"}, out, usage), kExitUsage);
  EXPECT_NE(usage.str().find("usage: gpubench reference cli|spec|figures"), std::string::npos);
}

}  // namespace
}  // namespace gpubench::client
