// The HTML report of `gpubench report`: jobs, their runs and plots of them as
// one self-contained page.
#ifndef GPUBENCH_REPORT_REPORT_H_
#define GPUBENCH_REPORT_REPORT_H_

#include <map>
#include <string>
#include <vector>

#include "gpubench/v1/job.pb.h"
#include "gpubench/v1/result.pb.h"
#include "report/fleet_rank.h"
#include "report/trace_breakdown.h"

namespace gpubench::report {

// One job as the report shows it.
struct ReportJob {
  // The job, as GetJob returns it.
  v1::Job job;
  // Its runs, in any order (the report sorts them by index).
  std::vector<v1::Run> runs;
  // The daemon the job was read from: its name or address.
  std::string host;
  // The host's matmul and device-to-device copy runs, whose best figures are
  // the roofline's peaks (the job's own such runs count too); may be empty.
  std::vector<v1::Run> peak_runs;
  // A running job: the run it is in and that run's last progress (empty
  // otherwise), shown in its summary.
  v1::RunStarted current_run;
  v1::RunProgress current_progress;
  // The command that submits the job again (show's "reproduce:" line); none
  // shown where empty.
  std::string repro;
  // Where each profiled run's device time went, from its stored trace (rank
  // 0's), by run id, with every kernel in top; runs without one are absent.
  std::map<std::string, Breakdown> breakdowns;
};

// Renders jobs as one HTML page titled `title`. The page is self-contained:
// inline CSS and hand-written inline SVG, no scripts and no external fetches,
// so it reads offline and can be mailed or archived as one file.
//
// The page has a header (title, generation time, hosts), then per job a
// summary (its repro command among it), a table of its runs (only the config
// columns that vary between them) and the plots its data supports:
// throughput and latency against batch size, peak memory against batch
// size, speedup by device, optimised against baseline, data-wait share
// against loader threads, top operators of profiled runs, where each
// profiled run's time went as a stacked bar and each one's diff against the
// job's first (breakdown_plots.h). A plot is drawn only from at least two
// points (a bar chart from at least one ratio of two runs, or one profile);
// every text from the jobs is HTML-escaped. Thread-safe (no state).
std::string RenderReport(const std::vector<ReportJob>& jobs,
                         const std::string& title);

// A page listing jobs in the order given (the HTML view's index: the newest
// first), each job's id linking to link_prefix + the id, under `title`, for
// the daemon on `host`. Self-contained like the report; every text from the
// jobs is HTML-escaped. Thread-safe (no state).
std::string RenderJobIndex(const std::vector<v1::Job>& jobs, const std::string& title,
                           const std::string& host, const std::string& link_prefix);

// The fleet page of gpubench fleet --report: which GPUs are stragglers or
// have drifted, and per probe and SKU every GPU against its peers' median.
// answered says which hosts answered. Self-contained like the report.
std::string RenderFleetPage(const std::vector<Ranked>& ranked, const std::string& answered,
                            const FleetRule& rule);

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_REPORT_H_
