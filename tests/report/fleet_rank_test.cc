// The fleet ranking over seeded probe runs: each GPU against the GPUs of its
// SKU and driver, stragglers and drift flagged with the setup that differs,
// and the fleet page drawing them.
#include "report/fleet_rank.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/spec.h"
#include "report/report.h"

namespace gpubench::report {
namespace {

// The config the suite gives a probe on a GPU (the first of its sizes).
v1::RunConfig SuiteConfig(const std::string& probe) {
  v1::HostInfo host;
  for (int i = 0; i < 2; ++i) {
    v1::GpuInfo* g = host.add_gpus();
    g->set_index(i);
    g->set_compute_capability("9.0");
  }
  for (const v1::JobSpec& spec : ProbeJobs(host, /*small=*/false)) {
    auto configs = ExpandSweep(spec);
    EXPECT_TRUE(configs.ok()) << configs.status();
    for (const v1::RunConfig& c : *configs) {
      if (c.probe() == std::string(kProbeSuite) + "/" + probe) return c;
    }
  }
  ADD_FAILURE() << "no probe " << probe;
  return {};
}

// A succeeded probe run of one GPU: value in the probe's unit, started at
// `second`, in job `job`.
v1::Run ProbeRun(const std::string& probe, double value, const std::string& uuid,
                 const std::string& job, int second, double power_limit_w = 700,
                 const std::string& gpu_name = "NVIDIA H100 80GB HBM3") {
  v1::Run r;
  r.set_run_id("r" + uuid + job + probe + std::to_string(second));
  r.set_job_id(job);
  r.set_state(v1::RUN_STATE_SUCCEEDED);
  *r.mutable_config() = SuiteConfig(probe);
  r.mutable_config()->set_device("cuda:0");
  r.mutable_result()->set_resolved_device("cuda:0");
  if (probe == "launch") {
    r.mutable_result()->mutable_host_latency()->set_p50_ms(value / 1e3);
  } else if (probe == "copy_d2d") {
    r.mutable_result()->set_bandwidth_gb_per_s(value);
  } else {
    r.mutable_result()->set_achieved_tflops(value);
  }
  r.mutable_start_time()->set_seconds(1'700'000'000 + second);
  v1::Fingerprint* f = r.mutable_fingerprint();
  f->set_gpu_name(gpu_name);
  f->set_gpu_uuid("GPU-" + uuid);
  f->set_driver_version("580.159.04");
  f->set_power_limit_w(power_limit_w);
  f->set_power_limit_default_w(700);
  return r;
}

const Ranked* Find(const std::vector<Ranked>& ranked, const std::string& probe,
                   const std::string& uuid_head) {
  for (const Ranked& r : ranked) {
    if (r.result.probe == probe && r.result.gpu.find(uuid_head) != std::string::npos) return &r;
  }
  return nullptr;
}

TEST(FleetRank, AGpuCappedAt60PercentPowerIsTheStragglerAndItsLimitIsNamed) {
  // Ten H100s on two hosts, bf16 matmul about 700 TFLOP/s; GPU 07 capped
  // at 420 W runs at 60%.
  std::vector<ProbeResult> results;
  for (int host = 0; host < 2; ++host) {
    std::vector<v1::Run> runs;
    for (int g = 0; g < 5; ++g) {
      const std::string uuid = "0" + std::to_string(host * 5 + g);
      const bool capped = uuid == "07";
      const double value = capped ? 420 : 680 + 3 * (host * 5 + g);
      runs.push_back(ProbeRun("matmul_bf16", value, uuid, "j" + uuid, g, capped ? 420 : 700));
    }
    for (ProbeResult& r : ProbeResults("host" + std::to_string(host), "", runs)) {
      results.push_back(r);
    }
  }
  const std::vector<Ranked> ranked = RankFleet(results, FleetRule());
  ASSERT_EQ(ranked.size(), 10u);
  const Ranked& worst = ranked.front();  // worst first
  EXPECT_NE(worst.result.gpu.find("GPU-07"), std::string::npos) << worst.result.gpu;
  EXPECT_TRUE(worst.straggler);
  EXPECT_EQ(worst.peers, 10);
  EXPECT_NEAR(worst.ratio, 420.0 / 690.5, 1e-9);  // the median of 680..707 and the cap
  EXPECT_EQ(worst.percentile, 0.0);
  ASSERT_TRUE(worst.z.has_value());
  EXPECT_LT(*worst.z, -2.5);
  EXPECT_EQ(worst.differs, std::vector<std::string>{"power limit 420 W (peers 700 W)"});
  EXPECT_EQ(worst.result.sku, "NVIDIA H100 80GB HBM3, driver 580.159.04");
  for (size_t i = 1; i < ranked.size(); ++i) {
    EXPECT_FALSE(ranked[i].straggler) << ranked[i].result.gpu;
    EXPECT_TRUE(ranked[i].differs.empty()) << ranked[i].result.gpu;
  }
  EXPECT_EQ(ranked.back().percentile, 100.0);

  // The page names the straggler and its limit, escaped.
  const std::string page = RenderFleetPage(ranked, "2 of 2 hosts answered", FleetRule());
  EXPECT_NE(page.find("<h2>Flagged</h2>"), std::string::npos);
  EXPECT_NE(page.find("power limit 420 W (peers 700 W)"), std::string::npos);
  EXPECT_NE(page.find("2 of 2 hosts answered"), std::string::npos);
  EXPECT_NE(page.find("matmul_bf16 (TFLOP/s) \u00b7 NVIDIA H100 80GB HBM3, driver 580.159.04 "
                      "\u00b7 10 devices"),
            std::string::npos);
}

TEST(FleetRank, PeersAreOneSkuAndDriverAndTooFewGiveNoVerdict) {
  std::vector<v1::Run> runs = {
      ProbeRun("matmul_bf16", 700, "a1", "j1", 1),
      ProbeRun("matmul_bf16", 702, "a2", "j1", 2),
      ProbeRun("matmul_bf16", 698, "a3", "j1", 3),
      // An H200 is no H100's peer, however slow; alone it gets no verdict.
      ProbeRun("matmul_bf16", 500, "b1", "j1", 4, 700, "NVIDIA H200"),
  };
  // Another driver makes another group: two GPUs, too few to flag either.
  v1::Run other_driver = ProbeRun("matmul_bf16", 400, "c1", "j1", 5);
  other_driver.mutable_fingerprint()->set_driver_version("590.12");
  runs.push_back(other_driver);
  v1::Run other_driver2 = ProbeRun("matmul_bf16", 700, "c2", "j1", 6);
  other_driver2.mutable_fingerprint()->set_driver_version("590.12");
  runs.push_back(other_driver2);
  const std::vector<Ranked> ranked = RankFleet(ProbeResults("h", "", runs), FleetRule());
  ASSERT_EQ(ranked.size(), 6u);
  for (const Ranked& r : ranked) EXPECT_FALSE(r.straggler) << r.result.gpu;
  EXPECT_EQ(Find(ranked, "matmul_bf16", "b1")->peers, 1);
  EXPECT_FALSE(Find(ranked, "matmul_bf16", "b1")->percentile.has_value());
  EXPECT_EQ(Find(ranked, "matmul_bf16", "c1")->peers, 2);
  EXPECT_FALSE(Find(ranked, "matmul_bf16", "c1")->z.has_value());
  EXPECT_EQ(Find(ranked, "matmul_bf16", "a1")->peers, 3);
}

TEST(FleetRank, LatencyIsBetterLowAndAGpuSlowerThanItsOwnPastHasDrifted) {
  std::vector<v1::Run> runs;
  // Four sessions of three GPUs: d3's launch got 30% slower in the last one,
  // still within 5% of nobody: its peers are 9, 10 and it is 13 us.
  const double base[] = {9.0, 10.0, 10.0};
  for (int session = 0; session < 4; ++session) {
    for (int g = 0; g < 3; ++g) {
      const double us = session == 3 && g == 2 ? 13.0 : base[g];
      runs.push_back(ProbeRun("launch", us, "d" + std::to_string(g + 1),
                              "j" + std::to_string(session), 10 * session + g));
    }
  }
  // A session's best of several runs counts (matmul at two sizes).
  runs.push_back(ProbeRun("matmul_bf16", 500, "d1", "j9", 100));
  runs.push_back(ProbeRun("matmul_bf16", 690, "d1", "j9", 101));
  const std::vector<Ranked> ranked = RankFleet(ProbeResults("h", "", runs), FleetRule());
  const Ranked* d3 = Find(ranked, "launch", "d3");
  ASSERT_NE(d3, nullptr);
  EXPECT_EQ(d3->result.value, 13.0);
  EXPECT_EQ(d3->result.history, (std::vector<double>{10, 10, 10}));
  ASSERT_TRUE(d3->drift.has_value());
  EXPECT_NEAR(*d3->drift, 1.3, 1e-9);
  EXPECT_TRUE(d3->drifted);  // its history never varied: 13 stands out
  // 13 against 9 and 10: 30% slower than the median, but three peers this
  // spread cannot tell it from noise (a robust z of 2).
  EXPECT_FALSE(d3->straggler);
  EXPECT_TRUE(d3->straggler_too_noisy);
  EXPECT_EQ(d3->percentile, 0.0);
  const Ranked* d1 = Find(ranked, "launch", "d1");
  EXPECT_FALSE(d1->drifted);
  EXPECT_FALSE(d1->straggler);
  EXPECT_EQ(d1->percentile, 100.0);  // the fastest launch
  EXPECT_EQ(Find(ranked, "matmul_bf16", "d1")->result.value, 690.0);
  // The suite's order: matmul before launch.
  EXPECT_EQ(ranked.front().result.probe, "matmul_bf16");
}

TEST(FleetRank, ADriftWithinTheGpusOwnSpreadIsTooNoisyToTell) {
  // Launch latency as it varies between sessions on an H100 (20%): 30%
  // above the median of its past is inside their prediction interval.
  std::vector<v1::Run> runs;
  const double us[] = {10, 14, 9, 13, 15};
  for (int session = 0; session < 5; ++session) {
    runs.push_back(ProbeRun("launch", us[session], "f1", "j" + std::to_string(session), session));
  }
  const std::vector<Ranked> ranked = RankFleet(ProbeResults("h", "", runs), FleetRule());
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_NEAR(*ranked[0].drift, 15.0 / 11.5, 1e-9);
  EXPECT_FALSE(ranked[0].drifted);
  EXPECT_TRUE(ranked[0].drift_too_noisy);
}

TEST(FleetRank, RunsThatAreNoProbeOfTheSuiteAreLeftOut) {
  v1::Run plain = ProbeRun("matmul_bf16", 700, "e1", "j1", 1);
  plain.mutable_config()->clear_probe();
  v1::Run future = ProbeRun("matmul_bf16", 700, "e2", "j1", 2);
  future.mutable_config()->set_probe("v2/matmul_bf16");
  v1::Run failed = ProbeRun("matmul_bf16", 700, "e3", "j1", 3);
  failed.set_state(v1::RUN_STATE_FAILED);
  // A submitter's fp8 product labelled the bf16 probe would move the
  // median: only the suite's own config counts.
  v1::Run forged = ProbeRun("matmul_bf16", 1250, "e4", "j1", 4);
  forged.mutable_config()->set_precision(v1::PRECISION_FP8);
  v1::Run nan = ProbeRun("matmul_bf16", std::nan(""), "e5", "j1", 5);
  EXPECT_TRUE(ProbeResults("h", "", {plain, future, failed, forged, nan}).empty());
  EXPECT_EQ(ProbeResults("h", "", {ProbeRun("matmul_bf16", 700, "e6", "j1", 6)}).size(), 1u);
}

TEST(FleetRank, AGpuRunWithoutItsNameIsNeverACpusPeer) {
  v1::Run gpu = ProbeRun("matmul_bf16", 700, "g1", "j1", 1);
  gpu.clear_fingerprint();  // no NVML where it ran
  const std::vector<ProbeResult> results = ProbeResults("h", "AMD EPYC", {gpu});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].sku, "GPU ?, driver ?");
}

}  // namespace
}  // namespace gpubench::report
