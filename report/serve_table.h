// A job's serving runs (mode serve) as one table, for `gpubench show` and
// the HTML report alike, and the report's two serving plots: output tokens
// a second against tokens a second per user (the throughput-interactivity
// curve, a point per concurrency), and the p99 latencies against the
// request rate. Thread-safe (no state).
#ifndef GPUBENCH_REPORT_SERVE_TABLE_H_
#define GPUBENCH_REPORT_SERVE_TABLE_H_

#include <string>
#include <vector>

#include "gpubench/v1/result.pb.h"
#include "report/facets.h"
#include "report/language_model_table.h"

namespace gpubench::report {

// What the columns mean, in a sentence under the table.
extern const char kServingLegend[];
extern const char kSlicesLegend[];

// One row per measured serving run, in order; no rows where there is none.
// A percentile's 95% interval follows it in brackets where the requests
// bound it (docs/serving.md).
LanguageModelTable ServingFigures(const std::vector<const v1::Run*>& runs);

// A row per time slice of each measured serving run that has them
// (ServeLoad.slice_ms), in order: drift over the window.
LanguageModelTable ServingSlices(const std::vector<const v1::Run*>& runs);

namespace internal {

// The table, then the plots, as HTML; empty without a serving run.
std::string ServingPlots(const JobView& view);

}  // namespace internal

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_SERVE_TABLE_H_
