// The one decision rule of every view that says "faster" or "slower":
// `compare`, `show`'s device speedups, the report's speedup charts and the
// nightly rule all call CompareRepetitions, so that no view calls a change
// what another calls noise. The unit of evidence is a repetition: a run (its
// own worker process, at its own time), never an iteration, whose
// iterations share everything that varies between processes (clocks,
// cuDNN's algorithm picks, what else ran). Each run gives one figure, its
// time per sample over its measured window (1 / throughput); a Mann-Whitney
// U test on the figures of the two sides (exact at these sizes), or one run
// against several by a prediction interval, gives the p-value, and the ratio
// of their medians (baseline over candidate: > 1 means the candidate is
// faster) with a bootstrap 95% interval gives the size. Where the runs vary
// more than the change could be told apart from, or one run stands on each
// side, the verdict says so. Thread-safe (no state).
#ifndef GPUBENCH_COMMON_VERDICT_H_
#define GPUBENCH_COMMON_VERDICT_H_

#include <string>
#include <vector>

#include "common/stats.h"
#include "gpubench/v1/result.pb.h"

namespace gpubench::verdict {

struct CompareRule {
  double alpha = 0.05;       // significance level of the test
  double min_effect = 0.01;  // smaller relative changes are "no difference"
};

enum class Verdict { kFaster, kSlower, kNoDifference, kTooNoisy, kNotComparable };

// "faster", "slower", "no significant difference", "too noisy to tell",
// "not comparable".
std::string VerdictName(Verdict v);

struct Comparison {
  Verdict verdict = Verdict::kNotComparable;
  stats::Ratio speedup;  // median time per sample, baseline / candidate
  double p_value = 1;
  int baseline_runs = 0;
  int candidate_runs = 0;
  // How much the runs of one side vary: the pooled coefficient of variation
  // of the run figures (0 with one run a side: unknown).
  double noise = 0;
  // The smallest relative change these runs can tell apart from noise (the
  // half-width of a 95% interval on the difference); 0 when unknown.
  double resolution = 0;
  std::string why;  // why not comparable, why too noisy, what "no difference" bounds
  // The speedup has an interval of its own: two or more runs a side.
  bool has_interval() const { return baseline_runs >= 2 && candidate_runs >= 2; }
};

// Compares one figure per run, time per sample in ms (lower is faster).
// - not comparable: a side with no runs;
// - faster/slower: p < alpha, the change beyond min_effect, and its interval
//   excluding 1 (one run against three or more: outside the others'
//   prediction interval);
// - no significant difference: the change and the resolution both within
//   min_effect (a change of min_effect would have been seen);
// - too noisy to tell: otherwise (one run a side, too few runs to reach
//   alpha, or runs that vary more than the change).
Comparison CompareRepetitions(const std::vector<double>& baseline_ms,
                              const std::vector<double>& candidate_ms, const CompareRule& rule);

// A run's figure: its time per sample over the measured window, 1000 /
// throughput (0 without one). Not the median iteration: on the H100 a
// matmul's runs varied 0.6-0.9% by throughput and 1.5-2.4% by median
// iteration time (bench/results/2026-11-25-verdicts.txt).
double RunTimePerSampleMs(const v1::Run& run);

// Compares the repetitions of one config on each side. Runs that did not
// succeed are left out (why says so); a side left with none is not
// comparable. A contended or throttled run stays (the sides are the
// caller's choice) and is named in why.
Comparison CompareRuns(const std::vector<const v1::Run*>& baseline,
                       const std::vector<const v1::Run*>& candidate, const CompareRule& rule);

}  // namespace gpubench::verdict

#endif  // GPUBENCH_COMMON_VERDICT_H_
