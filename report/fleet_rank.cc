#include "report/fleet_rank.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/contention.h"
#include "common/fingerprint.h"
#include "common/spec.h"
#include "common/stats.h"
#include "google/protobuf/util/time_util.h"
#include "report/format.h"

namespace gpubench::report {
namespace {

int64_t StartNs(const v1::Run& r) {
  return google::protobuf::util::TimeUtil::TimestampToNanoseconds(r.start_time());
}

// Better of two figures of a probe.
bool Better(const ProbeInfo& p, double a, double b) {
  return p.higher_is_better ? a > b : a < b;
}

// A GPU's name and driver; a CPU's model. A GPU run without them (no
// NVML, a run from before fingerprints) is "GPU ?": never a CPU's peer.
std::string SkuOf(const v1::Run& r, const std::string& cpu_model) {
  const v1::Fingerprint& f = r.fingerprint();
  if (!absl::StartsWith(GpuOf(r), "cuda")) {
    return absl::StrCat("CPU ", cpu_model.empty() ? "?" : cpu_model);
  }
  return absl::StrCat(f.has_gpu_name() ? f.gpu_name() : "GPU ?", ", driver ",
                      f.has_driver_version() ? f.driver_version() : "?");
}

// Where mine differs from what most of peers have: each field whose value is
// not the one more than half of the peers that have the field share.
std::vector<std::string> Differs(const v1::Fingerprint& mine,
                                 const std::vector<const v1::Fingerprint*>& peers) {
  std::map<std::string, std::map<std::string, int>> counts;  // label -> value -> peers
  for (const v1::Fingerprint* f : peers) {
    for (const auto& [label, value] : FingerprintFields(*f)) ++counts[label][value];
  }
  std::vector<std::string> out;
  for (const auto& [label, value] : FingerprintFields(mine)) {
    if (absl::StartsWith(label, "GPU UUID") || absl::StartsWith(label, "GPU serial")) continue;
    const auto& values = counts[label];
    auto most = std::max_element(values.begin(), values.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    int with_field = 0;
    for (const auto& [v, n] : values) with_field += n;
    if (most == values.end() || most->first == value || 2 * most->second <= with_field) continue;
    out.push_back(absl::StrCat(label, " ", value, " (peers ", most->first, ")"));
  }
  return out;
}

// A probe job's spec: the suite's measurement rule, the host to itself.
v1::JobSpec ProbeSpec(const std::string& probe, const std::vector<std::string>& devices,
                      bool small) {
  v1::JobSpec spec;
  spec.set_name(absl::StrCat("gpubench probe ", kProbeSuite, ": ", probe));
  (*spec.mutable_labels())["gpubench.probe"] = kProbeSuite;
  spec.set_exclusive(true);
  v1::RunConfig* base = spec.mutable_base();
  base->set_probe(absl::StrCat(kProbeSuite, "/", probe));
  base->set_mode(v1::MODE_INFER);
  for (const std::string& d : devices) spec.mutable_sweep()->add_device(d);
  v1::Measurement* m = spec.mutable_measurement();
  m->set_warmup_iterations(3);
  m->set_min_time_ms(small ? 100 : 500);
  m->set_max_time_ms(small ? 1000 : 3000);
  return spec;
}

v1::JobSpec Matmul(const std::string& probe, v1::Precision precision,
                   const std::vector<int64_t>& sizes, const std::vector<std::string>& devices,
                   bool small) {
  v1::JobSpec spec = ProbeSpec(probe, devices, small);
  spec.mutable_base()->set_workload("matmul");
  spec.mutable_base()->set_precision(precision);
  for (int64_t n : sizes) spec.mutable_sweep()->add_matmul_size(n);
  return spec;
}

v1::JobSpec Copy(const std::string& probe, v1::CopyDirection direction, int64_t bytes,
                 const std::vector<std::string>& devices, bool small) {
  v1::JobSpec spec = ProbeSpec(probe, devices, small);
  spec.mutable_base()->set_workload("copy");
  spec.mutable_base()->mutable_params()->set_copy_direction(direction);
  spec.mutable_base()->mutable_params()->set_copy_bytes(bytes);
  spec.mutable_base()->mutable_pipeline()->set_pinned_memory(true);
  return spec;
}

// A held product: it runs its whole time (the stability rule never stops
// it early), with nothing but its warm-up before.
v1::JobSpec Held(const char* probe, int64_t size, const std::vector<std::string>& devices,
                 int64_t ms, bool small) {
  v1::JobSpec held = Matmul(probe, v1::PRECISION_BF16, {size}, devices, small);
  v1::Measurement* m = held.mutable_measurement();
  m->set_min_time_ms(ms);
  m->set_max_time_ms(ms);
  m->set_max_iterations(10'000'000);
  return held;
}

// The all-reduce of a pair of GPUs: any two (device cuda: level 1), or
// device and each peer_device the caller sweeps.
v1::JobSpec AllReducePair(const std::string& device, bool small) {
  v1::JobSpec pair = ProbeSpec(kPairProbe, {device}, small);
  pair.mutable_base()->set_workload("collective");
  pair.mutable_base()->set_world_size(2);
  pair.mutable_base()->set_precision(v1::PRECISION_FP32);
  pair.mutable_base()->mutable_params()->set_collective_op(v1::COLLECTIVE_OP_ALL_REDUCE);
  pair.mutable_base()->mutable_params()->set_collective_bytes(int64_t{256} << 20);
  return pair;
}

// Level 2's pair matrix on a host of several GPUs: from each GPU to every
// other, by the copy engine and by a kernel, and an all-reduce on each
// pair, its lower GPU rank 0.
void AddPairMatrix(const v1::HostInfo& host, const std::vector<std::string>& devices,
                   bool small, std::vector<v1::JobSpec>* jobs) {
  if (small || host.gpus_size() < 2) return;
  for (int i = 0; i < host.gpus_size(); ++i) {
    const std::string from = devices[i];
    for (const char* probe : {kPeerCopyProbe, kPeerKernelProbe}) {
      v1::JobSpec copy = Copy(probe, v1::COPY_DIRECTION_DEVICE_TO_DEVICE, int64_t{1} << 30,
                              {from}, small);
      copy.mutable_base()->mutable_params()->set_copy_kernel(probe ==
                                                             std::string(kPeerKernelProbe));
      for (int j = 0; j < host.gpus_size(); ++j) {
        if (j != i) copy.mutable_sweep()->add_peer_device(host.gpus(j).index());
      }
      jobs->push_back(copy);
    }
    if (i + 1 == host.gpus_size()) continue;
    v1::JobSpec pair = AllReducePair(from, small);
    for (int j = i + 1; j < host.gpus_size(); ++j) {
      pair.mutable_sweep()->add_peer_device(host.gpus(j).index());
    }
    jobs->push_back(pair);
  }
}

}  // namespace

v1::JobSpec HostPairJob(const v1::HostInfo& host, const std::string& peer) {
  const bool gpu = !host.gpus().empty();
  v1::JobSpec pair = ProbeSpec(kHostPairProbe, {gpu ? "cuda:0" : "cpu"}, /*small=*/false);
  (*pair.mutable_labels())["gpubench.peer"] = peer;
  pair.mutable_base()->set_workload("collective");
  pair.mutable_base()->set_world_size(2);
  pair.mutable_base()->set_precision(v1::PRECISION_FP32);
  pair.mutable_base()->mutable_params()->set_collective_op(v1::COLLECTIVE_OP_ALL_REDUCE);
  pair.mutable_base()->mutable_params()->set_collective_bytes(int64_t{gpu ? 256 : 16} << 20);
  // The rank that opens waits for the other at its store; the store's own
  // wait (5 min) ends it first.
  pair.set_timeout_s(600);
  return pair;
}

bool IsHostPair(const v1::RunConfig& config) {
  return config.probe() == absl::StrCat(kProbeSuite, "/", kHostPairProbe);
}

std::vector<v1::JobSpec> ProbeJobs(const v1::HostInfo& host, bool small,
                                   const ProbeLevel& level) {
  const bool gpu = !host.gpus().empty() && !small;
  std::vector<std::string> devices;
  bool fp8 = gpu;
  for (const v1::GpuInfo& g : host.gpus()) {
    devices.push_back(absl::StrCat("cuda:", g.index()));
    double cc = 0;
    fp8 &= absl::SimpleAtod(g.compute_capability(), &cc) && cc >= 8.9;
  }
  if (!gpu) devices = {"cpu"};
  std::vector<v1::JobSpec> jobs;
  const std::vector<int64_t> sizes = gpu ? std::vector<int64_t>{4096, 8192}
                                         : std::vector<int64_t>{256};
  jobs.push_back(Matmul("matmul_bf16", v1::PRECISION_BF16, sizes, devices, small));
  if (gpu) jobs.push_back(Matmul("matmul_fp16", v1::PRECISION_FP16, sizes, devices, small));
  if (fp8) jobs.push_back(Matmul("matmul_fp8", v1::PRECISION_FP8, sizes, devices, small));
  v1::JobSpec attention = ProbeSpec("attention", devices, small);
  attention.mutable_base()->set_workload("attention");
  attention.mutable_base()->set_precision(gpu ? v1::PRECISION_BF16 : v1::PRECISION_FP32);
  attention.mutable_base()->set_batch_size(gpu ? 8 : 2);
  v1::WorkloadParams* p = attention.mutable_base()->mutable_params();
  p->set_num_heads(gpu ? 16 : 4);
  p->set_hidden_size(gpu ? 2048 : 128);
  p->set_sequence_length(gpu ? 2048 : 128);
  jobs.push_back(attention);
  jobs.push_back(Copy("copy_d2d", v1::COPY_DIRECTION_DEVICE_TO_DEVICE,
                      gpu ? int64_t{1} << 30 : int64_t{64} << 20, devices, small));
  if (gpu) {
    jobs.push_back(Copy("h2d_pinned", v1::COPY_DIRECTION_HOST_TO_DEVICE, int64_t{256} << 20,
                        devices, small));
    jobs.push_back(Copy("d2h_pinned", v1::COPY_DIRECTION_DEVICE_TO_HOST, int64_t{256} << 20,
                        devices, small));
  }
  jobs.push_back(Matmul("launch", v1::PRECISION_FP32, {16}, devices, small));
  if (gpu && host.gpus_size() >= 2) jobs.push_back(AllReducePair("cuda", small));
  if (level.level >= 2) AddPairMatrix(host, devices, small, &jobs);
  if (level.level >= 2) {
    jobs.push_back(Held(kSustainedProbe, sizes.back(), devices, level.sustain_ms, small));
  }
  if (level.level >= 3) {
    v1::JobSpec loaded = Held(kLoadedProbe, sizes.back(), devices, level.load_ms, small);
    loaded.set_parallel_devices(gpu);  // every GPU at once, a worker each
    jobs.push_back(loaded);
  }
  return jobs;
}

namespace {

// The work of a config: all of it but the device it ran on.
std::string WorkKey(v1::RunConfig c) {
  c.clear_device();
  // A pair's peer is where it ran too: any peer, so long as it has one.
  if (c.params().has_peer_device()) c.mutable_params()->set_peer_device(0);
  return ConfigKey(c);
}

// The kinds of device ("cuda", "cpu") on which the suite gives each of its
// configs (its work, the device aside): GPU sizes on a GPU, CPU sizes on the
// CPU; one config may be both (the launch's 16³ product).
const std::map<std::string, std::set<std::string>>& SuiteConfigs() {
  static const auto* const kinds = [] {
    auto* k = new std::map<std::string, std::set<std::string>>;
    v1::HostInfo host;  // two sm_90 GPUs: every probe of the suite
    for (int i = 0; i < 2; ++i) {
      v1::GpuInfo* g = host.add_gpus();
      g->set_index(i);
      g->set_compute_capability("9.0");
    }
    for (bool small : {false, true}) {  // small: the CPU's sizes on the CPU
      for (const v1::JobSpec& spec : ProbeJobs(host, small, ProbeLevel{3})) {
        auto configs = ExpandSweep(spec);
        if (!configs.ok()) continue;
        for (const v1::RunConfig& c : *configs) (*k)[WorkKey(c)].insert(small ? "cpu" : "cuda");
      }
    }
    return k;
  }();
  return *kinds;
}

}  // namespace

const std::vector<ProbeInfo>& ProbeSuite() {
  static const auto* suite = new std::vector<ProbeInfo>{
      // Noise floors: each probe's larger coefficient of variation of the
      // two H100s' six sessions (bench/results/2026-11-27-h100-fleet.txt);
      // the pair all-reduce, which those sessions did not measure: the
      // GPU-bound probes' largest, rounded up.
      {"matmul_bf16", "TFLOP/s", true, "bf16 matrix product, the best of 4096³ and 8192³",
       0.0125},
      {"matmul_fp16", "TFLOP/s", true, "fp16 matrix product, the best of 4096³ and 8192³",
       0.0126},
      {"matmul_fp8", "TFLOP/s", true, "fp8 (e4m3) matrix product where the GPU has it (sm_89+)",
       0.0093},
      {"attention", "TFLOP/s", true, "causal attention forward, bf16, 8 x 16 heads x 2048 x 128",
       0.0167},
      {"copy_d2d", "GB/s", true, "device-to-device copy of 1 GiB", 0.0002},
      {"h2d_pinned", "GB/s", true, "pinned host-to-device copy of 256 MiB", 0.0086},
      {"d2h_pinned", "GB/s", true, "pinned device-to-host copy of 256 MiB", 0.0034},
      {"launch", "us", false, "host time per launch of a tiny kernel (a 16³ fp32 product)",
       0.20},
      {"allreduce_pair", "GB/s", true,
       "NCCL all-reduce of 256 MiB on a pair of GPUs (bus); level 2: on each pair", 0.02},
      // Level 2's pair matrix: the all-reduce's floor (not measured apart).
      {kPeerCopyProbe, "GB/s", true,
       "qualify --level 2: copy engine's copy of 1 GiB from each GPU to each other one", 0.02,
       /*held=*/false, /*level=*/2},
      {kPeerKernelProbe, "GB/s", true,
       "qualify --level 2: a kernel's copy of 1 GiB from each GPU to each other one", 0.02,
       /*held=*/false, /*level=*/2},
      // Held (qualify): matmul_bf16's noise floor.
      {kSustainedProbe, "TFLOP/s", true,
       "qualify --level 2: bf16 8192³ product held for --sustain (60 s) on each GPU in turn; "
       "not ranked",
       0.0125, /*held=*/true, /*level=*/2},
      {kHostPairProbe, "GB/s", true,
       "qualify --pairs: all-reduce (bus) between two hosts, one rank on each: NCCL's of "
       "256 MiB on cuda:0, or Gloo's of 16 MiB on a host without GPUs",
       0.05, /*held=*/false, /*level=*/0},
      {kLoadedProbe, "TFLOP/s", true,
       "qualify --level 3: bf16 8192³ product held for --load (15 min) on every GPU at once; "
       "not ranked",
       0.0125, /*held=*/true, /*level=*/3},
  };
  return *suite;
}

const ProbeInfo* ProbeNamed(const std::string& name) {
  for (const ProbeInfo& p : ProbeSuite()) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

const ProbeInfo* ProbeOf(const v1::Run& run) {
  const std::string& probe = run.config().probe();
  const std::string prefix = absl::StrCat(kProbeSuite, "/");
  if (!absl::StartsWith(probe, prefix)) return nullptr;
  return ProbeNamed(probe.substr(prefix.size()));
}

int ProbeLevelOf(const v1::Run& run) {
  const ProbeInfo* info = ProbeOf(run);
  if (info == nullptr) return 0;
  return run.config().params().has_peer_device() ? std::max(info->level, 2) : info->level;
}

std::string ProbeFigureText(double v) {
  return v >= 100 ? absl::StrFormat("%.0f", v) : absl::StrFormat("%.3g", v);
}

double ProbeFigure(const ProbeInfo& probe, const v1::Run& run) {
  const v1::RunResult& r = run.result();
  const std::string unit = probe.unit;
  if (unit == "TFLOP/s") return r.achieved_tflops();
  if (unit == "us") {
    if (r.host_latency().p50_ms() > 0) return 1e3 * r.host_latency().p50_ms();
    return r.throughput_samples_per_s() > 0 ? 1e6 / r.throughput_samples_per_s() : 0;
  }
  return r.bus_bandwidth_gb_per_s() > 0 ? r.bus_bandwidth_gb_per_s() : r.bandwidth_gb_per_s();
}

std::string NotAProbeResultBecause(const v1::Run& run) {
  const ProbeInfo* p = ProbeOf(run);
  if (p == nullptr) return absl::StrCat("not a probe of suite ", kProbeSuite);
  if (!run.daemon_probe()) return "not made by the daemon's probe suite (gpubench probe)";
  if (run.state() != v1::RUN_STATE_SUCCEEDED) return "did not succeed";
  const auto& configs = SuiteConfigs();
  const auto kinds = configs.find(WorkKey(run.config()));
  if (kinds == configs.end()) return "not the suite's config of the probe";
  const std::string device = RunDevice(run);
  if (kinds->second.count(device.substr(0, device.find(':'))) == 0) {
    // A GPU's figure comes only from a GPU-size config on it, and back.
    const char* size = kinds->second.count("cuda") == 0  ? "a CPU-size config"
                       : kinds->second.count("cpu") == 0 ? "a GPU-size config"
                                                         : "the suite's config";
    return absl::StrCat(size, " on ", device.empty() ? "no device" : device);
  }
  if (std::string why = NotABaselineBecause(run); !why.empty()) return why;
  const double value = ProbeFigure(*p, run);
  if (!std::isfinite(value) || value <= 0) return "no figure";
  return "";
}

std::string GpuOf(const v1::Run& r) {
  std::string gpu = RunDevice(r);
  if (r.fingerprint().has_gpu_uuid()) {
    absl::StrAppend(&gpu, " ", r.fingerprint().gpu_uuid().substr(0, 12));
  }
  if (r.config().params().has_peer_device()) {
    absl::StrAppend(&gpu, kPairTo, "cuda:", r.config().params().peer_device());
  }
  return gpu;
}

std::vector<ProbeResult> ProbeResults(const std::string& host, const std::string& cpu_model,
                                      const std::vector<v1::Run>& runs) {
  // (gpu, probe) -> job -> its best run; then the jobs by time.
  struct Session {
    const v1::Run* best = nullptr;
    double value = 0;
  };
  std::map<std::pair<std::string, std::string>, std::map<std::string, Session>> sessions;
  for (const v1::Run& r : runs) {
    if (!NotAProbeResultBecause(r).empty()) continue;
    const ProbeInfo* p = ProbeOf(r);
    const double value = ProbeFigure(*p, r);
    Session& s = sessions[{GpuOf(r), p->name}][r.job_id()];
    if (s.best == nullptr || Better(*p, value, s.value)) s = {&r, value};
  }
  std::vector<ProbeResult> out;
  for (auto& [key, jobs] : sessions) {
    std::vector<Session> ordered;
    for (const auto& [job, s] : jobs) ordered.push_back(s);
    std::sort(ordered.begin(), ordered.end(), [](const Session& a, const Session& b) {
      return StartNs(*a.best) < StartNs(*b.best);
    });
    ProbeResult result;
    result.host = host;
    result.gpu = key.first;
    result.probe = key.second;
    const Session& latest = ordered.back();
    result.value = latest.value;
    result.run_id = latest.best->run_id();
    result.fingerprint = latest.best->fingerprint();
    result.sku = SkuOf(*latest.best, cpu_model);
    for (size_t i = 0; i + 1 < ordered.size(); ++i) result.history.push_back(ordered[i].value);
    for (const Session& s : ordered) {
      result.sessions.push_back({s.value, s.best->run_id(), StartNs(*s.best),
                                 s.best->fingerprint(), s.best->job_id()});
    }
    out.push_back(std::move(result));
  }
  return out;
}

namespace {

// The spread a straggler of a group of peers must stand out of, in the
// probe's unit: their own (1.4826 x their median absolute deviation, a
// standard deviation's robust estimate), or the probe's between sessions,
// whichever is larger: the median times the larger of the probe's floor
// and the median of the peers' own histories' coefficients of variation.
double Noise(const ProbeInfo& probe, const std::vector<const ProbeResult*>& peers,
             double median, const FleetRule& rule) {
  std::vector<double> deviations, history_cvs;
  for (const ProbeResult* p : peers) {
    deviations.push_back(std::abs(p->value - median));
    if (static_cast<int>(p->history.size()) >= rule.min_history) {
      history_cvs.push_back(stats::CoefficientOfVariation(p->history));
    }
  }
  const double sessions_cv =
      std::max(probe.noise_cv, history_cvs.empty() ? 0.0 : stats::Median(history_cvs));
  return std::max(1.4826 * stats::Median(deviations), std::abs(median) * sessions_cv);
}

}  // namespace

std::vector<Ranked> RankFleet(const std::vector<ProbeResult>& results, const FleetRule& rule) {
  std::map<std::pair<std::string, std::string>, std::vector<const ProbeResult*>> groups;
  for (const ProbeResult& r : results) groups[{r.sku, r.probe}].push_back(&r);
  std::map<std::string, int> order;
  for (size_t i = 0; i < ProbeSuite().size(); ++i) order[ProbeSuite()[i].name] = i;
  std::vector<Ranked> out;
  for (const auto& [key, members] : groups) {
    const ProbeInfo* probe = ProbeNamed(key.second);
    if (probe == nullptr) continue;
    std::vector<double> values;
    std::vector<const v1::Fingerprint*> fingerprints;
    for (const ProbeResult* m : members) {
      values.push_back(m->value);
      fingerprints.push_back(&m->fingerprint);
    }
    const double median = stats::Median(values), mean = stats::Mean(values);
    const double sd = stats::Stddev(values);
    const int n = static_cast<int>(members.size());
    const double noise = n >= rule.min_peers ? Noise(*probe, members, median, rule) : 0;
    for (const ProbeResult* m : members) {
      Ranked r;
      r.result = *m;
      r.peers = n;
      r.median = median;
      r.ratio = median > 0 ? m->value / median : 0;
      if (n > 1) {
        // Its peers it does better than; a tie counts half (itself aside).
        double beaten = -0.5;
        for (double v : values) {
          beaten += Better(*probe, m->value, v) ? 1 : v == m->value ? 0.5 : 0;
        }
        r.percentile = 100.0 * beaten / (n - 1);
      }
      if (n >= rule.min_peers && sd > 0) {
        // Negative is worse, for latencies too.
        r.z = (probe->higher_is_better ? 1 : -1) * (m->value - mean) / sd;
      }
      const double worse = probe->higher_is_better ? 1 - r.ratio : r.ratio - 1;
      r.noise = noise;
      if (n < rule.min_peers) {
        r.no_verdict = absl::StrCat("fewer than ", rule.min_peers, " peers: no straggler verdict");
      } else if (worse > rule.threshold) {
        // noise > 0 (the probe's floor): peers that tie never make a small
        // distance infinitely significant.
        const bool outlier = std::abs(m->value - median) >= rule.max_robust_z * noise;
        r.straggler = outlier;
        r.straggler_too_noisy = !outlier;
      }
      if (static_cast<int>(m->history.size()) >= rule.min_history) {
        const double past = stats::Median(m->history);
        r.drift = m->value / past;
        if ((probe->higher_is_better ? 1 - *r.drift : *r.drift - 1) > rule.threshold) {
          // A history that never varied (p 0) is no spread either: the
          // probe's floor still holds.
          const bool outside =
              stats::NewValueAgainstHistory(m->value, m->history).p_value < rule.alpha &&
              std::abs(m->value - past) >= rule.max_robust_z * past * probe->noise_cv;
          r.drifted = outside;
          r.drift_too_noisy = !outside;
        }
      }
      r.differs = Differs(m->fingerprint, fingerprints);
      out.push_back(std::move(r));
    }
  }
  std::sort(out.begin(), out.end(), [&](const Ranked& a, const Ranked& b) {
    const auto worse = [](const Ranked& r, const std::string& probe) {
      const ProbeInfo* p = ProbeNamed(probe);
      return p == nullptr || p->higher_is_better ? r.ratio : -r.ratio;
    };
    return std::make_tuple(order[a.result.probe], a.result.sku, worse(a, a.result.probe),
                           a.result.host, a.result.gpu) <
           std::make_tuple(order[b.result.probe], b.result.sku, worse(b, b.result.probe),
                           b.result.host, b.result.gpu);
  });
  return out;
}

}  // namespace gpubench::report
