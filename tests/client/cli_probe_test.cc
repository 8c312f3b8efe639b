// The fleet probe suite and the ranking over it, against real daemons on
// loopback: `probe` at CPU sizes on two hosts, then `fleet` over seeded
// H100 probe runs with one GPU capped, and an unreachable host.
#include <gtest/gtest.h>

#include <fstream>

#include "absl/time/clock.h"
#include "client/cli.h"
#include "common/spec.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "report/fleet_rank.h"
#include "storage/store.h"
#include "tests/client/cli_test_util.h"
#include "tests/support/daemon_process.h"

namespace gpubench::client {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

// Plants, in the daemon's store, a succeeded bf16 matmul probe run of one
// H100 (a job of its own) at `tflops` under a power limit of `watts`.
void PlantProbe(const Daemon& d, const std::string& uuid, double tflops, double watts) {
  auto store = storage::Store::Open({d.data_dir() + "/gpubench.db"});
  ASSERT_TRUE(store.ok()) << store.status();
  v1::Job job;
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  const std::string job_id = *(*store)->jobs().Insert(job);
  v1::Run run;
  run.set_job_id(job_id);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  // The config the suite gives the bf16 probe, on cuda:0.
  v1::HostInfo host;
  host.add_gpus()->set_compute_capability("9.0");
  auto configs = ExpandSweep(report::ProbeJobs(host, /*small=*/false)[0]);
  ASSERT_TRUE(configs.ok()) << configs.status();
  *run.mutable_config() = configs->at(0);
  ASSERT_EQ(run.config().probe(), "v1/matmul_bf16");
  run.mutable_result()->set_resolved_device("cuda:0");
  run.mutable_result()->set_achieved_tflops(tflops);
  run.mutable_result()->set_throughput_samples_per_s(tflops);
  *run.mutable_start_time() =
      google::protobuf::util::TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(absl::Now()));
  *run.mutable_end_time() = run.start_time();
  v1::Fingerprint* f = run.mutable_fingerprint();
  f->set_gpu_name("NVIDIA H100 80GB HBM3");
  f->set_gpu_uuid("GPU-" + uuid);
  f->set_driver_version("580.159.04");
  f->set_power_limit_w(watts);
  ASSERT_TRUE((*store)->runs().Insert(run).ok());
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
  EXPECT_EQ(fleet.code, kExitRegression) << fleet.err << fleet.out;
  EXPECT_NE(fleet.err.find("2 of 3 hosts answered; 1 unreachable (127.0.0.1:1)"),
            std::string::npos)
      << fleet.err;
  std::string straggler_row;
  for (const std::string& line : SplitLines(fleet.out)) {
    if (line.find("straggler") != std::string::npos) {
      EXPECT_TRUE(straggler_row.empty()) << "a second straggler: " << line;
      straggler_row = line;
    }
  }
  EXPECT_NE(straggler_row.find("GPU-0005"), std::string::npos) << fleet.out;
  EXPECT_NE(straggler_row.find(b.address()), std::string::npos) << fleet.out;
  EXPECT_NE(straggler_row.find("power limit 420 W (peers 700 W)"), std::string::npos)
      << fleet.out;
  // The CPUs' own probes are ranked too, apart from the H100s.
  EXPECT_NE(fleet.out.find("CPU "), std::string::npos) << fleet.out;
  std::ifstream html(page);
  const std::string text((std::istreambuf_iterator<char>(html)), {});
  EXPECT_NE(text.find("power limit 420 W (peers 700 W)"), std::string::npos);

  // JSON: each GPU with its percentile among its 8 peers.
  Result json = Cli({"fleet", "--host", a.address(), "--host", b.address(), "--output", "json"});
  EXPECT_EQ(json.code, kExitRegression) << json.err;
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
    if (capped) EXPECT_EQ(f.at("percentile").number_value(), 0);
  }
  EXPECT_EQ(h100s, 8);
  Result bad = Cli({"fleet", "--host", a.address(), "--threshold", "2"});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_NE(bad.err.find("--threshold"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace gpubench::client
