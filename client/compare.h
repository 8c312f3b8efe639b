// Run-against-run comparison with a verdict a CI gate can use. Each side's
// per-iteration device times, divided by the batch size, are its time per
// sample; a Mann-Whitney U test on them gives the p-value, and the ratio of
// their medians (baseline over candidate: > 1 means the candidate is faster)
// with a bootstrap 95% interval gives the size. Thread-safe (no state).
#ifndef GPUBENCH_CLIENT_COMPARE_H_
#define GPUBENCH_CLIENT_COMPARE_H_

#include <string>
#include <vector>

#include "common/stats.h"
#include "gpubench/v1/result.pb.h"

namespace gpubench::client {

struct CompareRule {
  double alpha = 0.05;       // significance level of the U test
  double min_effect = 0.01;  // smaller relative changes are "no difference"
};

enum class Verdict { kFaster, kSlower, kNoDifference, kNotComparable };

// "faster", "slower", "no significant difference", "not comparable".
std::string VerdictName(Verdict v);

struct Comparison {
  Verdict verdict = Verdict::kNotComparable;
  stats::Ratio speedup;  // median time per sample, baseline / candidate
  double p_value = 1;
  int baseline_samples = 0;
  int candidate_samples = 0;
  std::string why;  // for kNotComparable
};

// Compares per-sample times (ms, lower is faster). Either side with fewer
// than 2 values is kNotComparable.
Comparison CompareSamples(const std::vector<double>& baseline_ms,
                          const std::vector<double>& candidate_ms, const CompareRule& rule);

// A run's time per sample (device ms / batch size) of each iteration; empty
// when the run has no samples (not asked for, or pruned by retention).
std::vector<double> TimePerSampleMs(const v1::Run& run);

// Compares two runs that carry their samples. A run that did not succeed, or
// has no samples, is kNotComparable with the reason.
Comparison CompareRuns(const v1::Run& baseline, const v1::Run& candidate,
                       const CompareRule& rule);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_COMPARE_H_
