// qualify --pairs: each pair across hosts, and each host by its fastest
// link among the hosts' fastest links (report/qualify.h).
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "report/fleet_rank.h"
#include "report/qualify.h"

namespace gpubench::report {
namespace {

constexpr char kUnit[] = "GB/s";
// What RankFleet groups the hosts' fastest links by: one group.
constexpr char kLinks[] = "links between hosts";

Check PairCheck(const HostPairResult& p) {
  Check c;
  c.host = p.a;
  c.device = absl::StrCat(p.device.empty() ? "-" : p.device, kPairTo, p.b);
  c.probe = kHostPairProbe;
  c.sku = kLinks;
  c.unit = kUnit;
  c.value = p.value;
  c.run_id = p.run_id;
  c.outcome = p.error.empty() ? Outcome::kPass : Outcome::kFail;
  if (!p.error.empty()) c.why = absl::StrCat("did not run: ", p.error);
  return c;
}

}  // namespace

std::vector<Check> QualifyHostPairs(const std::vector<std::string>& hosts,
                                    const std::vector<HostPairResult>& pairs,
                                    const FleetRule& rule) {
  std::vector<Check> out;
  // Each host's fastest measured link, and the host at its other end.
  std::map<std::string, const HostPairResult*> best;
  for (const HostPairResult& p : pairs) {
    if (!p.error.empty()) continue;
    for (const std::string& h : {p.a, p.b}) {
      if (best[h] == nullptr || p.value > best[h]->value) best[h] = &p;
    }
  }
  std::vector<ProbeResult> fastest;
  for (const auto& [host, p] : best) {
    if (p == nullptr) continue;
    ProbeResult r;
    r.host = host;
    r.gpu = p->device;
    r.sku = kLinks;
    r.probe = kHostPairProbe;
    r.value = p->value;
    r.run_id = p->run_id;
    fastest.push_back(std::move(r));
  }
  std::map<std::string, Ranked> ranked;
  for (Ranked& r : RankFleet(fastest, rule)) ranked[r.result.host] = std::move(r);
  for (const std::string& host : hosts) {
    Check c;
    c.host = host;
    c.probe = kHostPairProbe;
    c.sku = kLinks;
    c.unit = kUnit;
    const auto it = best.find(host);
    if (it == best.end() || it->second == nullptr) {
      c.device = "-";
      c.outcome = Outcome::kFail;
      c.why = "no pair with this host ran: its network link, or its daemon's --pair-address";
      out.push_back(std::move(c));
      continue;
    }
    const HostPairResult& link = *it->second;
    const Ranked& r = ranked[host];
    const std::string other = link.a == host ? link.b : link.a;
    c.device = link.device;
    c.value = link.value;
    c.run_id = link.run_id;
    const std::string figures =
        absl::StrCat("its fastest link (with ", other, ") ", ProbeFigureText(link.value), " ",
                     kUnit, ", the hosts' median fastest ", ProbeFigureText(r.median), " over ",
                     r.peers, " hosts");
    if (!r.no_verdict.empty()) {
      c.why = absl::StrCat(r.no_verdict, ": ", figures);
    } else if (r.straggler) {
      c.outcome = Outcome::kFail;
      c.why = absl::StrCat(figures, ", beyond the noise (", ProbeFigureText(r.noise), " ", kUnit,
                           "): its network link (NIC, cable, switch port) or a rate limit on it");
    } else {
      c.outcome = Outcome::kPass;
      if (r.straggler_too_noisy) c.why = absl::StrCat(figures, ": slower, within the noise");
    }
    out.push_back(std::move(c));
  }
  // The hosts first: the line names a host that fails before a pair.
  for (const HostPairResult& p : pairs) out.push_back(PairCheck(p));
  return out;
}

}  // namespace gpubench::report
