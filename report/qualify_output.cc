// What qualify says of its checks: the overall outcome, the one line that
// node-problem-detector and Slurm's NHC take, and the textfile's gauges
// (report/qualify.h).
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/fleet_rank.h"
#include "report/qualify.h"

namespace gpubench::report {

Outcome Overall(const std::vector<Check>& checks) {
  if (checks.empty()) return Outcome::kUnknown;
  Outcome out = Outcome::kPass;
  for (const Check& c : checks) {
    if (c.outcome == Outcome::kFail) return Outcome::kFail;
    if (c.outcome == Outcome::kUnknown) out = Outcome::kUnknown;
  }
  return out;
}

std::string StatusLine(const std::vector<Check>& checks, int level) {
  std::set<std::string> hosts, devices, pairs;
  for (const Check& c : checks) {
    hosts.insert(c.host);
    const size_t to = c.device.find(kPairTo);
    if (!c.of_host) devices.insert(c.host + " " + c.device.substr(0, to));
    if (to != std::string::npos) pairs.insert(c.host + " " + c.device);
  }
  const Outcome overall = Overall(checks);
  const std::string of = level == 0 ? "pairs across hosts" : absl::StrCat("level ", level);
  if (overall == Outcome::kPass) {
    const auto count = [](size_t n, const char* one, const char* many) {
      return absl::StrCat(n, " ", n == 1 ? one : many);
    };
    return absl::StrCat("OK: ", count(hosts.size(), "host", "hosts"), ", ",
                        count(devices.size(), "device", "devices"), ", ",
                        pairs.empty() ? "" : count(pairs.size(), "pair, ", "pairs, "),
                        count(checks.size(), "check passes", "checks pass"), " (", of, ")");
  }
  if (checks.empty()) return absl::StrCat("UNKNOWN: no check ran (", of, ")");
  const Outcome first_of = overall;
  int more = -1;
  const Check* first = nullptr;
  for (const Check& c : checks) {
    if (c.outcome != first_of) continue;
    ++more;
    if (first == nullptr) first = &c;
  }
  return absl::StrCat(overall == Outcome::kFail ? "NOTOK: " : "UNKNOWN: ", first->host, " ",
                      first->device, " ", first->probe, " ", first->why,
                      more > 0 ? absl::StrCat(" (and ", more, " more ",
                                              overall == Outcome::kFail ? "failed" : "unknown",
                                              ")")
                               : "");
}

namespace {

std::string Label(const std::string& v) {
  std::string out;
  for (char ch : v) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '"') out += "\\\"";
    else if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out;
}

}  // namespace

std::string QualifyMetrics(const std::vector<Check>& checks) {
  std::string out;
  auto family = [&](const char* name, const char* help, auto value, bool (*has)(const Check&)) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " gauge\n");
    for (const Check& c : checks) {
      if (!has(c)) continue;
      absl::StrAppend(&out, name, "{host=\"", Label(c.host), "\",device=\"", Label(c.device),
                      "\",probe=\"", Label(c.probe), "\"} ", absl::StrFormat("%.17g", value(c)),
                      "\n");
    }
  };
  family("gpubench_qualify_check", "Outcome of a gpubench qualify check: 1 pass, 0 fail, -1 unknown.",
         [](const Check& c) {
           return c.outcome == Outcome::kPass ? 1.0 : c.outcome == Outcome::kFail ? 0.0 : -1.0;
         },
         [](const Check&) { return true; });
  family("gpubench_qualify_value", "The checked figure, in the probe's unit.",
         [](const Check& c) { return c.value; }, [](const Check& c) { return c.value > 0; });
  family("gpubench_qualify_bound", "The envelope's bound the figure is checked against.",
         [](const Check& c) { return c.envelope.bound(); },
         [](const Check& c) { return c.has_envelope; });
  return out;
}

}  // namespace gpubench::report
