#include "report/rate_search.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gpubench::report {
namespace {

constexpr double kMaxRate = 1000000;  // ServeLoad.request_rate's bound

}  // namespace

bool MeetsSlos(const v1::Run& run, std::string* why) {
  if (run.state() != v1::RUN_STATE_SUCCEEDED || !run.result().has_serve()) {
    *why = absl::StrCat("the run did not succeed: ", run.error());
    return false;
  }
  const v1::ServeResult& s = run.result().serve();
  if (run.result().stopped_at_max_time() || s.requests() < s.requests_asked()) {
    *why = absl::StrCat("only ", s.requests(), " of ", s.requests_asked(),
                        " measured requests finished within max_time_ms");
    return false;
  }
  const v1::ServeLoad& load = run.config().serve();
  const struct {
    const char* name;
    double bound, p99;
  } kBounds[] = {{"ttft", load.slo_ttft_ms(), s.ttft().p99_ms()},
                 {"tpot", load.slo_tpot_ms(), s.tpot().p99_ms()},
                 {"e2e", load.slo_e2e_ms(), s.e2e().p99_ms()}};
  std::vector<std::string> over, within;
  for (const auto& b : kBounds) {
    if (b.bound <= 0) continue;
    const std::string text = absl::StrFormat("%s p99 %.4g ms %s %g ms", b.name, b.p99,
                                             b.p99 <= b.bound ? "<=" : ">", b.bound);
    (b.p99 <= b.bound ? within : over).push_back(text);
  }
  *why = absl::StrJoin(over.empty() ? within : over, ", ");
  return over.empty();
}

RateSearch::RateSearch(double start, double tolerance, int max_points, double min_rate)
    : start_(start), tolerance_(tolerance), min_rate_(min_rate), max_points_(max_points) {}

std::optional<double> RateSearch::Next() const {
  if (points_ >= max_points_) return std::nullopt;
  if (points_ == 0) return start_;
  if (failed_above_ == 0) {
    // Every rate so far met them: double, up to the schema's bound.
    return best_ >= kMaxRate ? std::nullopt : std::optional<double>(std::min(best_ * 2, kMaxRate));
  }
  if (best_ == 0) {
    // Every rate so far failed: halve, down to the floor.
    const double lower = failed_above_ / 2;
    return lower < min_rate_ ? std::nullopt : std::optional<double>(lower);
  }
  if (failed_above_ <= best_ * (1 + tolerance_)) return std::nullopt;
  return std::sqrt(best_ * failed_above_);
}

void RateSearch::Add(double rate, bool meets) {
  ++points_;
  (meets ? met_ : failed_).push_back(rate);
  // The bracket: the lowest rate that failed, and the highest below it
  // that met them (one that met above a failure is noise or a load that
  // is not monotone: the bracket keeps the failure).
  failed_above_ = 0;
  for (double r : failed_) {
    if (failed_above_ == 0 || r < failed_above_) failed_above_ = r;
  }
  best_ = 0;
  for (double r : met_) {
    if ((failed_above_ == 0 || r < failed_above_) && r > best_) best_ = r;
  }
}

}  // namespace gpubench::report
