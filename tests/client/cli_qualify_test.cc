// gpubench qualify against real daemons on loopback: a real CPU host passes
// level 1 against the envelope fleet wrote from its own sessions; a seeded
// H100 capped at 420 W fails, naming its power limit, in the one line
// node-problem-detector takes and with exit 1; what has no envelope is
// unknown (exit 2). SERIAL: the CPU's probe runs must have the host alone
// to count (a contended run is unknown, not a pass).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "client/cli.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "report/qualify.h"
#include "tests/client/cli_test_util.h"
#include "tests/client/probe_runs.h"
#include "tests/support/daemon_process.h"
#include "tests/support/read_file.h"

namespace gpubench::client {
namespace {

using testing_support::FreshDir;

using testing_support::ReadFile;

// An envelope this host cannot meet in any probe: a fail is measured twice,
// and stands, confirmed, with exit 1 (every probe out of reach: a run
// contended by a moment's other work is unknown, not a fail).
void ExpectAFailConfirmed(const Daemon& d, const v1::Envelope& envelope, const std::string& dir) {
  v1::Envelope strict = envelope;
  for (v1::ProbeEnvelope& e : *strict.mutable_probes()) {
    const double out_of_reach = e.higher_is_better() ? 1e6 : 1e-6;
    e.set_median(out_of_reach);
    e.set_bound(e.higher_is_better() ? out_of_reach * 0.9 : out_of_reach * 1.1);
    e.set_spread(out_of_reach * 0.01);
  }
  const std::string strict_path = dir + "/strict.json";
  std::ofstream(strict_path) << report::EnvelopeJson(strict);
  Result confirmed = Cli({"qualify", "--host", d.address(), "--envelope", strict_path});
  EXPECT_EQ(confirmed.code, 1) << confirmed.out << confirmed.err;
  EXPECT_TRUE(absl::StartsWith(confirmed.out, "NOTOK: " + d.address() + " cpu ")) << confirmed.out;
  EXPECT_NE(confirmed.out.find("; its re-run fails too ("), std::string::npos) << confirmed.out;
  EXPECT_NE(confirmed.err.find("running the suite again to confirm"), std::string::npos)
      << confirmed.err;
}

// Level 3, last in a session (its load could slow the sessions after it on
// a VM): the bf16 product held (3 s here, 60 s by default) and loaded on
// every device at once (the CPU alone here; 2 s, 15 min by default) are
// judged against matmul_bf16's envelope (the envelope has no entry of their
// own), and their throughput over the run against its first quarter.
void ExpectLevelThreeJudgesTheHeld(const Daemon& d, const std::string& envelope) {
  google::protobuf::Struct doc;
  Result held = Cli({"qualify", "--host", d.address(), "--envelope", envelope, "--level", "3",
                     "--sustain", "3s", "--load", "2s", "--output", "json"});
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(held.out, &doc).ok()) << held.out;
  std::map<std::string, google::protobuf::Struct> level2;
  for (const auto& c : doc.fields().at("checks").list_value().values()) {
    level2[c.struct_value().fields().at("probe").string_value()] = c.struct_value();
  }
  ASSERT_EQ(level2.count("sustained_bf16"), 1u) << held.out;
  ASSERT_EQ(level2.count("sustained_bf16_decay"), 1u) << held.out;
  ASSERT_EQ(level2.count("loaded_bf16"), 1u) << held.out;
  ASSERT_EQ(level2.count("loaded_bf16_decay"), 1u) << held.out;
  const auto& figure = level2["sustained_bf16"].fields();
  const auto& decay = level2["sustained_bf16_decay"].fields();
  const double kept = decay.at("value").number_value();
  // unknown: contended. A steady host passes; a fail must be what the other
  // checks measured too: the hold's own fall (this 2-core VM's CPU once kept
  // 65% over the 3 s, no other process on it) or a session slower than the
  // envelope (its plain product failing beside it: 7% under the median once,
  // outside the five sessions' prediction interval).
  const bool steady =
      kept >= 95 && level2.count("matmul_bf16") == 1 &&
      level2["matmul_bf16"].fields().at("outcome").string_value() == "pass";
  if (figure.at("outcome").string_value() != "unknown" && steady) {
    EXPECT_EQ(figure.at("outcome").string_value(), "pass") << held.out;
  }
  if (figure.at("outcome").string_value() != "unknown") {
    EXPECT_NE(figure.at("why").string_value().find("against matmul_bf16's envelope"),
              std::string::npos)
        << held.out;
  }
  EXPECT_GT(kept, 50) << held.out;  // percent of the first quarter's throughput
  EXPECT_LT(kept, 150) << held.out;
  EXPECT_EQ(decay.at("outcome").string_value(), kept >= 95 ? "pass" : "fail") << held.out;
  EXPECT_TRUE(absl::EndsWith(doc.fields().at("status").string_value(), "(level 3)") ||
              !absl::StartsWith(doc.fields().at("status").string_value(), "OK"))
      << held.out;
}

TEST(CliQualify, ACpuHostPassesLevelOneAgainstItsOwnEnvelope) {
  const std::string dir = FreshDir("cli_qualify_cpu");
  Daemon d(dir);
  ASSERT_TRUE(d.serving());
  // No envelope for this CPU in the shipped one: unknown, each session a
  // probe session all the same.
  for (int session = 0; session < 5; ++session) {
    Result r = Cli({"qualify", "--host", d.address()});
    EXPECT_EQ(r.code, 2) << r.err << r.out;
    EXPECT_TRUE(absl::StartsWith(r.out, "UNKNOWN: ")) << r.out;
    EXPECT_NE(r.out.find("no envelope for CPU "), std::string::npos) << r.out;
  }
  const std::string envelope = dir + "/envelope.json";
  Result fleet = Cli({"fleet", "--host", d.address(), "--envelope", envelope});
  EXPECT_NE(fleet.err.find("written to " + envelope), std::string::npos) << fleet.err;
  auto parsed = report::ParseEnvelope(ReadFile(envelope), envelope);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  // A probe whose five sessions vary too widely to bound (a sanitizer's
  // build, a busy host) is left out, named, and unknown below; the rest
  // are in the envelope.
  std::set<std::string> left_out;
  for (const absl::string_view line_view : absl::StrSplit(fleet.err, '\n')) {
    const std::string line(line_view);
    if (!absl::StartsWith(line, "envelope: left out ")) continue;
    EXPECT_NE(line.find(" sessions vary too widely to bound"), std::string::npos) << line;
    left_out.insert(line.substr(19, line.find(' ', 19) - 19));
  }
  ASSERT_GE(parsed->probes_size(), 1) << ReadFile(envelope) << fleet.err;
  // The CPU's four probes (the bf16 product, attention, the copy, the
  // launch) each counted in 3 sessions of 5 at least: on an idle host none
  // is contended (the launch's steps of 2 us once made the daemon and this
  // CLI a core busy beside it with their progress).
  EXPECT_EQ(parsed->probes_size() + static_cast<int>(left_out.size()), 4)
      << ReadFile(envelope) << fleet.err << fleet.out;

  google::protobuf::Struct doc;
  // Another session, level 1: every check passes, but for a probe run left
  // out as contended (a moment's other work on the host) or left out of the
  // envelope: unknown, never a pass. A fail stands only where its re-run
  // fails too (one slow moment of this VM's launch, 1.53 us against a bound
  // of 1.46, once failed a healthy host).
  Result pass = Cli({"qualify", "--host", d.address(), "--envelope", envelope, "--output", "json"});
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(pass.out, &doc).ok()) << pass.out;
  int passed = 0, unknown = 0;
  std::map<std::string, std::string> outcomes;  // probe -> outcome
  for (const auto& c : doc.fields().at("checks").list_value().values()) {
    const auto& f = c.struct_value().fields();
    outcomes[f.at("probe").string_value()] = f.at("outcome").string_value();
    if (f.at("outcome").string_value() == "pass") {
      ++passed;
      continue;
    }
    EXPECT_EQ(f.at("outcome").string_value(), "unknown") << pass.out << pass.err;
    const std::string why = f.at("why").string_value();
    EXPECT_TRUE(why.find("contended") != std::string::npos ||
                (why.find("no envelope") != std::string::npos &&
                 left_out.count(f.at("probe").string_value()) == 1))
        << pass.out;
    ++unknown;
  }
  EXPECT_GE(passed, 1) << pass.out;
  EXPECT_EQ(pass.code, unknown == 0 ? 0 : 2) << pass.err << pass.out;
  const std::string line = doc.fields().at("status").string_value();
  if (unknown == 0) {
    EXPECT_TRUE(absl::StartsWith(line, "OK: 1 host, 1 device, ")) << line;
    EXPECT_TRUE(absl::EndsWith(line, " checks pass (level 1)")) << line;
  }
  // --latest measures nothing: it judges what that session stored (its
  // re-run's, where it had one) alike, and writes the gauges.
  const std::string prom = dir + "/qualify.prom";
  Result latest = Cli({"qualify", "--host", d.address(), "--envelope", envelope, "--textfile", prom,
                       "--latest", "--output", "json"});
  EXPECT_EQ(latest.code, pass.code) << latest.out;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(latest.out, &doc).ok()) << latest.out;
  std::map<std::string, std::string> stored;
  for (const auto& c : doc.fields().at("checks").list_value().values()) {
    const auto& f = c.struct_value().fields();
    stored[f.at("probe").string_value()] = f.at("outcome").string_value();
  }
  // (After a re-run, the newest session of a probe that passed at first is
  // the re-run's, judged afresh.)
  if (pass.err.find("again to confirm") == std::string::npos) {
    EXPECT_EQ(stored, outcomes) << latest.out << pass.out;
  }
  const std::string gauges = ReadFile(prom);
  EXPECT_EQ(gauges.find("gpubench_qualify_check{host=\"" + d.address() +
                        "\",device=\"cpu\",probe=\"matmul_bf16\"} 1\n") != std::string::npos,
            stored["matmul_bf16"] == "pass")
      << gauges;

  ExpectAFailConfirmed(d, *parsed, dir);
  ExpectLevelThreeJudgesTheHeld(d, envelope);
  // Levels it has not, and a held time out of range, are usage errors.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--level", "4"}, {"--level", "2", "--sustain", "0s"},
        {"--level", "2", "--sustain", "11m"}, {"--sustain", "60s"}, {"--level", "2", "--load", "1m"},
        {"--level", "3", "--load", "61m"}}) {
    std::vector<std::string> args = {"qualify", "--host", d.address()};
    args.insert(args.end(), bad.begin(), bad.end());
    Result r = Cli(args);
    EXPECT_EQ(r.code, kExitUsage) << r.err;
    const std::string flag = bad.size() == 2 ? bad[0] : bad[2];
    EXPECT_NE(r.err.find(flag + ": "), std::string::npos) << r.err;
  }
}

