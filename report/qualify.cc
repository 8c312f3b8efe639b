#include "report/qualify.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/fingerprint.h"
#include "common/stats.h"
#include "common/strict_json.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "report/format.h"

namespace gpubench::report {
namespace {

using google::protobuf::util::TimeUtil;

// (SKU, driver) of a result: the GPU's name and driver, or the CPU's model.
std::pair<std::string, std::string> SkuAndDriver(const ProbeResult& r) {
  if (r.fingerprint.has_gpu_name()) {
    return {r.fingerprint.gpu_name(), r.fingerprint.driver_version()};
  }
  return {r.sku, ""};
}

// The setup of a session with the card's identity and the link's idle
// state cleared (FingerprintChanges leaves them out too).
v1::Fingerprint SetupOf(v1::Fingerprint f) {
  f.clear_gpu_uuid();
  f.clear_gpu_serial();
  f.clear_pcie_generation();
  f.clear_pcie_width();
  return f;
}

// What the device ran at through a held run: "SM clock 1980 MHz mean (max
// 1980), power 690 W mean; throttled: sw_power_cap", or "" without NVML.
std::string HeldAt(const v1::Run& run) {
  const v1::TelemetrySummary& t = run.result().telemetry();
  if (!t.available() || t.sm_clock_mhz().mean() <= 0) return "";
  std::string out = absl::StrFormat("SM clock %.0f MHz mean (max %.0f), power %.0f W mean, %.0f C max",
                                    t.sm_clock_mhz().mean(), t.sm_clock_mhz().max(),
                                    t.power_w().mean(), t.temperature_c().max());
  if (t.throttle_reasons_size() > 0) {
    absl::StrAppend(&out, "; throttle reasons: ", absl::StrJoin(t.throttle_reasons(), ", "));
  }
  return out;
}

// What the run's setup changed from the envelope's, and its throttle
// reasons; or that nothing did (for a pair: of its first GPU, whose
// fingerprint the run has).
std::string LikelyCause(const v1::ProbeEnvelope& e, const v1::Fingerprint& f,
                        const v1::Run* run, bool pair) {
  std::vector<std::string> causes = FingerprintChanges(e.fingerprint(), SetupOf(f));
  const ProbeInfo* info = run != nullptr ? ProbeOf(*run) : nullptr;
  if (info != nullptr && info->held) {
    if (std::string at = HeldAt(*run); !at.empty()) causes.push_back(at);
  } else if (run != nullptr && run->result().telemetry().throttle_reasons_size() > 0) {
    causes.push_back(absl::StrCat("throttled: ",
                                  absl::StrJoin(run->result().telemetry().throttle_reasons(), ", ")));
  }
  if (causes.empty() && pair) {
    return "no setting of the first GPU differs from the envelope's: the link between the two "
           "(its NVLink or PCIe route, P2P access) or the second GPU";
  }
  if (causes.empty()) {
    return "no setting differs from the envelope's: the device itself (clocks under load, "
           "memory, cooling)";
  }
  return absl::StrJoin(causes, ", ");
}

// The entry of the envelope for a result: its SKU, driver and probe, else
// its SKU and probe on another driver; nullptr without either. A held
// product without an entry of its own must hold the short one's.
const v1::ProbeEnvelope* EntryFor(const v1::Envelope& envelope, const ProbeResult& r,
                                  const std::string& probe) {
  const auto [sku, driver] = SkuAndDriver(r);
  const v1::ProbeEnvelope* other_driver = nullptr;
  for (const v1::ProbeEnvelope& e : envelope.probes()) {
    if (e.sku() != sku || e.probe() != probe || e.suite() != kProbeSuite) continue;
    if (e.driver() == driver) return &e;
    if (other_driver == nullptr) other_driver = &e;
  }
  const ProbeInfo* info = ProbeNamed(probe);
  if (other_driver == nullptr && info != nullptr && info->held) {
    return EntryFor(envelope, r, "matmul_bf16");
  }
  return other_driver;
}

Check Judge(const ProbeResult& r, const v1::Envelope& envelope,
            const std::vector<v1::Run>& session) {
  Check c;
  c.host = r.host;
  c.device = r.gpu;
  c.probe = r.probe;
  c.sku = r.sku;
  c.value = r.value;
  c.run_id = r.run_id;
  const ProbeInfo* info = ProbeNamed(r.probe);
  c.unit = info ? info->unit : "";
  const v1::ProbeEnvelope* e = EntryFor(envelope, r, r.probe);
  if (e == nullptr) {
    c.why = absl::StrCat("no envelope for ", r.sku, " ", r.probe);
    return c;
  }
  c.has_envelope = true;
  c.envelope = *e;
  const bool within = e->higher_is_better() ? r.value >= e->bound() : r.value <= e->bound();
  if (within) {
    c.outcome = Outcome::kPass;
  } else {
    c.outcome = Outcome::kFail;
    const v1::Run* run = nullptr;
    for (const v1::Run& s : session) {
      if (s.run_id() == r.run_id) run = &s;
    }
    const bool pair = r.gpu.find(kPairTo) != std::string::npos;
    c.why = absl::StrCat(ProbeFigureText(r.value), " ", e->unit(), ", ",
                         e->higher_is_better() ? "below " : "above ",
                         ProbeFigureText(e->bound()), " (median ", ProbeFigureText(e->median()),
                         " over ", e->sessions(),
                         " sessions of ", e->gpus(), pair ? " pair" : " device",
                         e->gpus() == 1 ? "" : "s", "): ",
                         LikelyCause(*e, r.fingerprint, run, pair));
  }
  if (e->driver() != SkuAndDriver(r).second) {
    absl::StrAppend(&c.why, c.why.empty() ? "" : "; ", "envelope from driver ",
                    e->driver().empty() ? "-" : e->driver());
  }
  if (e->probe() != r.probe) {
    absl::StrAppend(&c.why, c.why.empty() ? "" : "; ", "against ", e->probe(), "'s envelope");
  }
  return c;
}

bool IsHeld(const v1::Run& run) {
  const ProbeInfo* info = ProbeOf(run);
  return info != nullptr && info->held;
}

// A check of a run of the session on the device it ran on.
Check CheckOf(const std::string& host, const v1::Run& run, const std::string& probe,
              const std::string& unit) {
  Check c;
  c.host = host;
  c.device = GpuOf(run);
  c.probe = probe;
  c.unit = unit;
  c.run_id = run.run_id();
  c.sku = run.fingerprint().gpu_name();
  return c;
}

// A held run's steps (device times where it has them), in order.
const google::protobuf::RepeatedField<float>& StepsOf(const v1::Run& run) {
  const auto& kept = run.samples();
  return kept.device_ms_size() > 0 ? kept.device_ms() : kept.host_ms();
}

// The held run's figure over its last quarter: its FLOPs a step times the
// quarter's steps over their summed time (as achieved_tflops counts the
// whole run, stalls included); 0 with too few steps (16) to tell.
double LastQuarterFigure(const v1::Run& run) {
  const auto& steps = StepsOf(run);
  const int quarter = steps.size() / 4;
  if (quarter < 4 || run.result().flops_per_iteration() <= 0) return 0;
  double ms = 0;
  for (auto it = steps.end() - quarter; it != steps.end(); ++it) ms += *it;
  return ms > 0 ? run.result().flops_per_iteration() * quarter / (ms * 1e-3) / 1e12 : 0;
}

// The held run's throughput over time: its last quarter's median step
// against its first quarter's, in percent (100: no change). A device that
// starts at its envelope and slows as it heats fails it.
Check DecayCheck(const std::string& host, const v1::Run& run) {
  Check c = CheckOf(host, run, absl::StrCat(ProbeOf(run)->name, "_decay"), "%");
  const auto& steps = StepsOf(run);
  const int quarter = steps.size() / 4;
  if (quarter < 4) {
    c.why = absl::StrCat("too few steps to tell a trend (", steps.size(), ", 16 needed)");
    return c;
  }
  const std::vector<double> first(steps.begin(), steps.begin() + quarter);
  const std::vector<double> last(steps.end() - quarter, steps.end());
  const double before = stats::Median(first), after = stats::Median(last);
  if (!(before > 0) || !(after > 0)) {
    c.why = "no step times";
    return c;
  }
  c.value = 100 * before / after;
  c.has_envelope = true;
  c.envelope.set_probe(c.probe);
  c.envelope.set_unit(c.unit);
  c.envelope.set_higher_is_better(true);
  c.envelope.set_median(100);
  c.envelope.set_bound(100 * (1 - FleetRule().threshold));
  c.envelope.set_source("the run's own first quarter");
  c.outcome = c.value >= c.envelope.bound() ? Outcome::kPass : Outcome::kFail;
  if (c.outcome == Outcome::kFail) {
    c.why = absl::StrFormat("throughput fell %.1f%% from the first quarter of %.0f s to the last "
                            "(median step %.3g -> %.3g ms)",
                            100 - c.value, run.result().measured_ms() / 1e3, before, after);
    if (const std::string at = HeldAt(run); !at.empty()) absl::StrAppend(&c.why, ": ", at);
  }
  return c;
}

absl::Status Invalid(const std::string& path, int i, const std::string& field,
                     const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": probes[", i, "].", field, ": ", what));
}

