// What changed between two profiled windows (compare --explain): per
// operator or kernel, calls a step and time a call on each side, and what
// it adds to the time per sample, sorted by its share of the difference.
// Torch-free; thread-safe (no state).
#ifndef GPUBENCH_REPORT_PROFILE_DIFF_H_
#define GPUBENCH_REPORT_PROFILE_DIFF_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gpubench/v1/result.pb.h"
#include "report/trace_breakdown.h"

namespace gpubench::report {

// One side: a profiled window's rows (name, calls, total µs over the
// window) and what the window covered.
struct ProfiledWindow {
  int64_t steps = 0;            // profiled steps
  double samples_per_step = 0;  // the run's samples a step
  std::vector<KernelRow> rows;
  // Every name that ran is in rows (a whole trace), not a top-N table in
  // which a name left out may still have run.
  bool complete = true;
  double Samples() const { return static_cast<double>(steps) * samples_per_step; }
};

struct DiffRow {
  std::string name;
  // Calls a step and µs a call; a side whose incomplete table lacks the
  // name is unknown (known false) and its figures 0.
  double a_calls_per_step = 0, a_us_per_call = 0, b_calls_per_step = 0, b_us_per_call = 0;
  bool known = true;
  double delta_us_per_sample = 0;  // B's µs a sample less A's
  // delta_us_per_sample over the rows' total difference; 0 where that is 0
  // or the rows cancel out (ProfileDiff::cancels).
  double share = 0;
};

// Rows whose net difference is under this share of what they moved in all
// cancel out: a share of the net (+141 us of +0.50: 28,312%) says nothing.
inline constexpr double kCancels = 0.1;

struct ProfileDiff {
  double a_us_per_sample = 0, b_us_per_sample = 0;  // the known rows' totals
  double moved_us_per_sample = 0;  // the known rows' |delta_us_per_sample| summed
  bool cancels = false;  // |B - A| under kCancels x moved: every share 0
  std::vector<DiffRow> rows;  // by |delta_us_per_sample|, largest first; the unknown last
};

// The diff of B against A. A side without steps or samples gives no rows.
ProfileDiff DiffWindows(const ProfiledWindow& a, const ProfiledWindow& b);

// A row as a table shows it: A's calls a step and µs a call, B's, the
// delta (signed) and its share (of the rows' difference, or of another
// whole where share_of is not 0); "-" for a side whose top-N table left the
// name out, "?" for its unknown delta, "-" for a share of 0.
struct DiffCells {
  std::string a_calls, a_us, b_calls, b_us, delta, share;
};
DiffCells CellsOf(const DiffRow& r, double share_of = 0);

// The first n rows' names for a table: short (ShortKernelName), unless two
// would read the same.
std::vector<std::string> ShortNames(const std::vector<DiffRow>& rows, size_t n);

// One change in words: "gpubench::next_batch +308.48 us a sample, 96.6% of
// the profiled difference" (a kernel's name shortened; no share where it is
// 0).
std::string DescribeChange(const std::string& name, double delta_us_per_sample, double share);

// The first of a history comparison's operator changes in words
// (DescribeChange), "" where it has none.
std::string BiggestChange(const v1::HistoryComparison& h);

// A run's profiled window as its profile's top table gives it: its
// profiled steps, its samples a step (its throughput over its steps' rate,
// whole where within 1% of a whole number; a distributed run's over its
// world size, since its profile and each trace are one rank's), and
// complete where the table's shares add up to the whole window;
// by_launching_operator: its device time by launching operator
// (ProfileSummary.device_operators) in place of its top table.
ProfiledWindow WindowOf(const v1::Run& run, bool by_launching_operator = false);

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_PROFILE_DIFF_H_
