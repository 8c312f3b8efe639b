// The fleet probe suite and the ranking of each GPU against its peers
// (gpubench probe, gpubench fleet). A probe is a short fixed measurement
// (a run whose config names it: RunConfig.probe "v1/matmul_bf16") that the
// daemon's own suite made (Run.daemon_probe: RunProbe, never a caller's
// spec); a GPU's peers are the GPUs of the same SKU and driver; each GPU's
// latest figure gets a percentile and a z-score among them, is flagged a
// straggler beyond a threshold from their median and beyond the noise, and
// against its own earlier figures (drift). Plain data in, plain data out:
// the CLI prints it, report/ draws it; the daemon builds the suite's jobs
// (ProbeJobs).
#ifndef GPUBENCH_REPORT_FLEET_RANK_H_
#define GPUBENCH_REPORT_FLEET_RANK_H_

#include <optional>
#include <string>
#include <vector>

#include "gpubench/v1/job.pb.h"
#include "gpubench/v1/result.pb.h"
#include "gpubench/v1/spec.pb.h"
#include "report/change_history.h"

namespace gpubench::report {

// The suite's version: part of every probe run's RunConfig.probe.
inline constexpr char kProbeSuite[] = "v1";
// The held probes (ProbeInfo.held): level 2's bf16 product held on each
// device in turn, and level 3's on every GPU at once (ProbeJobs).
inline constexpr char kSustainedProbe[] = "sustained_bf16";
inline constexpr char kLoadedProbe[] = "loaded_bf16";
// The pair probes: the all-reduce of two GPUs (level 1: any two; level 2:
// each pair), and level 2's copies from each GPU to each other one.
inline constexpr char kPairProbe[] = "allreduce_pair";
inline constexpr char kPeerCopyProbe[] = "peer_copy";
inline constexpr char kPeerKernelProbe[] = "peer_copy_kernel";
// What joins a pair's GPUs in a result's name: "cuda:0 GPU-8c1f -> cuda:1".
inline constexpr char kPairTo[] = " -> ";
// A pair across hosts (gpubench qualify --pairs): a 2-rank all-reduce,
// one rank on each of two daemons (RunHostPair). Level 0: no host's suite
// runs it, and neither fleet nor qualify's levels judge it.
inline constexpr char kHostPairProbe[] = "host_pair";

struct ProbeInfo {
  const char* name;       // "matmul_bf16"
  const char* unit;       // "TFLOP/s", "GB/s", "us"
  bool higher_is_better;  // throughputs; not the launch latency
  const char* what;       // one line for --help and the report
  // Its noise floor: the coefficient of variation of its figure between
  // probe sessions on one unchanged GPU (the larger of two H100s', six
  // sessions each: bench/results/2026-11-27-h100-fleet.txt). No flag ever
  // rests on a spread smaller than this, however alike the peers are.
  double noise_cv;
  // Held for as long as qualify's --sustain or --load says, to see it over
  // time: its figure is qualify's alone, neither ranked nor bounded in an
  // envelope of its own by fleet (its length varies).
  bool held = false;
  // The qualify level that runs it (1: the suite of gpubench probe; 0:
  // qualify --pairs alone).
  int level = 1;
};

// The suite's probes, in the order tables list them.
const std::vector<ProbeInfo>& ProbeSuite();

// The probe of the suite a run measures (its RunConfig.probe is
// "v1/NAME"), or nullptr.
const ProbeInfo* ProbeOf(const v1::Run& run);

// The suite's probe of that name ("matmul_bf16"), or nullptr.
const ProbeInfo* ProbeNamed(const std::string& name);

// The qualify level whose run this is: its probe's, and 2 for an
// all-reduce of a named pair (level 1's is on any two GPUs); 0 for a run
// of no probe.
int ProbeLevelOf(const v1::Run& run);

// A probe's figure as the tables print it: whole from 100, else three
// significant digits ("694", "55.3", "1.62").
std::string ProbeFigureText(double v);

// The suite's jobs for a host: every probe on each of its GPUs, the host to
// itself, or at CPU sizes on its CPU (a host without GPUs, or small): bf16
// matmul, attention, copy and launch (the CPU runs no fp16 or fp8, and has
// no pinned copies). The daemon queues them (RunProbe, for gpubench probe);
// a run counts as a probe result only where its config is one of theirs, a
// GPU size on a GPU or a CPU size on the CPU. level 2 (gpubench qualify
// --level 2) adds sustained_bf16: the bf16 product at its largest size
// held for sustain_ms on each device in turn, its telemetry sampled; and on
// a host of several GPUs the pair matrix: peer_copy and peer_copy_kernel
// from each GPU to each other one, allreduce_pair on each pair. level 3
// adds loaded_bf16: the same product on every device at once for load_ms.
struct ProbeLevel {
  int level = 1;
  int64_t sustain_ms = 60'000;
  int64_t load_ms = 900'000;
};
std::vector<v1::JobSpec> ProbeJobs(const v1::HostInfo& host, bool small,
                                   const ProbeLevel& level = {});

// The job of one rank of a pair across hosts on host, labelled with the
// other host's name (gpubench.peer): NCCL's all-reduce of 256 MiB on cuda:0,
// or on a host without GPUs Gloo's of 16 MiB on the CPU.
v1::JobSpec HostPairJob(const v1::HostInfo& host, const std::string& peer);

// Whether config is a rank of a pair across hosts.
bool IsHostPair(const v1::RunConfig& config);

// The probe's figure of a run in the probe's unit (TFLOP/s, GB/s, or µs per
// launch); 0 where the run has none.
double ProbeFigure(const ProbeInfo& probe, const v1::Run& run);

// One GPU's result of one probe: its latest session's figure (a session is
// a job: the best of its runs of the probe), and its earlier sessions'.
struct ProbeResult {
  std::string host;  // the fleet's name for the daemon
  std::string gpu;   // "cuda:0" (and the UUID's head where known), "cpu"
  std::string sku;   // "NVIDIA H100 80GB HBM3, driver 580.159.04"
  std::string probe;
  double value = 0;
  std::vector<double> history;  // earlier sessions, oldest first
  std::string run_id;           // the latest session's best run
  v1::Fingerprint fingerprint;  // that run's
  // Every session, oldest first, the latest last: for change points.
  std::vector<SeriesPoint> sessions;
};

// The GPU a run ran on, as results name it: "cuda:0 GPU-8c1f2a3b" (the
// UUID's head where known), "cpu"; a pair's with its peer: "cuda:0
// GPU-8c1f2a3b -> cuda:1".
std::string GpuOf(const v1::Run& run);

// Why a run is no probe result, in a few words ("contended (1 job beside)",
// "a CPU-size config on cuda:0", "not made by the daemon's probe suite");
// empty where it is one: a succeeded run of a probe of the suite, made by
// the daemon's own suite (Run.daemon_probe), with the config the suite gives
// that probe on that kind of device (a GPU figure comes only from a GPU-size
// config on a GPU), neither contended nor thermally throttled
// (NotABaselineBecause), with a finite positive figure.
std::string NotAProbeResultBecause(const v1::Run& run);

// The probe results of one host's runs: those NotAProbeResultBecause
// leaves in; the others are left out. cpu_model names the SKU of CPU
// runs.
std::vector<ProbeResult> ProbeResults(const std::string& host, const std::string& cpu_model,
                                      const std::vector<v1::Run>& runs);

// A GPU is flagged only where the distance is beyond the threshold AND
// beyond the noise: for a straggler, its distance from its peers' median is
// at least max_robust_z times their noise, the larger of their own spread
// (1.4826 x their median absolute deviation) and the probe's spread between
// sessions (its median x the larger of ProbeInfo::noise_cv and the median
// of the peers' own history's coefficient of variation, over those with
// min_history earlier sessions), so that peers that tie (a deviation of 0)
// never make a small distance stand out; for drift, the figure lies outside
// its own history's prediction interval (p < alpha, as the nightly rule) and
// at least max_robust_z times the probe's noise floor from the history's
// median. Beyond the threshold but within the noise is "too noisy to tell".
// (On an H100, the suite's figures varied 0.02-1.7% between sessions, its
// launch latency 20%: bench/results/2026-11-27-h100-fleet.txt.)
struct FleetRule {
  double threshold = 0.05;  // relative distance from the median that counts
  int min_peers = 3;        // fewer GPUs of a SKU: no straggler verdict (said)
  int min_history = 3;      // fewer earlier sessions: no drift verdict
  double max_robust_z = 3;
  double alpha = 0.05;
};

struct Ranked {
  ProbeResult result;
  int peers = 0;       // GPUs of its SKU with this probe, itself included
  double median = 0;   // of their figures
  double ratio = 0;    // figure / median
  std::optional<double> percentile;  // share of its peers it does better than (ties half)
  std::optional<double> z;           // (figure - mean) / sd over the peers; negative: worse
  bool straggler = false;            // worse than the median, beyond threshold and noise
  // The spread a straggler must stand out of, in the probe's unit (see
  // FleetRule); 0 with fewer than min_peers.
  double noise = 0;
  // Why no straggler verdict is given: "fewer than 3 peers: no straggler
  // verdict"; empty where one is.
  std::string no_verdict;
  std::optional<double> drift;       // figure / median of its own history
  bool drifted = false;              // worse than its history, beyond threshold and noise
  // Beyond the threshold but within the noise (FleetRule): too noisy to
  // tell.
  bool straggler_too_noisy = false, drift_too_noisy = false;
  // Its fingerprint where it differs from what most of its peers have
  // ("power limit 420 W (peers 700 W)").
  std::vector<std::string> differs;
};

// Every result ranked within its SKU and probe, in the suite's probe order,
// then by SKU, then worst first.
std::vector<Ranked> RankFleet(const std::vector<ProbeResult>& results, const FleetRule& rule);

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_FLEET_RANK_H_
