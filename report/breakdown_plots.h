// Where a job's profiled time went, and what changed between its profiled
// runs, in the HTML report: a stacked bar per profiled run (the temporal
// breakdown of its device trace by HTA's rules, report/trace_breakdown.h;
// and, for every profiled run, CPU or GPU, its profile's operator
// categories), and each profiled run's diff against the job's first
// (report/profile_diff.h), as compare --explain gives it.
#ifndef GPUBENCH_REPORT_BREAKDOWN_PLOTS_H_
#define GPUBENCH_REPORT_BREAKDOWN_PLOTS_H_

#include <string>

#include "report/facets.h"

namespace gpubench::report::internal {

// The charts and the diff table, empty where no run was profiled; a diff
// needs two profiled runs whose times compare (both device times or both
// CPU times). Thread-safe (no state).
std::string BreakdownPlots(const JobView& view);

}  // namespace gpubench::report::internal

#endif  // GPUBENCH_REPORT_BREAKDOWN_PLOTS_H_
