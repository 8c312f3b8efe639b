#include "report/profile_diff.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_format.h"

namespace gpubench::report {

ProfileDiff DiffWindows(const ProfiledWindow& a, const ProfiledWindow& b) {
  ProfileDiff diff;
  for (const ProfiledWindow* w : {&a, &b}) {
    if (w->steps <= 0 || !(w->samples_per_step > 0)) return diff;
  }
  std::map<std::string, std::pair<const KernelRow*, const KernelRow*>> names;
  for (const KernelRow& r : a.rows) names[r.name].first = &r;
  for (const KernelRow& r : b.rows) names[r.name].second = &r;
  for (const auto& [name, sides] : names) {
    DiffRow row;
    row.name = name;
    const auto [ra, rb] = sides;
    row.known = (ra != nullptr || a.complete) && (rb != nullptr || b.complete);
    if (ra != nullptr) {
      row.a_calls_per_step = static_cast<double>(ra->count) / a.steps;
      row.a_us_per_call = ra->count > 0 ? ra->total_us / ra->count : 0;
    }
    if (rb != nullptr) {
      row.b_calls_per_step = static_cast<double>(rb->count) / b.steps;
      row.b_us_per_call = rb->count > 0 ? rb->total_us / rb->count : 0;
    }
    if (row.known) {
      const double us_a = ra != nullptr ? ra->total_us / a.Samples() : 0;
      const double us_b = rb != nullptr ? rb->total_us / b.Samples() : 0;
      row.delta_us_per_sample = us_b - us_a;
      diff.a_us_per_sample += us_a;
      diff.b_us_per_sample += us_b;
    }
    diff.rows.push_back(std::move(row));
  }
  const double total = diff.b_us_per_sample - diff.a_us_per_sample;
  for (const DiffRow& r : diff.rows) diff.moved_us_per_sample += std::abs(r.delta_us_per_sample);
  diff.cancels = std::abs(total) < kCancels * diff.moved_us_per_sample;
  for (DiffRow& r : diff.rows) {
    if (r.known && total != 0 && !diff.cancels) r.share = r.delta_us_per_sample / total;
  }
  std::stable_sort(diff.rows.begin(), diff.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    if (x.known != y.known) return x.known;
    return std::abs(x.delta_us_per_sample) > std::abs(y.delta_us_per_sample);
  });
  return diff;
}

DiffCells CellsOf(const DiffRow& r, double share_of) {
  auto calls = [&](double n) {
    if (!r.known && n == 0) return std::string("-");
    return n >= 100 ? absl::StrFormat("%.0f", n) : absl::StrFormat("%.3g", n);
  };
  auto us = [&](double calls_per_step, double us_per_call) {
    return !r.known && calls_per_step == 0 ? std::string("-")
                                           : absl::StrFormat("%.2f", us_per_call);
  };
  const double share = share_of != 0 ? r.delta_us_per_sample / share_of : r.share;
  return {calls(r.a_calls_per_step),
          us(r.a_calls_per_step, r.a_us_per_call),
          calls(r.b_calls_per_step),
          us(r.b_calls_per_step, r.b_us_per_call),
          r.known ? absl::StrFormat("%+.2f", r.delta_us_per_sample) : "?",
          r.known && share != 0 ? absl::StrFormat("%.1f%%", 100 * share) : "-"};
}

std::vector<std::string> ShortNames(const std::vector<DiffRow>& rows, size_t n) {
  std::vector<std::string> names;
  std::map<std::string, int> seen;
  for (size_t i = 0; i < n && i < rows.size(); ++i) {
    ++seen[names.emplace_back(ShortKernelName(rows[i].name))];
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (seen[names[i]] > 1) names[i] = rows[i].name;
  }
  return names;
}

std::string DescribeChange(const std::string& name, double delta_us_per_sample, double share) {
  std::string text = absl::StrFormat("%s %+.2f us a sample", ShortKernelName(name),
                                     delta_us_per_sample);
  if (share != 0) absl::StrAppendFormat(&text, ", %.1f%% of the profiled difference", 100 * share);
  return text;
}

std::string BiggestChange(const v1::HistoryComparison& h) {
  if (h.operator_changes().empty()) return "";
  const v1::OperatorChange& c = h.operator_changes(0);
  return DescribeChange(c.name(), c.delta_us_per_sample(), c.share());
}

namespace {

double SamplesPerStep(const v1::RunResult& r) {
  if (r.iterations() <= 0 || r.measured_ms() <= 0) return 0;
  const double samples = r.throughput_samples_per_s() * r.measured_ms() / 1e3 / r.iterations();
  const double whole = std::round(samples);
  return whole > 0 && std::abs(samples - whole) < 0.01 * whole ? whole : samples;
}

}  // namespace

ProfiledWindow WindowOf(const v1::Run& run, bool by_launching_operator) {
  const v1::RunResult& r = run.result();
  ProfiledWindow w;
  w.steps = r.profiled_iterations();
  w.samples_per_step = SamplesPerStep(r) / std::max(1, run.config().world_size());
  double shares = 0;
  for (const v1::OperatorStat& op : by_launching_operator ? r.profile().device_operators()
                                                          : r.profile().top_operators()) {
    w.rows.push_back({op.name(), op.count(), op.self_time_us()});
    shares += op.share();
  }
  w.complete = shares > 0.999;
  return w;
}

}  // namespace gpubench::report
