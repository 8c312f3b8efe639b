// A failed check confirmed by a re-run of the suite before it drains a node
// (report/qualify.h).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "report/fleet_rank.h"
#include "report/qualify.h"

namespace gpubench::report {

namespace {

// A probe of the suite that `gpubench probe` runs (level 1): re-run cheaply.
bool InSuite(const std::string& probe) {
  for (const ProbeInfo& info : ProbeSuite()) {
    if (probe == info.name) return info.level == 1 && !info.held;
  }
  return false;
}

}  // namespace

bool NeedsConfirming(const std::vector<Check>& checks) {
  for (const Check& c : checks) {
    if (c.outcome == Outcome::kFail && !c.of_host && InSuite(c.probe)) return true;
  }
  return false;
}

void ConfirmFails(const std::vector<Check>& rerun, std::vector<Check>* checks) {
  std::map<std::pair<std::string, std::string>, const Check*> again;
  for (const Check& c : rerun) again[{c.device, c.probe}] = &c;
  for (Check& c : *checks) {
    if (c.outcome != Outcome::kFail || c.of_host || !InSuite(c.probe)) continue;
    auto it = again.find({c.device, c.probe});
    if (it == again.end()) {
      absl::StrAppend(&c.why, "; not in its re-run: unconfirmed");
      continue;
    }
    const Check& second = *it->second;
    const std::string figure = absl::StrCat(ProbeFigureText(second.value), " ", second.unit);
    switch (second.outcome) {
      case Outcome::kFail:
        absl::StrAppend(&c.why, "; its re-run fails too (", figure, ")");
        break;
      case Outcome::kUnknown:
        absl::StrAppend(&c.why, "; its re-run could not be judged (", second.why,
                        "): unconfirmed");
        break;
      case Outcome::kPass: {
        const std::string first = c.why;
        c = second;
        c.why = absl::StrCat("passes its re-run (", figure, "); the first run: ", first);
        break;
      }
    }
  }
}

}  // namespace gpubench::report
