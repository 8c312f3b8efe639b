// The fleet ranking over seeded probe runs: each GPU against the GPUs of its
// SKU and driver, stragglers and drift flagged with the setup that differs
// (never on a tie: each probe's noise floor), the runs that are no probe
// result (not the daemon's, contended, a CPU size on a GPU), and the fleet
// page drawing them.
#include "report/fleet_rank.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/spec.h"
#include "tests/report/suite_config.h"
#include "report/report.h"

namespace gpubench::report {
namespace {


// A succeeded probe run of one GPU: value in the probe's unit, started at
// `second`, in job `job`.
v1::Run ProbeRun(const std::string& probe, double value, const std::string& uuid,
                 const std::string& job, int second, double power_limit_w = 700,
                 const std::string& gpu_name = "NVIDIA H100 80GB HBM3") {
  v1::Run r;
  r.set_run_id("r" + uuid + job + probe + std::to_string(second));
  r.set_job_id(job);
  r.set_state(v1::RUN_STATE_SUCCEEDED);
  r.set_daemon_probe(true);  // the daemon's own suite made it
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

TEST(FleetRank, LatencyIsBetterLowAndAFlatHistoryIsNoSpread) {
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
  // Its history never varied (p 0), but a launch varies 20% between
  // sessions on an unchanged H100: 30% is within 3 times that.
  EXPECT_FALSE(d3->drifted);
  EXPECT_TRUE(d3->drift_too_noisy);
  // 13 against 9 and 10: 30% slower than the median, but within 3 times
  // their spread, which is never below the launch's 20% (2 us here).
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

TEST(FleetRank, AGpuSlowerThanItsOwnSteadyPastHasDrifted) {
  // bf16 matmul, steady at 700 for three sessions, then 600: 14% worse, far
  // beyond the probe's 1.25% between sessions.
  std::vector<v1::Run> runs;
  const double tflops[] = {700, 700, 700, 600};
  for (int session = 0; session < 4; ++session) {
    runs.push_back(
        ProbeRun("matmul_bf16", tflops[session], "h1", "j" + std::to_string(session), session));
  }
  const std::vector<Ranked> ranked = RankFleet(ProbeResults("h", "", runs), FleetRule());
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_NEAR(*ranked[0].drift, 600.0 / 700, 1e-9);
  EXPECT_TRUE(ranked[0].drifted);
  EXPECT_FALSE(ranked[0].drift_too_noisy);
}

// Issue 44: two of three peers read exactly 0.45 us on the launch probe and
// the third 0.481 was flagged a straggler (1.07x), exit 4: a median absolute
// deviation of 0 made any distance infinitely significant.
TEST(FleetRank, ThreePeersWithATieFlagNothing) {
  std::vector<v1::Run> runs = {ProbeRun("launch", 0.45, "t1", "j1", 1),
                               ProbeRun("launch", 0.45, "t2", "j1", 2),
                               ProbeRun("launch", 0.481, "t3", "j1", 3)};
  const std::vector<Ranked> ranked = RankFleet(ProbeResults("h", "", runs), FleetRule());
  ASSERT_EQ(ranked.size(), 3u);
  for (const Ranked& r : ranked) {
    EXPECT_FALSE(r.straggler) << r.result.gpu;
    EXPECT_FALSE(r.drifted) << r.result.gpu;
    EXPECT_TRUE(r.no_verdict.empty()) << r.result.gpu;  // 3 peers: a verdict is given
  }
  const Ranked* t3 = Find(ranked, "launch", "t3");
  ASSERT_NE(t3, nullptr);
  EXPECT_NEAR(t3->ratio, 0.481 / 0.45, 1e-9);
  EXPECT_TRUE(t3->straggler_too_noisy);  // beyond 5%, within the launch's noise
  EXPECT_NEAR(t3->noise, 0.45 * 0.20, 1e-12);  // the floor, not the tie's 0
  // The page draws it amber, too noisy to tell, not red.
  const std::string page = RenderFleetPage(ranked, "1 of 1 hosts answered", FleetRule());
  EXPECT_NE(page.find("too noisy to tell"), std::string::npos);
  EXPECT_NE(page.find("No GPU is a straggler or has drifted."), std::string::npos);
}

// The floor keeps a tie from flagging, not a straggler from being one: two
// peers that tie and a third far beyond the probe's own noise.
TEST(FleetRank, BeyondTheNoiseFloorATieStillFindsTheStraggler) {
  std::vector<v1::Run> runs = {ProbeRun("matmul_bf16", 700, "u1", "j1", 1),
                               ProbeRun("matmul_bf16", 700, "u2", "j1", 2),
                               ProbeRun("matmul_bf16", 600, "u3", "j1", 3),
                               ProbeRun("launch", 10, "u1", "j1", 4),
                               ProbeRun("launch", 10, "u2", "j1", 5),
                               ProbeRun("launch", 17, "u3", "j1", 6)};
  const std::vector<Ranked> ranked = RankFleet(ProbeResults("h", "", runs), FleetRule());
  // 100 TFLOP/s from the median against a floor of 1.25% (8.75).
  EXPECT_TRUE(Find(ranked, "matmul_bf16", "u3")->straggler);
  // 7 us from the median against a floor of 20% (2 us): 3.5 times it.
  EXPECT_TRUE(Find(ranked, "launch", "u3")->straggler);
  EXPECT_FALSE(Find(ranked, "launch", "u1")->straggler);
}

// The peers' own histories widen the noise where they vary more than the
// probe's floor: a CPU's attention, say, at 10% between sessions.
TEST(FleetRank, PeersNoisierThanTheFloorByTheirHistoryAreTooNoisyToTell) {
  std::vector<v1::Run> runs;
  const double past[] = {100, 80, 120};
  for (int g = 0; g < 3; ++g) {
    for (int session = 0; session < 3; ++session) {
      runs.push_back(ProbeRun("attention", past[(session + g) % 3], "v" + std::to_string(g),
                              "j" + std::to_string(session), 10 * session + g));
    }
  }
  // The last session: two tie at 100, the third at 85 (15% worse).
  for (int g = 0; g < 3; ++g) {
    runs.push_back(
        ProbeRun("attention", g == 2 ? 85 : 100, "v" + std::to_string(g), "j9", 100 + g));
  }
  const std::vector<Ranked> ranked = RankFleet(ProbeResults("h", "", runs), FleetRule());
  const Ranked* v2 = Find(ranked, "attention", "v2");
  ASSERT_NE(v2, nullptr);
  EXPECT_FALSE(v2->straggler);  // 15 < 3 x 100 x 0.2 (their histories' CV)
  EXPECT_TRUE(v2->straggler_too_noisy);
  EXPECT_NEAR(v2->noise, 100 * 0.2, 1e-9);
}

// Issue 44: with two hosts a 0.742x figure was drawn grey "within the
// threshold"; the reason it has no verdict (fewer than 3 peers) is said.
TEST(FleetRank, FewerThanThreePeersSaySoInTheRowAndOnThePage) {
  // 500 against a median of 600: 0.83x, far beyond the threshold.
  std::vector<v1::Run> runs = {ProbeRun("matmul_bf16", 700, "w1", "j1", 1),
                               ProbeRun("matmul_bf16", 500, "w2", "j1", 2)};
  const std::vector<Ranked> ranked = RankFleet(ProbeResults("h", "", runs), FleetRule());
  ASSERT_EQ(ranked.size(), 2u);
  for (const Ranked& r : ranked) {
    EXPECT_FALSE(r.straggler);
    EXPECT_FALSE(r.straggler_too_noisy);
    EXPECT_EQ(r.no_verdict, "fewer than 3 peers: no straggler verdict");
  }
  const std::string page = RenderFleetPage(ranked, "2 of 2 hosts answered", FleetRule());
  EXPECT_NE(page.find("fewer than 3 peers: no straggler verdict"), std::string::npos);
  EXPECT_EQ(page.find("within the threshold"), std::string::npos);
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

// Only the daemon's own probe runs count, on a quiet host, a GPU's figure
// only from a GPU size on it: each such run names why it is left out.
TEST(FleetRank, UnmarkedContendedThrottledAndWrongSizeRunsAreNoProbeResult) {
  v1::Run submitted = ProbeRun("matmul_bf16", 900, "x1", "j1", 1);
  submitted.set_daemon_probe(false);  // a caller's spec with the suite's config
  v1::Run contended = ProbeRun("matmul_bf16", 300, "x1", "j2", 2);
  contended.mutable_result()->mutable_contention()->set_contended(true);
  contended.mutable_result()->mutable_contention()->add_jobs_beside("j7");
  v1::Run throttled = ProbeRun("matmul_bf16", 300, "x1", "j3", 3);
  throttled.mutable_result()->mutable_telemetry()->add_throttle_reasons("hw_slowdown");
  v1::Run cpu_size_on_gpu = ProbeRun("matmul_bf16", 2, "x1", "j4", 4);
  *cpu_size_on_gpu.mutable_config() = SuiteConfig("matmul_bf16", /*small=*/true);
  cpu_size_on_gpu.mutable_config()->set_device("cuda:0");
  v1::Run gpu_size_on_cpu = ProbeRun("matmul_bf16", 2, "x1", "j5", 5);
  gpu_size_on_cpu.mutable_config()->set_device("cpu");
  gpu_size_on_cpu.mutable_result()->set_resolved_device("cpu");
  EXPECT_EQ(NotAProbeResultBecause(submitted),
            "not made by the daemon's probe suite (gpubench probe)");
  EXPECT_EQ(NotAProbeResultBecause(contended), "contended (1 job beside)");
  EXPECT_EQ(NotAProbeResultBecause(throttled), "throttled (hw_slowdown)");
  EXPECT_EQ(NotAProbeResultBecause(cpu_size_on_gpu), "a CPU-size config on cuda:0");
  EXPECT_EQ(NotAProbeResultBecause(gpu_size_on_cpu), "a GPU-size config on cpu");
  EXPECT_TRUE(
      ProbeResults("h", "", {submitted, contended, throttled, cpu_size_on_gpu, gpu_size_on_cpu})
          .empty());
  // The CPU's own sizes on the CPU count, and the launch (one config for
  // both) on either.
  v1::Run cpu = ProbeRun("matmul_bf16", 2, "x2", "j6", 6);
  *cpu.mutable_config() = SuiteConfig("matmul_bf16", /*small=*/true);
  cpu.mutable_result()->set_resolved_device("cpu");
  v1::Run launch_on_cpu = ProbeRun("launch", 5, "x2", "j6", 7);
  *launch_on_cpu.mutable_config() = SuiteConfig("launch", /*small=*/true);
  launch_on_cpu.mutable_result()->set_resolved_device("cpu");
  EXPECT_EQ(NotAProbeResultBecause(cpu), "");
  EXPECT_EQ(NotAProbeResultBecause(launch_on_cpu), "");
  EXPECT_EQ(NotAProbeResultBecause(ProbeRun("launch", 5, "x3", "j6", 8)), "");
}

// Issue 44's "done when": a submit-role run with a probe's config, a
// contended probe run and a CPU-size run on a GPU, each newer than the
// GPUs' own probes and each of a figure that would flag, change nothing.
TEST(FleetRank, RunsThatAreNoProbeResultChangeNothingInTheRanking) {
  std::vector<v1::Run> runs = {ProbeRun("matmul_bf16", 700, "y1", "j1", 1),
                               ProbeRun("matmul_bf16", 702, "y2", "j1", 2),
                               ProbeRun("matmul_bf16", 698, "y3", "j1", 3)};
  const std::vector<Ranked> before = RankFleet(ProbeResults("h", "", runs), FleetRule());
  v1::Run submitted = ProbeRun("matmul_bf16", 300, "y1", "j8", 10);
  submitted.set_daemon_probe(false);
  v1::Run contended = ProbeRun("matmul_bf16", 300, "y2", "j9", 11);
  contended.mutable_result()->mutable_contention()->set_contended(true);
  contended.mutable_result()->mutable_contention()->set_other_cpu_cores(3);
  v1::Run cpu_size = ProbeRun("matmul_bf16", 1, "y3", "j10", 12);
  *cpu_size.mutable_config() = SuiteConfig("matmul_bf16", /*small=*/true);
  cpu_size.mutable_config()->set_device("cuda:0");
  for (const v1::Run& r : {submitted, contended, cpu_size}) runs.push_back(r);
  const std::vector<Ranked> after = RankFleet(ProbeResults("h", "", runs), FleetRule());
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].result.run_id, before[i].result.run_id);
    EXPECT_EQ(after[i].result.value, before[i].result.value);
    EXPECT_EQ(after[i].result.history, before[i].result.history);  // none filled
    EXPECT_EQ(after[i].ratio, before[i].ratio);
    EXPECT_FALSE(after[i].straggler);
  }
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