absl::Status CheckEntry(const std::string& path, int i, const v1::ProbeEnvelope& e) {
  if (e.sku().empty()) return Invalid(path, i, "sku", "must name the GPU or CPU");
  if (e.suite() != kProbeSuite) {
    return Invalid(path, i, "suite", absl::StrCat("must be \"", kProbeSuite, "\""));
  }
  const ProbeInfo* info = ProbeNamed(e.probe());
  if (info == nullptr) return Invalid(path, i, "probe", "not a probe of the suite");
  if (e.unit() != info->unit) {
    return Invalid(path, i, "unit", absl::StrCat("must be \"", info->unit, "\""));
  }
  if (e.higher_is_better() != info->higher_is_better) {
    return Invalid(path, i, "higher_is_better", info->higher_is_better ? "must be true" : "must be false");
  }
  for (const auto& [name, v] : {std::pair<const char*, double>{"median", e.median()},
                                {"spread", e.spread()}, {"bound", e.bound()}}) {
    if (!std::isfinite(v) || v <= 0) return Invalid(path, i, name, "must be a finite number above 0");
  }
  if (e.higher_is_better() ? e.bound() > e.median() : e.bound() < e.median()) {
    return Invalid(path, i, "bound",
                   e.higher_is_better() ? "must not be above the median"
                                        : "must not be below the median");
  }
  return absl::OkStatus();
}

