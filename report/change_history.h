// Change points over a family of series: a GPU's probe sessions (gpubench
// fleet), a schedule's nightly runs of a config (gpubench regressions). Each
// series gets stats::FindChangePoints (E-divisive means with a t-test and a
// minimum segment, as Apache Otava's); the points of the whole family are
// then kept by Benjamini-Hochberg at q, so that among the points a command
// names, the expected share of false ones stays under q however many series
// it looked at. Each kept point says when (the first run after it), the
// median before and after, and what the environment fingerprint changed
// from the last run before to the first after. Plain data; thread-safe.
#ifndef GPUBENCH_REPORT_CHANGE_HISTORY_H_
#define GPUBENCH_REPORT_CHANGE_HISTORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/change_points.h"
#include "gpubench/v1/result.pb.h"

namespace gpubench::report {

// One measurement of a series: a probe session's best run, a night's runs
// of a config (their median).
struct SeriesPoint {
  double value = 0;
  std::string run_id;  // the run it came from (a night's first)
  int64_t start_ns = 0;
  v1::Fingerprint fingerprint;
  // Its probe session (the job): every device and pair of a host's session
  // share one.
  std::string session;
};

struct Series {
  std::string host;
  std::string what;  // "cuda:0 matmul_bf16", "nightly: resnet50 b32 bf16"
  std::string unit;  // "TFLOP/s", "samples/s"
  bool higher_is_better = true;
  std::vector<SeriesPoint> points;  // oldest first
};

struct SeriesChange {
  const Series* series = nullptr;
  stats::ChangePoint point;
  const SeriesPoint* first_after = nullptr;
  // FingerprintChanges from the last point before to the first after, ""
  // where nothing differs.
  std::string environment;
  // The level moved the bad way (down for a throughput).
  bool worse() const;
};

struct ChangeFamily {
  stats::ChangePointRule rule;
  double q = 0.05;
  int series = 0;     // series looked at
  int found = 0;      // points FindChangePoints gave over them
  std::vector<SeriesChange> kept;  // those Benjamini-Hochberg keeps, worst first
};

// The change points of every series, kept over the family at q. The
// family's series must outlive the result (SeriesChange points into them).
ChangeFamily FindChanges(const std::vector<Series>& family, const stats::ChangePointRule& rule,
                         double q = 0.05);

// How the family was judged, one line: "change points: 1 in 12 series
// (E-divisive, t-test p < 0.001, 3 points a side; Benjamini-Hochberg q 0.05
// over the family: 1 of 2 kept)".
std::string DescribeFamily(const ChangeFamily& family);

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_CHANGE_HISTORY_H_
