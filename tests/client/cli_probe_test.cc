// The fleet probe suite and the ranking over it, against real daemons on
// loopback: `probe` at CPU sizes on two hosts, then `fleet` over seeded
// H100 probe runs with one GPU capped, and an unreachable host; a spec that
// names a probe refused, and runs that are no probe result (not the
// daemon's own, contended, a CPU size on a GPU) and a tie flagging nothing.
#include <gtest/gtest.h>

#include <random>

#include <fstream>

#include "absl/time/clock.h"
#include "client/cli.h"
#include "common/sha256.h"
#include "common/spec.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "report/fleet_rank.h"
#include "storage/store.h"
#include "tests/client/cli_test_util.h"
#include "tests/client/probe_runs.h"
#include "tests/support/daemon_process.h"

namespace gpubench::client {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

// A unary call with a bearer token; its status.
template <typename Request, typename Response>
grpc::Status CallAs(Daemon& d, const std::string& token,
                    grpc::Status (v1::BenchService::Stub::*rpc)(grpc::ClientContext*,
                                                                const Request&, Response*),
                    const Request& request, Response* response) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  ctx.AddMetadata("authorization", "Bearer " + token);
  return (d.stub()->*rpc)(&ctx, request, response);
}

TEST(CliDaemon, ProbeMeasuresEachHostAndFleetNamesTheCappedStraggler) {
  Daemon a(FreshDir("cli_probe_a")), b(FreshDir("cli_probe_b"));
  ASSERT_TRUE(a.serving() && b.serving());
  // The suite at CPU sizes on two real daemons.
  Result probe = Cli({"probe", "--small", "--host", a.address(), "--host", b.address()});
  ASSERT_EQ(probe.code, kExitOk) << probe.err << probe.out;
  for (const char* p : {"matmul_bf16", "attention", "copy_d2d", "launch"}) {
    EXPECT_NE(probe.out.find(p), std::string::npos) << probe.out;
  }
  EXPECT_NE(probe.out.find(a.address()), std::string::npos) << probe.out;
  EXPECT_NE(probe.out.find(b.address()), std::string::npos) << probe.out;
  EXPECT_NE(probe.err.find("2 of 2 hosts answered"), std::string::npos) << probe.err;

  // Eight H100s on the two hosts; one capped at 420 W (60% of 700) runs at
  // 60% of the others' bf16 matmul.
  for (int g = 0; g < 8; ++g) {
    const bool capped = g == 5;
    PlantProbe(g < 4 ? a : b, "000" + std::to_string(g), capped ? 415 : 690 + g,
               capped ? 420 : 700);
  }
  const std::string page = FreshDir("cli_probe_page") + "/fleet.html";
  // A third host that is not there: the answer says so, the others stand.
  Result fleet = Cli({"fleet", "--host", a.address(), "--host", b.address(), "--host",
                      "127.0.0.1:1", "--report", page});
  // A straggler (4); a host's CPU whose probe runs were left out as
  // contended has no probe in the window: missing (6) beats it.
  const bool cpu_left_out = probe.out.find("left out: contended") != std::string::npos;
  EXPECT_EQ(fleet.code, cpu_left_out ? kExitMissing : kExitRegression) << fleet.err << fleet.out;
  EXPECT_NE(fleet.err.find("2 of 3 hosts answered; 1 unreachable (127.0.0.1:1)"),
            std::string::npos)
      << fleet.err;
  std::string straggler_row;
  for (const std::string& line : SplitLines(fleet.out)) {
    if (line.find("straggler: ") != std::string::npos) {  // not "no straggler verdict"
      EXPECT_TRUE(straggler_row.empty()) << "a second straggler: " << line;
      straggler_row = line;
    }
  }
  EXPECT_NE(straggler_row.find("GPU-0005"), std::string::npos) << fleet.out;
  EXPECT_NE(straggler_row.find(b.address()), std::string::npos) << fleet.out;
  EXPECT_NE(straggler_row.find("power limit 420 W (peers 700 W)"), std::string::npos)
      << fleet.out;
  // The CPUs' own probes are ranked too, apart from the H100s (unless the
  // machine was busy enough for each to be left out as contended: then
  // probe said so), two hosts' CPUs: too few for a straggler verdict.
  if (probe.out.find("left out: contended") == std::string::npos) {
    EXPECT_NE(fleet.out.find("CPU "), std::string::npos) << fleet.out;
    EXPECT_NE(fleet.out.find("fewer than 3 peers: no straggler verdict"), std::string::npos)
        << fleet.out;
  }
  std::ifstream html(page);
  const std::string text((std::istreambuf_iterator<char>(html)), {});
  EXPECT_NE(text.find("power limit 420 W (peers 700 W)"), std::string::npos);

  // JSON: each GPU with its percentile among its 8 peers.
  Result json = Cli({"fleet", "--host", a.address(), "--host", b.address(), "--output", "json"});
  EXPECT_EQ(json.code, cpu_left_out ? kExitMissing : kExitRegression) << json.err;
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &doc).ok()) << json.out;
  int h100s = 0;
  for (const auto& g : doc.fields().at("gpus").list_value().values()) {
    const auto& f = g.struct_value().fields();
    if (f.at("sku").string_value().find("H100") == std::string::npos) continue;
    ++h100s;
    EXPECT_EQ(f.at("peers").number_value(), 8);
    const bool capped = f.at("gpu").string_value().find("GPU-0005") != std::string::npos;
    EXPECT_EQ(f.at("straggler").bool_value(), capped);
    if (capped) {
      EXPECT_EQ(f.at("percentile").number_value(), 0);
    }
  }
  EXPECT_EQ(h100s, 8);
  Result bad = Cli({"fleet", "--host", a.address(), "--threshold", "2"});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_NE(bad.err.find("--threshold"), std::string::npos) << bad.err;
}

