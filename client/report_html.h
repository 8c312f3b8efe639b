// The HTML of the report's job sections: a summary of the job, the config its
// runs share, a table of its runs and its plots, and the page's stylesheet.
#ifndef GPUBENCH_CLIENT_REPORT_HTML_H_
#define GPUBENCH_CLIENT_REPORT_HTML_H_

#include <string>

#include "client/report.h"
#include "gpubench/v1/job.pb.h"

namespace gpubench::client::report_internal {

// The job's id, or "job" when it has none; its section's anchor is "job-" and
// this id.
std::string JobId(const v1::Job& job);

// The job's <section class="job">: a summary (id, name, state, host, run
// counts, times, the largest batch that fit, errors, the worker's stderr
// tail), the facets every run shares, a table of its runs with a column per
// facet that varies, and its plots (JobPlots). Every text from the job is
// HTML-escaped. Thread-safe (no state).
std::string JobSection(const ReportJob& job);

// The stylesheet the sections' classes need, for the page's <style>.
const char* ReportCss();

}  // namespace gpubench::client::report_internal

#endif  // GPUBENCH_CLIENT_REPORT_HTML_H_