// The GPU's health across the held run: an uncorrected ECC error, a row
// remap pending or failed, or an XID fails it; what NVML does not report
// is said, and all of it unknown is unknown.
Check HealthCheck(const std::string& host, const v1::Run& run) {
  Check c = CheckOf(host, run, absl::StrCat(ProbeOf(run)->name, "_health"),
                    "findings");
  const v1::TelemetrySummary& t = run.result().telemetry();
  const v1::GpuHealth& before = t.health_before();
  const v1::GpuHealth& after = t.health_after();
  const bool ecc = before.has_ecc_uncorrected() && after.has_ecc_uncorrected();
  const bool rows = after.has_remap_pending();
  if (!ecc && !rows && !t.xids_watched()) {
    c.why = "NVML reported no ECC count, remapped rows or XIDs for this GPU";
    return c;
  }
  // Counts that rose during the run, and states after it (a remap pending
  // since before the run fails too: the GPU is not fit either way).
  std::vector<std::string> during, after_it, unread;
  if (ecc && after.ecc_uncorrected() > before.ecc_uncorrected()) {
    const uint64_t n = after.ecc_uncorrected() - before.ecc_uncorrected();
    during.push_back(absl::StrCat(n, " uncorrected ECC error", n == 1 ? "" : "s"));
  }
  const uint32_t rows_before =
      before.has_remapped_rows_uncorrectable() ? before.remapped_rows_uncorrectable() : 0;
  if (rows && after.remapped_rows_uncorrectable() > rows_before) {
    const uint32_t n = after.remapped_rows_uncorrectable() - rows_before;
    during.push_back(absl::StrCat(n, n == 1 ? " row" : " rows", " remapped"));
  }
  if (t.xids_size() > 0) during.push_back(absl::StrCat("XID ", absl::StrJoin(t.xids(), ", ")));
  if (rows && after.remap_pending()) after_it.push_back("a row remap pending (reset the GPU)");
  if (rows && after.remap_failed()) after_it.push_back("a row remap failed (service the GPU)");
  c.value = during.size() + after_it.size();
  if (!ecc) unread.push_back("ECC count");
  if (!rows) unread.push_back("remapped rows");
  if (!t.xids_watched()) unread.push_back("XIDs");
  c.outcome = c.value == 0 ? Outcome::kPass : Outcome::kFail;
  if (!during.empty()) c.why = absl::StrCat(absl::StrJoin(during, ", "), " during the held run");
  if (!after_it.empty()) {
    absl::StrAppend(&c.why, c.why.empty() ? "" : "; ", absl::StrJoin(after_it, ", "),
                    " after it");
  }
  if (!unread.empty()) {
    absl::StrAppend(&c.why, c.why.empty() ? "" : "; ", "not reported by NVML: ",
                    absl::StrJoin(unread, ", "));
  }
  return c;
}

}  // namespace