// Ten daily probe sessions of two H100s; one drops 10% from the seventh on,
// its power limit cut to 560 W. fleet names the change point (the first
// session after, the medians, the power limit), and lists the host's CPU,
// never probed, as missing (exit 6) until `probe --small` has run there.
TEST(CliDaemon, FleetNamesAChangePointInAGpusHistoryAndADeviceNotProbed) {
  Daemon d(FreshDir("cli_probe_changes"));
  ASSERT_TRUE(d.serving());
  std::mt19937 rng(5);
  std::normal_distribution<double> noise(0, 0.003);
  std::string first_slow;
  for (int session = 0; session < 10; ++session) {
    for (const std::string uuid : {"0001", "0002"}) {
      const bool slow = uuid == "0001" && session >= 6;
      v1::Run run = H100Run("v1/matmul_bf16", uuid, (slow ? 630 : 700) * (1 + noise(rng)),
                            slow ? 560 : 700);
      run.mutable_start_time()->set_seconds(run.start_time().seconds() -
                                            86400 * (10 - session));
      const std::string id = Plant(d, run);
      if (slow && session == 6) first_slow = id;
    }
  }
  Result fleet = Cli({"fleet", "--host", d.address()});
  EXPECT_EQ(fleet.code, kExitMissing) << fleet.err << fleet.out;
  std::string change_row;
  for (const std::string& line : SplitLines(fleet.out)) {
    if (line.find(first_slow) != std::string::npos) change_row = line;
  }
  EXPECT_NE(change_row.find("cuda:0 GPU-0001 matmul_bf16"), std::string::npos) << fleet.out;
  EXPECT_NE(change_row.find("(worse)"), std::string::npos) << fleet.out;
  EXPECT_NE(change_row.find("6/4"), std::string::npos) << fleet.out;
  EXPECT_NE(change_row.find("power limit 700 W \u2192 560 W"), std::string::npos) << fleet.out;
  EXPECT_EQ(fleet.out.find("GPU-0002 matmul_bf16"), std::string::npos) << "no change: " << fleet.out;
  EXPECT_NE(fleet.out.find("no probe in the window"), std::string::npos) << fleet.out;
  EXPECT_NE(fleet.err.find("change points: 1 in 2 series"), std::string::npos) << fleet.err;

  Result probe = Cli({"probe", "--small", "--host", d.address()});
  ASSERT_EQ(probe.code, kExitOk) << probe.err << probe.out;
  // The CPU is probed once one of its probe runs counts; a run that other
  // work on the host contended (tests beside this one) does not.
  const bool counted = probe.out.find(" counts\n") != std::string::npos;
  Result probed = Cli({"fleet", "--host", d.address(), "--output", "json"});
  EXPECT_EQ(probed.code, counted ? kExitRegression : kExitMissing) << probe.out << probed.err;
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(probed.out, &doc).ok()) << probed.out;
  EXPECT_EQ(doc.fields().at("missing").list_value().values_size(), counted ? 0 : 1)
      << probe.out << probed.out;
  const auto& points =
      doc.fields().at("change_points").struct_value().fields().at("change_points").list_value();
  ASSERT_EQ(points.values_size(), 1) << probed.out;
  EXPECT_EQ(points.values(0).struct_value().fields().at("first_run_after").string_value(),
            first_slow);
}

