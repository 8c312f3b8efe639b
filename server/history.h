// The regression rule for scheduled runs: a run against the median of the
// last K succeeded runs of the same config on the same schedule.
#ifndef GPUBENCH_SERVER_HISTORY_H_
#define GPUBENCH_SERVER_HISTORY_H_

#include <vector>

#include "gpubench/v1/result.pb.h"

namespace gpubench::server {

struct HistoryRule {
  double threshold = 0.05;  // relative change that counts
  double alpha = 0.05;      // significance level against the history's own noise
  int min_history = 3;      // fewer past runs: no verdict
};

// value and history are throughputs (samples/s; higher is better); each
// past run is a repetition, so the history says how much this config's runs
// vary on this host. The verdict is the rule of every view
// (verdict::CompareRepetitions, this run against its history, min_effect the
// threshold): REGRESSED or IMPROVED when beyond the threshold and outside the
// history's 1 - alpha prediction interval, NO_CHANGE when both the change and
// what the history can resolve are within the threshold, TOO_NOISY
// otherwise, INSUFFICIENT_HISTORY with fewer than min_history past runs.
v1::HistoryComparison CompareWithHistory(double value, const std::vector<double>& history,
                                         const HistoryRule& rule);

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_HISTORY_H_