v1::Envelope EnvelopeOf(const std::vector<ProbeResult>& results, const FleetRule& rule,
                        const std::string& source, std::vector<std::string>* left_out) {
  struct Group {
    std::vector<double> values;
    std::set<std::string> devices;
    // Distinct sessions (a host's probe job): one session of a host of 12
    // pairs is 12 figures, not 12 sessions.
    std::set<std::string> sessions;
    std::map<std::string, std::pair<int, v1::Fingerprint>> setups;  // serialized -> count
  };
  std::map<std::tuple<std::string, std::string, std::string>, Group> groups;
  for (const ProbeResult& r : results) {
    const auto [sku, driver] = SkuAndDriver(r);
    Group& g = groups[{sku, driver, r.probe}];
    g.devices.insert(r.host + " " + r.gpu);
    for (const SeriesPoint& s : r.sessions) {
      g.values.push_back(s.value);
      g.sessions.insert(absl::StrCat(r.host, " ", s.session.empty() ? s.run_id : s.session));
      const v1::Fingerprint setup = SetupOf(s.fingerprint);
      auto& [count, fp] = g.setups[setup.SerializeAsString()];
      ++count;
      fp = setup;
    }
  }
  v1::Envelope out;
  for (const ProbeInfo& info : ProbeSuite()) {
    for (const auto& [key, g] : groups) {
      const auto& [sku, driver, probe] = key;
      // No entry for a held product: its length varies with --sustain.
      if (probe != info.name || info.held ||
          static_cast<int>(g.sessions.size()) < rule.min_history) {
        continue;
      }
      const double median = stats::Median(g.values);
      std::vector<double> deviations;
      for (double v : g.values) deviations.push_back(std::fabs(v - median));
      const double spread = std::max(1.4826 * stats::Median(deviations), median * info.noise_cv);
      // The new session's prediction interval from these (the nightly rule's
      // test): a host whose sessions vary widely gets a wide envelope.
      const double n = g.values.size();
      const double predicted =
          stats::TCritical95(n - 1) * stats::Stddev(g.values) * std::sqrt(1 + 1 / n);
      const double margin = std::max({rule.threshold, rule.max_robust_z * spread / median,
                                      predicted / median});
      const double bound = info.higher_is_better ? median * (1 - margin) : median * (1 + margin);
      if (margin >= (info.higher_is_better ? 0.5 : 1.0)) {
        left_out->push_back(absl::StrCat(
            probe, " on ", sku, ": its ", g.values.size(),
            " sessions vary too widely to bound (a bound of ", ProbeFigureText(bound), " ",
            info.unit, " for a median of ", ProbeFigureText(median), ")"));
        continue;
      }
      v1::ProbeEnvelope* e = out.add_probes();
      e->set_sku(sku);
      e->set_driver(driver);
      e->set_suite(kProbeSuite);
      e->set_probe(probe);
      e->set_unit(info.unit);
      e->set_higher_is_better(info.higher_is_better);
      e->set_median(median);
      e->set_spread(spread);
      e->set_bound(bound);
      e->set_sessions(g.values.size());
      e->set_gpus(g.devices.size());
      auto most = std::max_element(g.setups.begin(), g.setups.end(), [](const auto& a, const auto& b) {
        return a.second.first < b.second.first;
      });
      if (most != g.setups.end()) *e->mutable_fingerprint() = most->second.second;
      e->set_source(source);
    }
  }
  return out;
}

absl::StatusOr<v1::Envelope> ParseEnvelope(const std::string& text, const std::string& path) {
  if (auto s = CheckStrictJson(text, "envelope", 16); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  }
  v1::Envelope envelope;
  if (auto s = google::protobuf::util::JsonStringToMessage(text, &envelope); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", std::string(s.message())));
  }
  for (int i = 0; i < envelope.probes_size(); ++i) {
    if (auto s = CheckEntry(path, i, envelope.probes(i)); !s.ok()) return s;
  }
  return envelope;
}

std::string EnvelopeJson(const v1::Envelope& envelope) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(envelope, &out, options);
  return out;
}

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPass:
      return "pass";
    case Outcome::kFail:
      return "fail";
    case Outcome::kUnknown:
      break;
  }
  return "unknown";
}