// Issue 44: a submit-role caller filled fleet with a spec naming a probe.
// Now only the daemon's own suite makes probe runs: such a spec is refused,
// the suite needs the admin role, and runs that are no probe result (no
// daemon mark, contended, a CPU size on a GPU) change nothing in fleet;
// nor does a tie of two peers make the third a straggler.
TEST(CliDaemon, OnlyTheDaemonsOwnQuietProbeRunsCountInFleet) {
  const std::string dir = FreshDir("cli_probe_roles_files");
  std::ofstream(dir + "/tokens") << Sha256Hex("s-token") << " ci submit\n"
                                 << Sha256Hex("a-token") << " ops admin\n";
  Daemon d(FreshDir("cli_probe_roles"), {"--token-file", dir + "/tokens"});
  ASSERT_TRUE(d.serving()) << d.log();

  // The suite's own CPU job, submitted as a spec: refused, dry run too,
  // naming the field, for an admin as well.
  v1::HostInfo cpu_host;
  for (const char* token : {"s-token", "a-token"}) {
    for (bool dry_run : {false, true}) {
      v1::SubmitJobRequest submit;
      *submit.mutable_spec() = report::ProbeJobs(cpu_host, /*small=*/true)[0];
      ASSERT_FALSE(submit.spec().base().probe().empty());
      submit.set_dry_run(dry_run);
      v1::SubmitJobResponse submitted;
      const grpc::Status s =
          CallAs(d, token, &v1::BenchService::Stub::SubmitJob, submit, &submitted);
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << token << dry_run;
      EXPECT_NE(s.error_message().find("spec.base.probe"), std::string::npos)
          << s.error_message();
    }
  }
  // The suite through the daemon: admin only; the daemon builds it and
  // marks each job its own.
  v1::RunProbeRequest plan;
  plan.set_small(true);
  plan.set_dry_run(true);
  v1::RunProbeResponse planned;
  EXPECT_EQ(CallAs(d, "s-token", &v1::BenchService::Stub::RunProbe, plan, &planned)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(CallAs(d, "a-token", &v1::BenchService::Stub::RunProbe, plan, &planned).ok());
  ASSERT_EQ(planned.jobs_size(), 4);  // bf16 matmul, attention, copy, launch on the CPU
  for (const v1::Job& job : planned.jobs()) {
    EXPECT_TRUE(job.daemon_probe());
    EXPECT_TRUE(job.job_id().empty());  // a dry run queues nothing
    EXPECT_EQ(job.spec().sweep().device(0), "cpu");
  }
  const std::string fleet_file = dir + "/fleet.json";
  std::ofstream(fleet_file) << R"({"hosts": [{"name": "ci", "address": ")" << d.address()
                            << R"(", "token": "s-token"}, {"name": "ops", "address": ")"
                            << d.address() << R"(", "token": "a-token"}]})";
  setenv("GPUBENCH_FLEET", fleet_file.c_str(), 1);
  unsetenv("GPUBENCH_HOST");
  Result refused = Cli({"probe", "--small", "--host", "ci"});
  EXPECT_EQ(refused.code, kExitAuth) << refused.err;
  EXPECT_NE(refused.err.find("refused the caller (ci)"), std::string::npos) << refused.err;

  // Three H100s of the daemon's own probes; the launch: two tie at 0.45 us.
  for (int g = 0; g < 3; ++g) {
    Plant(d, H100Run("v1/matmul_bf16", "000" + std::to_string(g), 700 + g));
    Plant(d, H100Run("v1/launch", "000" + std::to_string(g), g == 2 ? 0.481 : 0.45));
  }
  // What must change nothing, each newer and each a straggler if it counted:
  // a caller's run with the suite's config (from before the refusal), a
  // contended probe run, a CPU-size config on a GPU.
  v1::Run forged = H100Run("v1/matmul_bf16", "0000", 300);
  forged.set_daemon_probe(false);
  v1::Run contended = H100Run("v1/matmul_bf16", "0001", 300);
  contended.mutable_result()->mutable_contention()->set_contended(true);
  contended.mutable_result()->mutable_contention()->add_jobs_beside("j-other");
  v1::Run cpu_size = H100Run("v1/matmul_bf16", "0002", 1);
  *cpu_size.mutable_config() = SuiteConfig("v1/matmul_bf16", /*small=*/true);
  cpu_size.mutable_config()->set_device("cuda:0");
  std::vector<std::string> ignored;
  for (const v1::Run& r : {forged, contended, cpu_size}) ignored.push_back(Plant(d, r));

  // fleet is a reader's command: the submit token reads it too.
  Result fleet = Cli({"fleet", "--host", "ci", "--output", "json"});
  unsetenv("GPUBENCH_FLEET");
  // Nothing flagged; the daemon's CPU, never probed, is missing.
  EXPECT_EQ(fleet.code, kExitMissing) << fleet.err << fleet.out;
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(fleet.out, &doc).ok()) << fleet.out;
  ASSERT_EQ(doc.fields().at("missing").list_value().values_size(), 1) << fleet.out;
  EXPECT_EQ(doc.fields().at("missing").list_value().values(0).struct_value().fields().at("what")
                .string_value(),
            "cpu");
  int rows = 0;
  for (const auto& g : doc.fields().at("gpus").list_value().values()) {
    const auto& f = g.struct_value().fields();
    ++rows;
    EXPECT_EQ(f.at("peers").number_value(), 3);
    EXPECT_FALSE(f.at("straggler").bool_value()) << f.at("gpu").string_value();
    EXPECT_EQ(f.at("history").list_value().values_size(), 0);  // no session of theirs
    for (const std::string& id : ignored) EXPECT_NE(f.at("run_id").string_value(), id);
    if (f.at("probe").string_value() == "matmul_bf16") {
      EXPECT_GE(f.at("value").number_value(), 700);
    }
    if (f.at("probe").string_value() == "launch" && f.at("value").number_value() > 0.47) {
      EXPECT_TRUE(f.at("straggler_too_noisy").bool_value());  // 1.07x, within the noise
    }
  }
  EXPECT_EQ(rows, 6);  // two probes of three H100s
}

}  // namespace
}  // namespace gpubench::client
