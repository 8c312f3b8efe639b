// The search for the largest arrival rate a server sustains within its
// latency targets (gpubench submit --find max-rate, as MLPerf's Server
// scenario asks): each point one serving run at a Poisson rate, judged by
// its p99s against the run's SLOs. Doubling (or halving) brackets the
// answer between a rate that met them and one that did not; the geometric
// midpoint then narrows the bracket until its ends are within a tolerance.
// Plain data; thread-compatible.
#ifndef GPUBENCH_REPORT_RATE_SEARCH_H_
#define GPUBENCH_REPORT_RATE_SEARCH_H_

#include <optional>
#include <string>
#include <vector>

#include "gpubench/v1/result.pb.h"

namespace gpubench::report {

// Whether a serving run met every SLO of its config (ServeLoad.slo_*) at
// its p99: it succeeded, every measured request finished (not cut short by
// its time bound), and each p99 given a bound is within it. *why says
// which did not ("ttft p99 240.1 ms > 200 ms"), or that all did.
bool MeetsSlos(const v1::Run& run, std::string* why);

class RateSearch {
 public:
  // start: the first rate tried (requests a second, > 0). The search ends
  // when the bracket's high end is within 1 + tolerance of its low end,
  // after max_points runs, or where no rate above min_rate meets them.
  explicit RateSearch(double start, double tolerance = 0.1, int max_points = 12,
                      double min_rate = 0.01);

  // The next rate to run; nullopt when the search is over.
  std::optional<double> Next() const;
  // A run's verdict at rate.
  void Add(double rate, bool meets);

  // The largest rate that met the SLOs with no lower rate failing them
  // below it, and the lowest that failed above it (0: none).
  double best() const { return best_; }
  double failed_above() const { return failed_above_; }
  int points() const { return points_; }

 private:
  const double start_, tolerance_, min_rate_;
  const int max_points_;
  std::vector<double> met_, failed_;
  double best_ = 0, failed_above_ = 0;
  int points_ = 0;
};

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_RATE_SEARCH_H_
