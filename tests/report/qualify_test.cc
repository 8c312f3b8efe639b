// Node qualification over seeded probe sessions: the envelope fleet writes
// from a history, a GPU capped at 420 W failing it with its power limit
// named, what has no envelope or no figure, the envelope file's errors
// naming the field, the shipped envelope, and the textfile's gauges as
// Prometheus' promtool reads them.
#include "report/qualify.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/spec.h"
#include "tests/report/suite_config.h"

namespace gpubench::report {
namespace {

// A bf16 matmul probe run of one H100 on `device`, in job `job`.
v1::Run Matmul(double tflops, const std::string& uuid, const std::string& job, int second,
               double watts = 700, const std::string& device = "cuda:0") {
  v1::Run r;
  r.set_run_id("r" + uuid + job);
  r.set_job_id(job);
  r.set_state(v1::RUN_STATE_SUCCEEDED);
  r.set_daemon_probe(true);
  *r.mutable_config() = SuiteConfig("matmul_bf16");
  r.mutable_config()->set_device(device);
  r.mutable_result()->set_resolved_device(device);
  r.mutable_result()->set_achieved_tflops(tflops);
  r.mutable_start_time()->set_seconds(1'700'000'000 + second);
  v1::Fingerprint* f = r.mutable_fingerprint();
  f->set_gpu_name("NVIDIA H100 80GB HBM3");
  f->set_gpu_uuid("GPU-" + uuid);
  f->set_gpu_serial("serial-" + uuid);
  f->set_driver_version("580.159.04");
  f->set_power_limit_w(watts);
  f->set_pcie_width(uuid == "02" ? 4 : 16);  // idles low: not a setup difference
  return r;
}

// Four H100s, three sessions each, about 690 TFLOP/s.
v1::Envelope FourH100s() {
  std::vector<v1::Run> runs;
  for (int g = 0; g < 4; ++g) {
    for (int s = 0; s < 3; ++s) {
      runs.push_back(Matmul(685 + 2 * g + s, "0" + std::to_string(g),
                            "j" + std::to_string(g) + std::to_string(s), 10 * s + g));
    }
  }
  std::vector<std::string> left_out;
  v1::Envelope e = EnvelopeOf(ProbeResults("h100-a", "", runs), FleetRule(), "seeded, 2026-11-28",
                              &left_out);
  EXPECT_TRUE(left_out.empty());
  return e;
}

TEST(Qualify, TheEnvelopeIsTheMedianOfEverySessionAndTheStragglerRulesBound) {
  const v1::Envelope e = FourH100s();
  ASSERT_EQ(e.probes_size(), 1);
  const v1::ProbeEnvelope& p = e.probes(0);
  EXPECT_EQ(p.sku(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(p.driver(), "580.159.04");
  EXPECT_EQ(p.probe(), "matmul_bf16");
  EXPECT_EQ(p.sessions(), 12);
  EXPECT_EQ(p.gpus(), 4);
  EXPECT_DOUBLE_EQ(p.median(), 689);  // 685..694: the median of twelve
  // The spread is at least the probe's noise floor; the bound is 5% or three
  // spreads below the median, whichever is further.
  EXPECT_GE(p.spread(), 689 * 0.0125 - 1e-9);
  EXPECT_NEAR(p.bound(), 689 * (1 - std::max(0.05, 3 * p.spread() / 689)), 1e-9);
  // Sessions that vary widely widen it: the new session's prediction
  // interval, not the median's.
  std::vector<v1::Run> noisy;
  for (int s = 0; s < 5; ++s) noisy.push_back(Matmul(s % 2 ? 500 : 700, "01", "j" + std::to_string(s), s));
  std::vector<std::string> left_out;
  const v1::Envelope wide = EnvelopeOf(ProbeResults("h", "", noisy), FleetRule(), "", &left_out);
  ASSERT_EQ(wide.probes_size(), 1);
  EXPECT_LT(wide.probes(0).bound(), 400);  // mean 620, sd 110, t(4) 2.78
  // Wider still, the bound would pass a GPU at half the speed (or none at
  // all): no entry, and the fleet is told which and why.
  for (int s = 1; s < 5; s += 2) noisy[s] = Matmul(300, "01", "j" + std::to_string(s), s);
  const v1::Envelope none = EnvelopeOf(ProbeResults("h", "", noisy), FleetRule(), "", &left_out);
  EXPECT_EQ(none.probes_size(), 0);
  ASSERT_EQ(left_out.size(), 1u);
  EXPECT_NE(left_out[0].find("matmul_bf16 on NVIDIA H100 80GB HBM3: its 5 sessions vary too "
                             "widely to bound (a bound of "),
            std::string::npos)
      << left_out[0];
  EXPECT_NE(left_out[0].find(" TFLOP/s for a median of 700)"), std::string::npos) << left_out[0];
  // Every envelope the fleet writes, the parser takes.
  EXPECT_TRUE(ParseEnvelope(EnvelopeJson(wide), "wide.json").ok());
  EXPECT_EQ(p.fingerprint().power_limit_w(), 700);
  EXPECT_FALSE(p.fingerprint().has_gpu_uuid());
  EXPECT_FALSE(p.fingerprint().has_pcie_width());
  EXPECT_EQ(p.source(), "seeded, 2026-11-28");
  // Fewer than three sessions: no entry, however many GPUs one session
  // measured.
  EXPECT_EQ(EnvelopeOf(ProbeResults("h", "", {Matmul(690, "09", "j", 0)}), FleetRule(), "",
                       &left_out)
                .probes_size(),
            0);
  std::vector<v1::Run> one_session;
  for (int gpu = 0; gpu < 8; ++gpu) {
    one_session.push_back(Matmul(690 + gpu, absl::StrCat("1", gpu), "j8", gpu, 700,
                                 absl::StrCat("cuda:", gpu)));
  }
  EXPECT_EQ(EnvelopeOf(ProbeResults("h", "", one_session), FleetRule(), "", &left_out)
                .probes_size(),
            0);
}

TEST(Qualify, AGpuCappedAt420WattsFailsNamingItsPowerLimit) {
  const v1::Envelope e = FourH100s();
  std::vector<v1::Run> session = {Matmul(415, "05", "jnew", 100, 420, "cuda:0"),
                                  Matmul(688, "06", "jnew", 101, 700, "cuda:1")};
  const std::vector<Check> checks = QualifyHost("h100-b", "", session, e, 1);
  ASSERT_EQ(checks.size(), 2u);
  const Check& capped = checks[0].device.find("GPU-05") != std::string::npos ? checks[0] : checks[1];
  const Check& fine = &capped == &checks[0] ? checks[1] : checks[0];
  EXPECT_EQ(capped.outcome, Outcome::kFail);
  EXPECT_NE(capped.why.find("415 TFLOP/s, below "), std::string::npos) << capped.why;
  EXPECT_NE(capped.why.find("(median 689 over 12 sessions of 4 devices)"), std::string::npos)
      << capped.why;
  EXPECT_NE(capped.why.find("power limit 700 W \u2192 420 W"), std::string::npos) << capped.why;
  EXPECT_EQ(capped.why.find("serial"), std::string::npos) << capped.why;
  EXPECT_EQ(fine.outcome, Outcome::kPass) << fine.why;
  EXPECT_EQ(Overall(checks), Outcome::kFail);
  const std::string line = StatusLine(checks, 1);
  EXPECT_EQ(line.rfind("NOTOK: h100-b cuda:0 GPU-05 matmul_bf16 415 TFLOP/s", 0), 0u) << line;
  EXPECT_EQ(StatusLine({fine}, 1), "OK: 1 host, 1 device, 1 check passes (level 1)");
  // A slow GPU with nothing changed in its setup: the device itself.
  const std::vector<Check> slow = QualifyHost("h", "", {Matmul(500, "07", "j", 1)}, e, 1);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_NE(slow[0].why.find("no setting differs from the envelope's"), std::string::npos);
}

// Level 2's held product of one H100: `tflops` over the run, its steps
// taking `first_ms` in the first quarter and `last_ms` in the last, at the
// given throttle reasons.
v1::Run Held(double tflops, double first_ms, double last_ms,
             const std::vector<std::string>& reasons = {},
             const std::string& probe = kSustainedProbe) {
  v1::Run r = Matmul(tflops, "07", "jheld", 200);
  r.set_run_id("rheld");
  *r.mutable_config() = SuiteConfig(probe);
  r.mutable_config()->set_device("cuda:0");
  r.mutable_result()->set_measured_ms(60'000);
  for (int i = 0; i < 400; ++i) {
    r.mutable_samples()->add_device_ms(i < 100 ? first_ms : i >= 300 ? last_ms : first_ms);
  }
  v1::TelemetrySummary* t = r.mutable_result()->mutable_telemetry();
  t->set_available(true);
  t->mutable_sm_clock_mhz()->set_mean(reasons.empty() ? 1980 : 1455);
  t->mutable_sm_clock_mhz()->set_max(1980);
  t->mutable_power_w()->set_mean(reasons.empty() ? 690 : 520);
  t->mutable_temperature_c()->set_max(reasons.empty() ? 71 : 92);
  for (const std::string& why : reasons) t->add_throttle_reasons(why);
  // Healthy but where throttled: then two ECC errors and XID 48 meanwhile.
  t->mutable_health_before()->set_ecc_uncorrected(3);
  t->mutable_health_after()->set_ecc_uncorrected(reasons.empty() ? 3 : 5);
  t->mutable_health_after()->set_remap_pending(false);
  t->mutable_health_after()->set_remap_failed(false);
  t->set_xids_watched(true);
  if (!reasons.empty()) t->add_xids(48);
  return r;
}

// The checks by probe name.
std::map<std::string, Check> ByProbe(const std::vector<Check>& checks) {
  std::map<std::string, Check> out;
  for (const Check& c : checks) out[c.probe] = c;
  EXPECT_EQ(out.size(), checks.size());
  return out;
}

// Level 2: the held product is judged against its own envelope entry, or
// the short product's; its fall over the run and thermal throttling fail,
// naming the figure and the clocks and power it ran at; an uncorrected ECC
// error or an XID during it fails the GPU's health.
TEST(Qualify, LevelTwoFailsAHeldProductThatSlowsThrottlesOrRaisesErrors) {
  const v1::Envelope e = FourH100s();  // matmul_bf16 only
  std::vector<Check> checks = QualifyHost("h100-c", "", {Held(688, 1.60, 1.61)}, e, 2);
  std::map<std::string, Check> by = ByProbe(checks);
  ASSERT_EQ(by.size(), 3u);
  EXPECT_EQ(by["sustained_bf16"].outcome, Outcome::kPass) << by["sustained_bf16"].why;
  EXPECT_EQ(by["sustained_bf16"].why, "against matmul_bf16's envelope");
  EXPECT_EQ(by["sustained_bf16_decay"].outcome, Outcome::kPass);
  EXPECT_NEAR(by["sustained_bf16_decay"].value, 100 * 1.60 / 1.61, 1e-4);  // float samples
  EXPECT_EQ(by["sustained_bf16_decay"].envelope.bound(), 95);
  EXPECT_EQ(by["sustained_bf16_health"].outcome, Outcome::kPass) << by["sustained_bf16_health"].why;
  EXPECT_EQ(by["sustained_bf16_health"].why, "");
  EXPECT_EQ(Overall(checks), Outcome::kPass);

  // Starts at the envelope, slows by a sixth as it heats: the decay fails,
  // and the throttled run fails its figure too, naming what it ran at; two
  // ECC errors and an XID meanwhile fail its health.
  checks = QualifyHost("h100-c", "", {Held(600, 1.60, 1.92, {"sw_thermal"})}, e, 2);
  by = ByProbe(checks);
  ASSERT_EQ(by.size(), 3u);
  const Check& held = by["sustained_bf16"];
  const Check& decay = by["sustained_bf16_decay"];
  EXPECT_EQ(by["sustained_bf16_health"].outcome, Outcome::kFail);
  EXPECT_EQ(by["sustained_bf16_health"].why, "2 uncorrected ECC errors, XID 48 during the held run");
  EXPECT_EQ(by["sustained_bf16_health"].value, 2);  // findings: the ECC errors, the XID
  // A row remapped meanwhile, its remap waiting for a reset.
  v1::Run remapped = Held(688, 1.60, 1.61);
  v1::TelemetrySummary* t = remapped.mutable_result()->mutable_telemetry();
  t->mutable_health_before()->set_remapped_rows_uncorrectable(0);
  t->mutable_health_after()->set_remapped_rows_uncorrectable(1);
  t->mutable_health_after()->set_remap_pending(true);
  const std::map<std::string, Check> remap = ByProbe(QualifyHost("h100-c", "", {remapped}, e, 2));
  EXPECT_EQ(remap.at("sustained_bf16_health").outcome, Outcome::kFail);
  EXPECT_EQ(remap.at("sustained_bf16_health").why,
            "1 row remapped during the held run; a row remap pending (reset the GPU) after it");
  EXPECT_EQ(held.outcome, Outcome::kFail);
  EXPECT_NE(held.why.find("throttled (sw_thermal): SM clock 1455 MHz mean (max 1980), power 520 W "
                          "mean, 92 C max; throttle reasons: sw_thermal"),
            std::string::npos)
      << held.why;
  EXPECT_EQ(decay.outcome, Outcome::kFail);
  EXPECT_NE(decay.why.find("throughput fell 16.7% from the first quarter of 60 s to the last "
                           "(median step 1.6 -> 1.92 ms): SM clock 1455 MHz"),
            std::string::npos)
      << decay.why;
  EXPECT_EQ(Overall(checks), Outcome::kFail);
  EXPECT_TRUE(StatusLine(checks, 2).find("NOTOK: h100-c cuda:0 GPU-07") == 0) << StatusLine(checks, 2);

  // An entry of its own wins; too few steps is unknown, never a pass.
  v1::Envelope own = e;
  v1::ProbeEnvelope* entry = own.add_probes();
  *entry = e.probes(0);
  entry->set_probe(kSustainedProbe);
  entry->set_bound(650);
  v1::Run short_run = Held(640, 1.6, 1.6);
  short_run.mutable_samples()->mutable_device_ms()->Truncate(12);
  short_run.mutable_result()->mutable_telemetry()->clear_health_after();
  short_run.mutable_result()->mutable_telemetry()->set_xids_watched(false);
  by = ByProbe(QualifyHost("h100-c", "", {short_run}, own, 2));
  ASSERT_EQ(by.size(), 3u);
  EXPECT_EQ(by["sustained_bf16"].outcome, Outcome::kFail);
  EXPECT_NE(by["sustained_bf16"].why.find("640 TFLOP/s, below 650"), std::string::npos)
      << by["sustained_bf16"].why;
  EXPECT_EQ(by["sustained_bf16"].why.find("matmul_bf16's envelope"), std::string::npos);
  EXPECT_EQ(by["sustained_bf16_decay"].outcome, Outcome::kUnknown);
  EXPECT_EQ(by["sustained_bf16_decay"].why, "too few steps to tell a trend (12, 16 needed)");
  // NVML reported nothing after: unknown, not a pass.
  EXPECT_EQ(by["sustained_bf16_health"].outcome, Outcome::kUnknown);
  EXPECT_EQ(by["sustained_bf16_health"].why, "NVML reported no ECC count, remapped rows or XIDs for this GPU");

  // Stored sessions (--latest): only each device's newest held run counts,
  // an older failing one no longer; a device with none is unknown at level
  // 2; level 1 judges no held run.
  v1::Run old_run = Held(600, 1.60, 1.92, {"sw_thermal"});
  old_run.set_run_id("rold");
  old_run.mutable_start_time()->set_seconds(1'700'000'000);
  const std::vector<v1::Run> stored = {old_run, Held(688, 1.60, 1.61),
                                       Matmul(689, "08", "jm", 300, 700, "cuda:1")};
  checks = QualifyHost("h100-c", "", stored, e, 2);
  int held_checks = 0;
  for (const Check& c : checks) {
    EXPECT_NE(c.run_id, "rold") << c.probe;
    if (c.device.rfind("cuda:0", 0) == 0) ++held_checks;
    if (c.device.rfind("cuda:1", 0) == 0 && c.probe == "sustained_bf16") {
      EXPECT_EQ(c.outcome, Outcome::kUnknown);
      EXPECT_EQ(c.why, "no sustained_bf16 run of this device in the session: level 2 not measured");
    }
  }
  EXPECT_EQ(held_checks, 3);
  EXPECT_EQ(Overall(checks), Outcome::kUnknown);
  for (const Check& c : QualifyHost("h100-c", "", stored, e, 1)) {
    EXPECT_EQ(c.probe, "matmul_bf16");
  }
}

// Level 3: every GPU loaded at once, each judged by its last quarter's
// figure, so that one that starts within its envelope and falls out of it
// fails even where its fall is under the decay's 5%; lower levels leave
// the loaded runs out, and a device without one is unknown at level 3.
TEST(Qualify, LevelThreeFailsAGpuThatFallsOutOfItsEnvelopeUnderLoad) {
  const v1::Envelope e = FourH100s();  // matmul_bf16: median 689, bound 654.55
  std::vector<v1::Run> session;
  for (int g = 0; g < 2; ++g) {
    // 2 x 8192^3 FLOPs a step: 1.60 ms is 687 TFLOP/s, 1.64 670, 1.70 647.
    v1::Run r = Held(665, g == 0 ? 1.60 : 1.64, g == 0 ? 1.60 : 1.70, {}, kLoadedProbe);
    r.set_run_id("rloaded" + std::to_string(g));
    r.mutable_config()->set_device("cuda:" + std::to_string(g));
    r.mutable_result()->set_resolved_device("cuda:" + std::to_string(g));
    r.mutable_fingerprint()->set_gpu_uuid("GPU-2" + std::to_string(g));
    r.mutable_result()->set_flops_per_iteration(2.0 * 8192 * 8192 * 8192);
    session.push_back(r);
  }
  session.push_back(Matmul(688, "22", "jm", 300, 700, "cuda:2"));
  const std::vector<Check> checks = QualifyHost("h100-d", "", session, e, 3);
  std::map<std::string, Check> by;
  for (const Check& c : checks) by[c.device.substr(0, 6) + " " + c.probe] = c;
  EXPECT_EQ(by["cuda:0 loaded_bf16"].outcome, Outcome::kPass) << by["cuda:0 loaded_bf16"].why;
  EXPECT_NEAR(by["cuda:0 loaded_bf16"].value, 687.2, 0.1);
  const Check& fell = by["cuda:1 loaded_bf16"];
  EXPECT_EQ(fell.outcome, Outcome::kFail);
  EXPECT_EQ(fell.why.rfind("its last quarter: 647 TFLOP/s, below 655 (median 689", 0), 0u)
      << fell.why;
  EXPECT_EQ(by["cuda:1 loaded_bf16_decay"].outcome, Outcome::kPass);  // 96.5%: within 5%
  EXPECT_EQ(by["cuda:1 loaded_bf16_health"].outcome, Outcome::kPass);
  EXPECT_EQ(by["cuda:2 loaded_bf16"].outcome, Outcome::kUnknown);
  EXPECT_EQ(by["cuda:2 loaded_bf16"].why,
            "no loaded_bf16 run of this device in the session: level 3 not measured");
  EXPECT_EQ(by["cuda:2 sustained_bf16"].why,
            "no sustained_bf16 run of this device in the session: level 2 not measured");
  EXPECT_EQ(by["2 devi loaded_bf16_together"].outcome, Outcome::kPass);
  EXPECT_EQ(by["2 devi loaded_bf16_together"].value, 100);
  EXPECT_EQ(Overall(checks), Outcome::kFail);
  // The check of the devices together is no device of its own.
  std::vector<Check> passed;
  for (const Check& c : checks) {
    if (c.outcome == Outcome::kPass) passed.push_back(c);
  }
  EXPECT_EQ(StatusLine(passed, 3).rfind("OK: 1 host, 3 devices, ", 0), 0u) << StatusLine(passed, 3);
  for (const Check& c : QualifyHost("h100-d", "", session, e, 2)) {
    EXPECT_EQ(c.probe.find("loaded"), std::string::npos) << c.probe;
  }
  // Loaded one after the other for half their time: the host was never
  // loaded at once, which is unknown, not a pass.
  session[1].mutable_end_time()->set_seconds(session[0].end_time().seconds() + 30);
  for (const Check& c : QualifyHost("h100-d", "", session, e, 3)) {
    if (c.probe != "loaded_bf16_together") continue;
    EXPECT_EQ(c.outcome, Outcome::kUnknown);
    EXPECT_EQ(c.value, 50);
    EXPECT_NE(c.why.find("loaded together for 30 s of the shortest load's 60 s"),
              std::string::npos)
        << c.why;
  }
}

// Level 2's copy from one H100 to another by the copy engine, at gbps.
v1::Run PeerCopy(double gbps, int from, int to, const std::string& job, int second) {
  v1::Run r = Matmul(0, "0" + std::to_string(from), job, second, 700,
                     "cuda:" + std::to_string(from));
  r.set_run_id(absl::StrCat("r", from, to, job));
  *r.mutable_config() = SuiteConfig(kPeerCopyProbe);
  r.mutable_config()->set_device("cuda:" + std::to_string(from));
  r.mutable_config()->mutable_params()->set_peer_device(to);
  r.mutable_result()->set_bandwidth_gb_per_s(gbps);
  return r;
}

// The pair matrix of a host of four: every ordered pair is a check of its
// own, named by both GPUs, so that one slow link is named among twelve
// (and the envelope of the pairs counts them as pairs).
TEST(Qualify, LevelTwoNamesTheSlowPairOfTheMatrix) {
  std::vector<v1::Run> history, session;
  for (int s = 0; s < 3; ++s) {
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        if (i == j) continue;
        history.push_back(PeerCopy(392 + s + 0.1 * j, i, j, absl::StrCat("h", s), 10 * s));
        if (s == 0) session.push_back(PeerCopy(i == 2 && j == 3 ? 180 : 393, i, j, "new", 99));
      }
    }
  }
  std::vector<std::string> left_out;
  const v1::Envelope e =
      EnvelopeOf(ProbeResults("h100-a", "", history), FleetRule(), "seeded", &left_out);
  ASSERT_EQ(e.probes_size(), 1);
  EXPECT_EQ(e.probes(0).probe(), kPeerCopyProbe);
  EXPECT_EQ(e.probes(0).gpus(), 12);  // pairs
  // Judged at level 2 with the suite's other probes left out of the seed
  // but for the matmul that names the devices: what is missing is unknown.
  for (int g = 0; g < 4; ++g) {
    session.push_back(Matmul(688, "0" + std::to_string(g), "new", 98, 700,
                             "cuda:" + std::to_string(g)));
  }
  v1::Run no_p2p = PeerCopy(0, 0, 1, "new", 99);
  *no_p2p.mutable_config() = SuiteConfig(kPeerKernelProbe);
  no_p2p.mutable_config()->set_device("cuda:0");
  no_p2p.mutable_config()->mutable_params()->set_peer_device(1);
  no_p2p.set_state(v1::RUN_STATE_FAILED);
  no_p2p.set_error("params.copy_kernel: cuda:0 has no P2P access to cuda:1");
  session.push_back(no_p2p);
  const std::vector<Check> checks = QualifyHost("h100-b", "", session, e, 2);
  std::map<std::string, Check> by;  // "device probe"
  std::vector<std::string> failed;
  for (const Check& c : checks) {
    by[c.device + " " + c.probe] = c;
    if (c.outcome == Outcome::kFail) failed.push_back(c.device + " " + c.probe);
  }
  std::sort(failed.begin(), failed.end());
  EXPECT_EQ(failed, (std::vector<std::string>{"cuda:0 GPU-00 -> cuda:1 peer_copy_kernel",
                                              "cuda:2 GPU-02 -> cuda:3 peer_copy"}));
  const Check& slow = by["cuda:2 GPU-02 -> cuda:3 peer_copy"];
  EXPECT_NE(slow.why.find("180 GB/s, below 370 (median 393 over 36 sessions of 12 pairs): "
                          "no setting of the first GPU differs from the envelope's: the link"),
            std::string::npos)
      << slow.why;
  EXPECT_NE(by["cuda:0 GPU-00 -> cuda:1 peer_copy_kernel"].why.find("no P2P access"),
            std::string::npos);
  EXPECT_EQ(by["cuda:1 GPU-01 -> cuda:3 peer_copy_kernel"].why,
            "no peer_copy_kernel run of this pair in the session: level 2 not measured");
  EXPECT_EQ(by["cuda:1 GPU-01 -> cuda:3 allreduce_pair"].outcome, Outcome::kUnknown);
  EXPECT_EQ(by.count("cuda:3 GPU-03 -> cuda:1 allreduce_pair"), 0u);  // lower GPU first
  // Level 1 judges no pair of the matrix.
  for (const Check& c : QualifyHost("h100-b", "", session, e, 1)) {
    EXPECT_EQ(c.device.find(kPairTo), std::string::npos) << c.device;
  }
  std::vector<v1::Run> copies(session.begin(), session.begin() + 12);
  for (v1::Run& r : copies) r.mutable_result()->set_bandwidth_gb_per_s(393);
  EXPECT_EQ(StatusLine(QualifyHost("h100-b", "", copies, e, 1), 1),
            "UNKNOWN: no check ran (level 1)");
  EXPECT_EQ(StatusLine(QualifyHost("h100-b", "", copies, e, 2), 2),
            "OK: 1 host, 4 devices, 12 pairs, 12 checks pass (level 2)");
}

TEST(Qualify, NoEnvelopeOrNoFigureIsUnknownAndAFailedRunFails) {
  const v1::Envelope e = FourH100s();
  v1::Run h200 = Matmul(690, "10", "j", 0);
  h200.mutable_fingerprint()->set_gpu_name("NVIDIA H200");
  std::vector<Check> checks = QualifyHost("h", "", {h200}, e, 1);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].outcome, Outcome::kUnknown);
  EXPECT_EQ(checks[0].why, "no envelope for NVIDIA H200, driver 580.159.04 matmul_bf16");
  EXPECT_EQ(StatusLine(checks, 1).rfind("UNKNOWN: h cuda:0 GPU-10 matmul_bf16 no envelope", 0),
            0u);

  v1::Run contended = Matmul(690, "11", "j", 0);
  contended.mutable_result()->mutable_contention()->set_contended(true);
  contended.mutable_result()->mutable_contention()->set_other_cpu_cores(1.5);
  v1::Run throttled = Matmul(600, "12", "j", 0, 700, "cuda:1");
  throttled.mutable_result()->mutable_telemetry()->add_throttle_reasons("hw_thermal");
  v1::Run failed = Matmul(0, "13", "j", 0, 700, "cuda:2");
  failed.set_state(v1::RUN_STATE_FAILED);
  failed.set_error("CUDA error: an illegal memory access");
  checks = QualifyHost("h", "", {contended, throttled, failed}, e, 1);
  ASSERT_EQ(checks.size(), 3u);
  for (const Check& c : checks) {
    if (c.device.find("GPU-11") != std::string::npos) {
      EXPECT_EQ(c.outcome, Outcome::kUnknown);
      EXPECT_NE(c.why.find("contended"), std::string::npos) << c.why;
    } else if (c.device.find("GPU-12") != std::string::npos) {
      EXPECT_EQ(c.outcome, Outcome::kFail);
      EXPECT_EQ(c.why, "throttled (hw_thermal)");
    } else {
      EXPECT_EQ(c.outcome, Outcome::kFail);
      EXPECT_NE(c.why.find("illegal memory access"), std::string::npos) << c.why;
    }
  }
  EXPECT_EQ(Overall({}), Outcome::kUnknown);
}

TEST(Qualify, AnEnvelopeFileIsCheckedNamingTheField) {
  const std::string good = EnvelopeJson(FourH100s());
  auto parsed = ParseEnvelope(good, "env.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->probes(0).median(), 689);
  struct Bad {
    std::string from, to, message;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"\"matmul_bf16\"", "\"matmul_bf17\"", "env.json: probes[0].probe: not a probe"},
           {"\"TFLOP/s\"", "\"GB/s\"", "env.json: probes[0].unit: must be \"TFLOP/s\""},
           {"\"bound\": ", "\"bound\": -", "env.json: probes[0].bound: must be a finite"},
           {"\"suite\": \"v1\"", "\"suite\": \"v0\"", "env.json: probes[0].suite"},
           {"\"sku\": \"NVIDIA H100 80GB HBM3\"", "\"sku\": \"\"", "env.json: probes[0].sku"},
       }) {
    std::string text = good;
    const size_t at = text.find(bad.from);
    ASSERT_NE(at, std::string::npos) << bad.from;
    text.replace(at, bad.from.size(), bad.to);
    auto r = ParseEnvelope(text, "env.json");
    ASSERT_FALSE(r.ok()) << bad.to;
    EXPECT_NE(std::string(r.status().message()).find(bad.message), std::string::npos)
        << r.status();
  }
  // Above the median for a throughput is no envelope; nor is a key twice.
  std::string above = good;
  above.replace(above.find("\"bound\": "), 9, "\"bound\": 9999");
  EXPECT_FALSE(ParseEnvelope(above, "e").ok());
  EXPECT_FALSE(ParseEnvelope("{\"probes\": [], \"probes\": []}", "e").ok());
  EXPECT_FALSE(ParseEnvelope("{\"probes\": [{\"nonsense\": 1}]}", "e").ok());
}

TEST(Qualify, TheShippedEnvelopeParsesAndCoversTheH200) {
  std::ifstream in(std::string(GPUBENCH_SOURCE_DIR) + "/deploy/envelopes/v1.json");
  std::stringstream text;
  text << in.rdbuf();
  auto e = ParseEnvelope(text.str(), "deploy/envelopes/v1.json");
  ASSERT_TRUE(e.ok()) << e.status();
  bool h200 = false;
  for (const v1::ProbeEnvelope& p : e->probes()) {
    EXPECT_FALSE(p.source().empty()) << p.probe();
    EXPECT_NE(p.source().find("2026-"), std::string::npos) << p.source();
    h200 |= p.sku() == "NVIDIA H200" && p.probe() == "matmul_bf16" && p.median() > 600;
  }
  EXPECT_TRUE(h200);
}

TEST(Qualify, TheTextfileGaugesPassPromtool) {
  const v1::Envelope e = FourH100s();
  std::vector<Check> checks =
      QualifyHost("h100 \"b\"", "", {Matmul(415, "05", "j", 0, 420), Matmul(690, "06", "j", 1, 700, "cuda:1")}, e, 1);
  const std::string text = QualifyMetrics(checks);
  EXPECT_NE(text.find("gpubench_qualify_check{host=\"h100 \\\"b\\\"\",device=\"cuda:0 GPU-05\","
                      "probe=\"matmul_bf16\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gpubench_qualify_value{host=\"h100 \\\"b\\\"\",device=\"cuda:1 GPU-06\","
                      "probe=\"matmul_bf16\"} 690\n"),
            std::string::npos)
      << text;
  const std::string path = testing::TempDir() + "/qualify.prom";
  std::ofstream(path) << text;
  EXPECT_EQ(std::system(("promtool check metrics < " + path).c_str()), 0) << text;
}

// qualify --pairs: three hosts, c's link rate-limited: every pair with c
// is slow, so c's fastest link is the straggler and fails, named; a and b
// pass on their link with each other.
HostPairResult Link(const std::string& a, const std::string& b, double gbps) {
  HostPairResult p;
  p.a = a;
  p.b = b;
  p.device = "cpu";
  p.value = gbps;
  p.run_id = a + b;
  return p;
}

TEST(QualifyHostPairsTest, TheHostBehindASlowLinkFailsNamingIt) {
  const std::vector<Check> checks = QualifyHostPairs(
      {"a", "b", "c"}, {Link("a", "b", 1.9), Link("a", "c", 0.024), Link("b", "c", 0.025)});
  ASSERT_EQ(checks.size(), 6u);  // three hosts, then three pairs
  EXPECT_EQ(checks[4].device, "cpu -> c");
  std::map<std::string, const Check*> host;
  for (const Check& c : checks) {
    if (c.device.find(" -> ") == std::string::npos) host[c.host] = &c;
  }
  EXPECT_EQ(host.at("a")->outcome, Outcome::kPass);
  EXPECT_EQ(host.at("b")->outcome, Outcome::kPass);
  ASSERT_EQ(host.at("c")->outcome, Outcome::kFail);
  EXPECT_NE(host.at("c")->why.find("its fastest link (with b) 0.025 GB/s"), std::string::npos)
      << host.at("c")->why;
  EXPECT_NE(host.at("c")->why.find("rate limit"), std::string::npos);
  EXPECT_EQ(Overall(checks), Outcome::kFail);
  EXPECT_EQ(StatusLine(checks, 0).rfind("NOTOK: c cpu host_pair its fastest link", 0), 0u)
      << StatusLine(checks, 0);
  EXPECT_EQ(StatusLine(checks, 0).find("more failed"), std::string::npos);
}

TEST(QualifyHostPairsTest, LinksWithinTheNoisePassAndTwoHostsAreUnknown) {
  const std::vector<Check> three = QualifyHostPairs(
      {"a", "b", "c"}, {Link("a", "b", 1.90), Link("a", "c", 1.85), Link("b", "c", 1.88)});
  EXPECT_EQ(Overall(three), Outcome::kPass);
  EXPECT_EQ(StatusLine(three, 0), "OK: 3 hosts, 3 devices, 3 pairs, 6 checks pass (pairs across hosts)");
  const std::vector<Check> two = QualifyHostPairs({"a", "b"}, {Link("a", "b", 1.9)});
  EXPECT_EQ(Overall(two), Outcome::kUnknown);
  EXPECT_NE(two[1].why.find("fewer than 3 peers"), std::string::npos) << two[1].why;
}

TEST(QualifyHostPairsTest, APairThatDidNotRunFailsAndSoDoesAHostWithNone) {
  HostPairResult broken = Link("a", "c", 0);
  broken.error = "c: this daemon has no --pair-address";
  broken.device.clear();  // the opener never said
  const std::vector<Check> checks =
      QualifyHostPairs({"a", "b", "c"}, {Link("a", "b", 1.9), broken});
  ASSERT_EQ(checks.size(), 5u);  // three hosts, then two pairs
  EXPECT_EQ(checks[4].device, "- -> c");
  EXPECT_EQ(checks[4].outcome, Outcome::kFail);
  EXPECT_NE(checks[4].why.find("did not run: c: this daemon has no --pair-address"),
            std::string::npos);
  EXPECT_EQ(checks[2].host, "c");
  EXPECT_EQ(checks[2].outcome, Outcome::kFail);
  EXPECT_NE(checks[2].why.find("no pair with this host ran"), std::string::npos);
  EXPECT_EQ(StatusLine(checks, 0).rfind("NOTOK: c - host_pair no pair with this host ran", 0),
            0u)
      << StatusLine(checks, 0);
}

}  // namespace
}  // namespace gpubench::report
