// The plots of one job in the HTML report: which charts its runs support and
// the points, bars and labels of each.
#ifndef GPUBENCH_REPORT_PLOTS_H_
#define GPUBENCH_REPORT_PLOTS_H_

#include <string>

#include "report/facets.h"

namespace gpubench::report::internal {

// The <figure>s of every plot view's runs support, empty when none:
// throughput, latency (p50, p95) and peak memory against batch size per group
// of otherwise equal succeeded runs; speedup by device, against a CPU run where
// there is one; optimised (fp16/bf16/tf32, channels_last, CUDA graph) against
// baseline; data-wait share against loader threads; the top operators of each
// profiled run (at most 8 charts, then a note); collectives' bus bandwidth and
// time per operation against message size; ddp's samples/s against ranks
// beside the ideal. A line needs two points at
// different x, a bar chart one bar. Thread-safe (no state).
std::string JobPlots(const JobView& view);

// Stable colours per operator category across every chart of the page.
const char* CategoryColor(const std::string& category);

}  // namespace gpubench::report::internal

#endif  // GPUBENCH_REPORT_PLOTS_H_