std::map<std::pair<std::string, std::string>, const v1::Run*> NewestHeld(
    const std::vector<v1::Run>& runs) {
  std::map<std::pair<std::string, std::string>, const v1::Run*> held;
  for (const v1::Run& run : runs) {
    if (!IsHeld(run)) continue;
    const v1::Run*& newest = held[{GpuOf(run), ProbeOf(run)->name}];
    if (newest == nullptr || TimeUtil::TimestampToNanoseconds(newest->start_time()) <
                                 TimeUtil::TimestampToNanoseconds(run.start_time())) {
      newest = &run;
    }
  }
  return held;
}

namespace {

// A probe of a device with no result: a run that failed fails it, one
// left out as throttled fails it, one left out otherwise (contended) is
// unknown.
std::vector<Check> Unjudged(const std::string& host, const std::vector<v1::Run>& session,
                            const std::set<std::pair<std::string, std::string>>& judged) {
  std::map<std::pair<std::string, std::string>, Check> missing;
  for (const v1::Run& run : session) {
    const ProbeInfo* info = ProbeOf(run);
    if (info == nullptr || judged.count({GpuOf(run), info->name})) continue;
    auto [it, added] = missing.try_emplace({GpuOf(run), info->name});
    Check& c = it->second;
    if (added) c = CheckOf(host, run, info->name, info->unit);
    const std::string why = NotAProbeResultBecause(run);
    if (run.state() != v1::RUN_STATE_SUCCEEDED) {
      c.outcome = Outcome::kFail;
      c.run_id = run.run_id();
      c.why = absl::StrCat("run ", run.run_id(), " did not succeed: ", run.error());
    } else if (c.outcome != Outcome::kFail && why.find("throttled") != std::string::npos) {
      c.outcome = Outcome::kFail;
      c.run_id = run.run_id();
      c.why = why;
      if (const std::string at = HeldAt(run); !at.empty()) absl::StrAppend(&c.why, ": ", at);
    } else if (c.outcome != Outcome::kFail) {
      c.why = absl::StrCat("no figure to judge: ", why);
    }
  }
  std::vector<Check> out;
  for (auto& [key, c] : missing) out.push_back(std::move(c));
  return out;
}

// What the level should have measured and the session lacks (a daemon that
// does not know the level, a job that could not be followed, --latest
// before any such session, a failed run --latest does not fetch): each
// device's held products and, on several GPUs, each pair's; unknown, never
// a pass. The devices are those with a matmul_bf16 run.
std::vector<Check> NotMeasured(
    const std::string& host, const std::vector<v1::Run>& session,
    const std::map<std::pair<std::string, std::string>, const v1::Run*>& held, int level,
    const std::vector<Check>& checks) {
  std::set<std::pair<std::string, std::string>> have;  // (device, probe)
  for (const Check& c : checks) have.insert({c.device, c.probe});
  std::map<int, const v1::Run*> gpus;  // N of cuda:N -> a run on it
  std::vector<const v1::Run*> devices;
  for (const v1::Run& run : session) {
    const ProbeInfo* info = ProbeOf(run);
    if (info == nullptr || info->name != std::string("matmul_bf16")) continue;
    devices.push_back(&run);
    int n = 0;
    const std::string d = RunDevice(run);
    if (absl::StartsWith(d, "cuda:") && absl::SimpleAtoi(d.substr(5), &n)) gpus[n] = &run;
  }
  std::vector<Check> out;
  // A pair's probes are level 2's, level 1's all-reduce of any two aside.
  const auto expect = [&](const v1::Run& on, const std::string& device, const ProbeInfo& p,
                          bool pair) {
    const int of = pair ? std::max(p.level, 2) : p.level;
    if (of > level || have.count({device, p.name}) || held.count({device, p.name})) return;
    Check c = CheckOf(host, on, p.name, p.unit);
    c.device = device;
    c.run_id.clear();
    c.why = absl::StrCat("no ", p.name, " run of this ", pair ? "pair" : "device",
                         " in the session: level ", of, " not measured");
    have.insert({device, p.name});
    out.push_back(std::move(c));
  };
  for (const v1::Run* run : devices) {
    for (const ProbeInfo& p : ProbeSuite()) {
      if (p.held) expect(*run, GpuOf(*run), p, false);
    }
  }
  for (const auto& [n, run] : gpus) {
    if (gpus.size() < 2) break;
    for (const auto& [peer, unused] : gpus) {
      if (peer == n) continue;
      const std::string pair = absl::StrCat(GpuOf(*run), kPairTo, "cuda:", peer);
      for (const char* probe : {kPeerCopyProbe, kPeerKernelProbe}) {
        expect(*run, pair, *ProbeNamed(probe), true);
      }
      if (n < peer) expect(*run, pair, *ProbeNamed(kPairProbe), true);
    }
  }
  return out;
}

}  // namespace