TEST(CliQualify, ASeededSlowGpuFailsNamingItsPowerLimit) {
  const std::string dir = FreshDir("cli_qualify_gpu");
  Daemon d(dir);
  ASSERT_TRUE(d.serving());
  // Four H100s, three daily sessions each, about 690 TFLOP/s at 700 W.
  for (int day = 3; day >= 1; --day) {
    for (int g = 0; g < 4; ++g) {
      v1::Run run = H100Run("v1/matmul_bf16", "000" + std::to_string(g), 686 + g + day);
      run.mutable_start_time()->set_seconds(run.start_time().seconds() - 86400 * day);
      Plant(d, run);
    }
  }
  const std::string envelope = dir + "/envelope.json";
  Cli({"fleet", "--host", d.address(), "--envelope", envelope});
  // Today's session: GPU 0001 capped at 420 W.
  for (int g = 0; g < 4; ++g) {
    Plant(d, H100Run("v1/matmul_bf16", "000" + std::to_string(g), g == 1 ? 415 : 690,
                     g == 1 ? 420 : 700));
  }
  Result r = Cli({"qualify", "--host", d.address(), "--latest", "--envelope", envelope});
  EXPECT_EQ(r.code, 1) << r.err << r.out;
  EXPECT_TRUE(absl::StartsWith(r.out, "NOTOK: " + d.address() +
                                          " cuda:0 GPU-0001 matmul_bf16 415 TFLOP/s, below "))
      << r.out;
  EXPECT_NE(r.out.find("power limit 700 W \u2192 420 W"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("pass"), std::string::npos) << r.err;  // the table of checks

  Result json = Cli({"qualify", "--host", d.address(), "--latest", "--envelope", envelope,
                     "--output", "json"});
  EXPECT_EQ(json.code, 1) << json.err;
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &doc).ok()) << json.out;
  int failed = 0, passed = 0;
  for (const auto& c : doc.fields().at("checks").list_value().values()) {
    const auto& f = c.struct_value().fields();
    const bool capped = f.at("device").string_value().find("GPU-0001") != std::string::npos;
    EXPECT_EQ(f.at("outcome").string_value(), capped ? "fail" : "pass");
    (capped ? failed : passed) += 1;
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(passed, 3);

  // The shipped envelope has no H100 entry: unknown, said.
  Result shipped = Cli({"qualify", "--host", d.address(), "--latest"});
  EXPECT_EQ(shipped.code, 2) << shipped.err << shipped.out;
  EXPECT_NE(shipped.out.find("no envelope for NVIDIA H100 80GB HBM3"), std::string::npos)
      << shipped.out;
  std::ofstream(dir + "/bad.json") << "{\"probes\": [{\"probe\": \"matmul_bf16\"}]}";
  Result bad = Cli({"qualify", "--host", d.address(), "--envelope", dir + "/bad.json"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("probes[0].sku"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace gpubench::client
