// Node qualification (gpubench qualify): a decision per check, not a
// ranking. Each GPU's figure of each probe of a fresh probe session is
// judged against its SKU's envelope (v1::ProbeEnvelope: the median of a
// history of sessions and the bound the fleet's straggler rule puts under
// it), and passes, fails naming the figure, the envelope and the likely
// cause (what its fingerprint changed from the envelope's setup: power
// limit, clocks, PCIe width, ECC; its throttle reasons), or is unknown (no
// envelope for the SKU and probe, a run left out as contended). Envelopes
// come from the fleet's own probe history (EnvelopeOf, `gpubench fleet
// --envelope`) or the project's (deploy/envelopes/). Plain data; thread-safe.
#ifndef GPUBENCH_REPORT_QUALIFY_H_
#define GPUBENCH_REPORT_QUALIFY_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gpubench/v1/result.pb.h"
#include "report/fleet_rank.h"

namespace gpubench::report {

// An envelope per SKU (GPU name, or the CPU's model), driver and probe,
// from every session of every GPU in results (at least rule.min_history
// distinct sessions, probe jobs of the fleet's hosts, however many figures
// one session of a host of many GPUs or pairs gives; fewer give none for
// that probe; ProbeEnvelope.sessions counts the figures). source says where from. An
// entry whose bound would be beyond a factor of two from its median (half
// the median's speed, or twice its time: sessions that vary that widely
// bound nothing) is left out and named, with why, in left_out.
v1::Envelope EnvelopeOf(const std::vector<ProbeResult>& results, const FleetRule& rule,
                        const std::string& source, std::vector<std::string>* left_out);

// An envelope file's text. InvalidArgument naming the file and the field
// ("envelope.json: probes[2].bound: must be a finite number above 0") for
// anything but strict JSON of v1::Envelope with, in each entry, a SKU, a
// probe of the suite, its unit and direction, and a positive median,
// spread and bound on the right side of the median.
absl::StatusOr<v1::Envelope> ParseEnvelope(const std::string& text, const std::string& path);

// The envelope as the file's JSON (two-space indented, field names as in
// the proto).
std::string EnvelopeJson(const v1::Envelope& envelope);

enum class Outcome { kPass, kFail, kUnknown };

// "pass", "fail", "unknown".
const char* OutcomeName(Outcome outcome);

struct Check {
  std::string host;
  std::string device;  // "cuda:0 GPU-8c1f2a3b", "cpu"
  std::string probe;   // "matmul_bf16"
  std::string sku;     // "NVIDIA H100 80GB HBM3, driver 580.159.04"
  Outcome outcome = Outcome::kUnknown;
  double value = 0;    // its figure, in the envelope's unit; 0 without one
  std::string unit;
  bool has_envelope = false;
  v1::ProbeEnvelope envelope;
  // Fail: "415 TFLOP/s, below 655 (median 690 over 12 sessions of 2
  // GPUs): power limit 700 W -> 420 W"; unknown: why it could not be
  // judged; pass: "".
  std::string why;
  std::string run_id;
  bool of_host = false;  // of the host's devices together (loaded_bf16_together): not a device
};

// The checks of one host's probe session (the runs of the jobs RunProbe
// queued, or the stored ones since a time): one per device and probe, of
// each probe's newest session. An entry of the same SKU and driver is
// preferred; of the same SKU on another driver, used and said. level 2
// adds each device's newest held run (sustained_bf16): its last quarter's
// figure, its decay and, on a GPU, its health; level 3 the same of its
// newest loaded_bf16 (every GPU at once). A device without one is unknown.
// Level 1 leaves held runs out.
std::vector<Check> QualifyHost(const std::string& host, const std::string& cpu_model,
                               const std::vector<v1::Run>& session, const v1::Envelope& envelope,
                               int level);

// Whether checks hold a fail that a re-run of the suite (qualify --level 1)
// would measure again: a probe of the suite, not a held product or a pair.
bool NeedsConfirming(const std::vector<Check>& checks);

// The fails NeedsConfirming names, judged again against rerun (the same
// host's checks of a fresh level-1 session): a fail stands only where its
// re-run fails too, so one slow moment of a healthy device (a CPU's launch
// once 1.7x its median on a 2-core VM, nothing else running) does not drain
// a node, while a device that is slow stays slow. A re-run that passes
// makes the check its own (its figure, run and a why naming the first
// run's); one that fails, or cannot be judged (contended), leaves the fail,
// saying which.
void ConfirmFails(const std::vector<Check>& rerun, std::vector<Check>* checks);

// Each device's newest run of each held probe (sustained_bf16,
// loaded_bf16) among runs, by device (GpuOf) and probe; pointers into runs.
std::map<std::pair<std::string, std::string>, const v1::Run*> NewestHeld(
    const std::vector<v1::Run>& runs);

// One pair across hosts (qualify --pairs): a opened it, b joined; the
// opening rank's figure (GB/s, bus) and run, or why there is none.
struct HostPairResult {
  std::string a, b;
  std::string device;  // a's rank's ("cpu", "cuda:0")
  double value = 0;
  std::string run_id;
  std::string error;  // empty when measured
};

// qualify --pairs' checks (qualify_pairs.cc): one per host, its fastest
// link, then one per pair (host a, device "cpu -> b"), failed where it did
// not run. A host is judged among the hosts' fastest links by fleet's straggler rule
// (RankFleet, the probe's noise floor): a straggler fails, naming its link
// and "its network link (NIC, cable, switch port) or a rate limit on it";
// fewer than rule.min_peers hosts measured is unknown; a host without a
// measured pair fails.
std::vector<Check> QualifyHostPairs(const std::vector<std::string>& hosts,
                                    const std::vector<HostPairResult>& pairs,
                                    const FleetRule& rule = {});

// fail if any check fails, else unknown if any is unknown or there is
// none, else pass.
Outcome Overall(const std::vector<Check>& checks);

// The one line node-problem-detector and Slurm's NHC take: "OK: 2 hosts,
// 3 devices, 12 checks pass (level 1)", "NOTOK: HOST DEVICE PROBE WHY
// (and 2 more failed)", "UNKNOWN: ..."; level 0: "(pairs across hosts)".
std::string StatusLine(const std::vector<Check>& checks, int level);

// Prometheus' text format for node_exporter's textfile collector: per
// check gpubench_qualify_check (1 pass, 0 fail, -1 unknown),
// gpubench_qualify_value and gpubench_qualify_bound (in the probe's unit),
// labelled host, device and probe.
std::string QualifyMetrics(const std::vector<Check>& checks);

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_QUALIFY_H_