// Level 3 on several GPUs: their loaded runs' measured windows (each
// run's end less its measured time) must overlap for 90% of the shortest,
// or the host's power and cooling were never loaded at once: unknown,
// saying so. Nothing on one device.
std::optional<Check> LoadedTogether(
    const std::string& host,
    const std::map<std::pair<std::string, std::string>, const v1::Run*>& held) {
  std::vector<const v1::Run*> loaded;
  for (const auto& [key, run] : held) {
    if (key.second == kLoadedProbe && run->state() == v1::RUN_STATE_SUCCEEDED) {
      loaded.push_back(run);
    }
  }
  if (loaded.size() < 2) return std::nullopt;
  Check c = CheckOf(host, *loaded[0], absl::StrCat(kLoadedProbe, "_together"), "%");
  c.device = absl::StrCat(loaded.size(), " devices");
  c.run_id.clear();
  c.of_host = true;
  double start = -1e300, end = 1e300, shortest = 1e300;
  for (const v1::Run* run : loaded) {
    const double to = TimeUtil::TimestampToNanoseconds(run->end_time()) / 1e9;
    const double held_s = run->result().measured_ms() / 1e3;
    start = std::max(start, to - held_s);
    end = std::min(end, to);
    shortest = std::min(shortest, held_s);
  }
  const double together = std::max(0.0, end - start);
  c.value = shortest > 0 ? 100 * together / shortest : 0;
  c.has_envelope = true;
  c.envelope.set_probe(c.probe);
  c.envelope.set_unit(c.unit);
  c.envelope.set_higher_is_better(true);
  c.envelope.set_median(100);
  c.envelope.set_bound(90);
  c.envelope.set_source("the loaded runs' own measured windows");
  if (c.value >= c.envelope.bound()) {
    c.outcome = Outcome::kPass;
  } else {
    c.why = absl::StrFormat(
        "the devices were loaded together for %.0f s of the shortest load's %.0f s: the "
        "host's power and cooling were not tested at once; run level 3 again",
        together, shortest);
  }
  return c;
}

std::vector<Check> QualifyHost(const std::string& host, const std::string& cpu_model,
                               const std::vector<v1::Run>& all_runs, const v1::Envelope& envelope,
                               int level) {
  // Level 1 judges no held run; level 2 each device's newest held in turn,
  // level 3 that and its newest loaded with every other.
  std::map<std::pair<std::string, std::string>, const v1::Run*> held;
  for (const auto& [key, run] : NewestHeld(all_runs)) {
    if (ProbeLevelOf(*run) <= level) held[key] = run;
  }
  std::vector<v1::Run> session;  // the runs of the level's probes, held ones apart
  for (const v1::Run& run : all_runs) {
    if (!IsHeld(run) && ProbeLevelOf(run) <= level) session.push_back(run);
  }
  for (const auto& [key, run] : held) session.push_back(*run);
  std::vector<Check> checks;
  std::set<std::pair<std::string, std::string>> judged;  // (device, probe)
  for (ProbeResult r : ProbeResults(host, cpu_model, session)) {
    judged.insert({r.gpu, r.probe});
    // A held product is judged by its last quarter: one that starts within
    // its envelope and falls out of it fails.
    const auto it = held.find({r.gpu, r.probe});
    const double last = it == held.end() ? 0 : LastQuarterFigure(*it->second);
    if (last > 0) r.value = last;
    checks.push_back(Judge(r, envelope, session));
    if (last > 0 && checks.back().outcome == Outcome::kFail) {
      checks.back().why = absl::StrCat("its last quarter: ", checks.back().why);
    }
  }
  for (Check& c : Unjudged(host, session, judged)) checks.push_back(std::move(c));
  for (const auto& [key, run] : held) {
    if (run->state() != v1::RUN_STATE_SUCCEEDED) continue;  // failed: above
    checks.push_back(DecayCheck(host, *run));
    if (absl::StartsWith(run->result().resolved_device(), "cuda")) {
      checks.push_back(HealthCheck(host, *run));
    }
  }
  if (auto together = LoadedTogether(host, held)) checks.push_back(std::move(*together));
  for (Check& c : NotMeasured(host, session, held, level, checks)) checks.push_back(std::move(c));
  return checks;
}

}  // namespace gpubench::report
