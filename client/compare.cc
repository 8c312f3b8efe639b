#include "client/compare.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpubench::client {
namespace {

// 2 / C(n1 + n2, n1): the smallest two-sided p the U test can give.
double SmallestP(int n1, int n2) {
  double c = 1;
  for (int k = 1; k <= n1; ++k) c = c * (n2 + k) / k;
  return std::min(1.0, 2 / c);
}

// 1000 / throughput: time per sample over the run's measured windows.
double ThroughputMs(const v1::Run& run) {
  const double tput = run.result().throughput_samples_per_s();
  return tput > 0 ? 1000 / tput : 0;
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
  const double batch = run.config().batch_size() > 0 ? run.config().batch_size() : 1;
  const auto& device = run.samples().device_ms();
  const auto& samples = device.empty() ? run.samples().host_ms() : device;
  if (!samples.empty()) {
    std::vector<double> per_sample;
    per_sample.reserve(samples.size());
    for (float ms : samples) per_sample.push_back(ms / batch);
    return stats::Median(std::move(per_sample));
  }
  return ThroughputMs(run);
}

Comparison CompareRuns(const std::vector<const v1::Run*>& baseline,
                       const std::vector<const v1::Run*>& candidate, const CompareRule& rule) {
  // One kind of figure for every run: a median of iterations is not a
  // throughput over a window, so where a run's samples are gone (retention,
  // or not fetched) every run is taken by its throughput.
  bool all_samples = true;
  for (const auto* side : {&baseline, &candidate}) {
    for (const v1::Run* run : *side) {
      all_samples = all_samples && (run->samples().device_ms_size() > 0 ||
                                    run->samples().host_ms_size() > 0);
    }
  }
  std::vector<double> figures[2];
  int left_out = 0;
  for (int side = 0; side < 2; ++side) {
    for (const v1::Run* run : side == 0 ? baseline : candidate) {
      const double ms = all_samples ? RunTimePerSampleMs(*run) : ThroughputMs(*run);
      if (run->state() != v1::RUN_STATE_SUCCEEDED || !(ms > 0) || !std::isfinite(ms)) {
        ++left_out;
        continue;
      }
      figures[side].push_back(ms);
    }
  }
  Comparison c = CompareRepetitions(figures[0], figures[1], rule);
  if (left_out > 0) {
    c.why = absl::StrCat(c.why, c.why.empty() ? "" : "; ", left_out,
                         left_out == 1 ? " run" : " runs", " left out (not succeeded)");
  }
  return c;
}

}  // namespace gpubench::client
