#include "client/compare.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace gpubench::client {

std::string VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kFaster: return "faster";
    case Verdict::kSlower: return "slower";
    case Verdict::kNoDifference: return "no significant difference";
    case Verdict::kNotComparable: return "not comparable";
  }
  return "";
}

Comparison CompareSamples(const std::vector<double>& baseline_ms,
                          const std::vector<double>& candidate_ms, const CompareRule& rule) {
  Comparison c;
  c.baseline_samples = baseline_ms.size();
  c.candidate_samples = candidate_ms.size();
  if (baseline_ms.size() < 2 || candidate_ms.size() < 2) {
    c.why = "fewer than 2 samples on a side";
    return c;
  }
  auto rank = stats::MannWhitneyU(baseline_ms, candidate_ms);
  auto speedup = stats::RatioOfMedians(baseline_ms, candidate_ms);
  if (!rank.ok() || !speedup.ok()) {
    c.why = std::string((rank.ok() ? speedup.status() : rank.status()).message());
    return c;
  }
  c.p_value = rank->p_value;
  c.speedup = *speedup;
  const double r = c.speedup.value;
  // Significant, beyond the smallest effect worth reporting, and with an
  // interval that does not straddle 1.
  const bool significant = c.p_value < rule.alpha && std::fabs(r - 1) > rule.min_effect &&
                           (c.speedup.ci95.low > 1 || c.speedup.ci95.high < 1);
  c.verdict = !significant ? Verdict::kNoDifference
              : r > 1      ? Verdict::kFaster
                           : Verdict::kSlower;
  return c;
}

std::vector<double> TimePerSampleMs(const v1::Run& run) {
  const double batch = run.config().batch_size() > 0 ? run.config().batch_size() : 1;
  const auto& device = run.samples().device_ms();
  const auto& host = run.samples().host_ms();
  std::vector<double> out;
  for (float ms : device.empty() ? host : device) out.push_back(ms / batch);
  return out;
}

Comparison CompareRuns(const v1::Run& baseline, const v1::Run& candidate,
                       const CompareRule& rule) {
  for (const v1::Run* run : {&baseline, &candidate}) {
    if (run->state() != v1::RUN_STATE_SUCCEEDED) {
      Comparison c;
      c.why = absl::StrCat("run ", run->run_id(), " did not succeed");
      return c;
    }
  }
  Comparison c = CompareSamples(TimePerSampleMs(baseline), TimePerSampleMs(candidate), rule);
  if (c.verdict == Verdict::kNotComparable) {
    c.why = "no per-iteration samples (pruned by retention?)";
  }
  return c;
}

}  // namespace gpubench::client
