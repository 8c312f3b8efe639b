// show's repro line end to end: a real daemon stores a job; the line it
// prints, run as printed, and its spec file, submitted, plan the same runs.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/cli.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gpubench/v1/spec.pb.h"
#include "tests/client/cli_test_util.h"
#include "tests/support/daemon_process.h"

namespace gpubench::client {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

// show's "reproduce:" line, run as it is printed, submits the same plan:
// the two jobs' runs have the same configs; so does the spec file that
// show --output spec writes, submitted as a file.
TEST(CliDaemon, TheReproduceLineSubmitsTheSamePlan) {
  Daemon d(FreshDir("cli_repro"));
  ASSERT_TRUE(d.serving()) << d.log();
  Result submitted = Cli(Tiny({"submit", "--host", d.address(), "--batch", "4,8", "--wait"}));
  ASSERT_EQ(submitted.code, kExitOk) << submitted.err;
  const std::string first = SplitLines(submitted.err).at(0);  // "job ID queued on HOST ..."
  const std::string id = first.substr(4, first.find(" queued") - 4);
  Result shown = Cli({"show", id, "--host", d.address()});
  ASSERT_EQ(shown.code, kExitOk) << shown.err;
  const size_t at = shown.out.find("\nreproduce: gpubench submit ");
  ASSERT_NE(at, std::string::npos) << shown.out;
  const std::string line =
      shown.out.substr(at + 12, shown.out.find('\n', at + 1) - at - 12);
  EXPECT_NE(line.find("--batch 4,8"), std::string::npos) << line;
  std::vector<std::string> again = absl::StrSplit(line, ' ');
  ASSERT_EQ(again.front(), "gpubench");
  again.erase(again.begin());
  again.insert(again.end(), {"--host", d.address(), "--wait"});
  Result resubmitted = Cli(again);
  ASSERT_EQ(resubmitted.code, kExitOk) << resubmitted.err;

  const std::string file = FreshDir("cli_repro_spec") + "/job.json";
  Result spec = Cli({"show", id, "--host", d.address(), "--output", "spec"});
  ASSERT_EQ(spec.code, kExitOk) << spec.err;
  std::ofstream(file) << spec.out;
  Result from_file = Cli({"submit", file, "--host", d.address(), "--wait"});
  ASSERT_EQ(from_file.code, kExitOk) << from_file.err;

  // Each job's run configs, in order.
  auto configs = [&](const Result& r) {
    const std::string line = SplitLines(r.err).at(0);
    Result json = Cli({"show", line.substr(4, line.find(" queued") - 4), "--host", d.address(),
                       "--output", "json"});
    google::protobuf::Struct doc;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &doc).ok()) << json.out;
    std::vector<std::string> out;
    for (const auto& run : doc.fields().at("runs").list_value().values()) {
      // Through the message: a Struct's keys come in no set order.
      std::string json_config, config;
      v1::RunConfig parsed;
      EXPECT_TRUE(google::protobuf::util::MessageToJsonString(
                      run.struct_value().fields().at("config"), &json_config)
                      .ok());
      EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json_config, &parsed).ok());
      EXPECT_TRUE(google::protobuf::util::MessageToJsonString(parsed, &config).ok());
      out.push_back(config);
    }
    return out;
  };
  const std::vector<std::string> planned = configs(submitted);
  ASSERT_EQ(planned.size(), 2u);
  EXPECT_EQ(configs(resubmitted), planned);
  EXPECT_EQ(configs(from_file), planned);
  EXPECT_EQ(Cli({"jobs", "--output", "spec", "--host", d.address()}).code, kExitUsage);
}

}  // namespace
}  // namespace gpubench::client
