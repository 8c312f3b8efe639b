#include "common/verdict.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/contention.h"

namespace gpubench::verdict {
namespace {

// 2 / C(n1 + n2, n1): the smallest two-sided p the U test can give.
double SmallestP(int n1, int n2) {
  double c = 1;
  for (int k = 1; k <= n1; ++k) c = c * (n2 + k) / k;
  return std::min(1.0, 2 / c);
}

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100 * fraction); }

}  // namespace

std::string VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kFaster: return "faster";
    case Verdict::kSlower: return "slower";
    case Verdict::kNoDifference: return "no significant difference";
    case Verdict::kTooNoisy: return "too noisy to tell";
    case Verdict::kNotComparable: return "not comparable";
  }
  return "";
}

Comparison CompareRepetitions(const std::vector<double>& baseline_ms,
                              const std::vector<double>& candidate_ms, const CompareRule& rule) {
  Comparison c;
  const int nb = baseline_ms.size(), nc = candidate_ms.size();
  c.baseline_runs = nb;
  c.candidate_runs = nc;
  if (nb == 0 || nc == 0) {
    c.why = "no run on a side";
    return c;
  }
  auto rank = stats::MannWhitneyU(baseline_ms, candidate_ms);
  auto speedup = stats::RatioOfMedians(baseline_ms, candidate_ms);
  if (!rank.ok() || !speedup.ok()) {
    c.why = std::string((rank.ok() ? speedup.status() : rank.status()).message());
    return c;
  }
  c.speedup = *speedup;
  const double r = c.speedup.value;
  const double change = std::fabs(r - 1);
  bool interval_excludes_1 = c.speedup.ci95.low > 1 || c.speedup.ci95.high < 1;
  const bool one_new = nc == 1 && nb >= 3, one_old = nb == 1 && nc >= 3;
  if (nb >= 2 && nc >= 2) {
    c.p_value = rank->p_value;
    const double cv_b = stats::CoefficientOfVariation(baseline_ms);
    const double cv_c = stats::CoefficientOfVariation(candidate_ms);
    c.noise = std::sqrt(((nb - 1) * cv_b * cv_b + (nc - 1) * cv_c * cv_c) / (nb + nc - 2));
    c.resolution = stats::TCritical95(nb + nc - 2) * c.noise * std::sqrt(1.0 / nb + 1.0 / nc);
  } else if (one_new || one_old) {
    // One run against several (a run against its history): does it lie
    // outside where the next repetition would fall?
    const std::vector<double>& many = one_new ? baseline_ms : candidate_ms;
    const stats::PredictionTest p =
        stats::NewValueAgainstHistory(one_new ? candidate_ms[0] : baseline_ms[0], many);
    c.p_value = p.p_value;
    c.noise = p.noise;
    const int n = many.size();
    c.resolution = stats::TCritical95(n - 1) * c.noise * std::sqrt(1 + 1.0 / n);
    interval_excludes_1 = true;  // the prediction test is the interval
  } else {
    c.p_value = rank->p_value;
    c.verdict = Verdict::kTooNoisy;
    c.why = "one run on a side: how much runs vary is unknown (measure with compare --repeat 5)";
    return c;
  }
  if (c.p_value < rule.alpha && change > rule.min_effect && interval_excludes_1) {
    c.verdict = r > 1 ? Verdict::kFaster : Verdict::kSlower;
    return c;
  }
  if (change <= rule.min_effect && c.resolution <= rule.min_effect) {
    c.verdict = Verdict::kNoDifference;
    c.why = absl::StrCat("within ", Percent(std::max(change, c.resolution)));
    return c;
  }
  c.verdict = Verdict::kTooNoisy;
  if (!one_new && !one_old && SmallestP(nb, nc) >= rule.alpha) {
    c.why = absl::StrCat(nb, " and ", nc, " runs can never reach p < ", rule.alpha,
                         " (5 a side can)");
  } else {
    c.why = absl::StrCat("runs vary by ", Percent(c.noise), "; changes under ",
                         Percent(c.resolution), " cannot be told apart");
  }
  return c;
}

double RunTimePerSampleMs(const v1::Run& run) {
  const double tput = run.result().throughput_samples_per_s();
  return tput > 0 ? 1000 / tput : 0;
}

Comparison CompareRuns(const std::vector<const v1::Run*>& baseline,
                       const std::vector<const v1::Run*>& candidate, const CompareRule& rule) {
  std::vector<double> figures[2];
  int left_out = 0, contended = 0;
  for (int side = 0; side < 2; ++side) {
    for (const v1::Run* run : side == 0 ? baseline : candidate) {
      const double ms = RunTimePerSampleMs(*run);
      if (run->state() != v1::RUN_STATE_SUCCEEDED || !(ms > 0) || !std::isfinite(ms)) {
        ++left_out;
        continue;
      }
      // The sides are the user's choice: a contended or throttled run stays
      // (the nightly rule and --history leave such runs out of a baseline),
      // and is named.
      if (!NotABaselineBecause(*run).empty()) ++contended;
      figures[side].push_back(ms);
    }
  }
  Comparison c = CompareRepetitions(figures[0], figures[1], rule);
  auto note = [&c](int n, const char* what) {
    if (n == 0) return;
    c.why = absl::StrCat(c.why, c.why.empty() ? "" : "; ", n, n == 1 ? " run " : " runs ", what);
  };
  note(left_out, "left out (not succeeded)");
  note(contended, "contended or throttled (see show)");
  return c;
}

}  // namespace gpubench::verdict
