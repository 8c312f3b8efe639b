// The HTML of the report's job sections: a summary of the job, the config its
// runs share, a table of its runs and its plots, and the page's stylesheet.
#ifndef GPUBENCH_REPORT_HTML_H_
#define GPUBENCH_REPORT_HTML_H_

#include <string>

#include "report/report.h"
#include "gpubench/v1/job.pb.h"

namespace gpubench::report::internal {

// The job's id, or "job" when it has none; its section's anchor is "job-" and
// this id.
std::string JobId(const v1::Job& job);

// The job's <section class="job">: a summary (id, name, state, host, run
// counts, times, the largest batch that fit, errors, the worker's stderr
// tail), the facets every run shares, a table of its runs with a column per
// facet that varies, and its plots (JobPlots). Every text from the job is
// HTML-escaped. Thread-safe (no state).
std::string JobSection(const ReportJob& job);

// One <tr> of a job index: the job's id linking to `link`, its name, state
// (coloured as in its section), workloads, runs done of its sweep and
// submission time. Every text from the job is HTML-escaped.
std::string JobIndexRow(const v1::Job& job, const std::string& link);

// The stylesheet the sections' classes need, for the page's <style>.
const char* ReportCss();

}  // namespace gpubench::report::internal

#endif  // GPUBENCH_REPORT_HTML_H_
