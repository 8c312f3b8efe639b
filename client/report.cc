#include "client/report.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/report_chart.h"
#include "client/report_html.h"
#include "common/version.h"

namespace gpubench::client {

using report_internal::EscapeHtml;
using report_internal::JobId;
using report_internal::JobSection;
using report_internal::ReportCss;

std::string RenderReport(const std::vector<ReportJob>& jobs,
                         const std::string& title) {
  // Hosts in order of first appearance, each with the host ids seen on it.
  std::vector<std::pair<std::string, std::vector<std::string>>> hosts;
  for (const ReportJob& job : jobs) {
    const std::string name = job.host.empty() ? "local" : job.host;
    auto it = std::find_if(hosts.begin(), hosts.end(),
                           [&](const auto& h) { return h.first == name; });
    if (it == hosts.end()) it = hosts.insert(hosts.end(), {name, {}});
    const std::string& id = job.job.host_id();
    if (!id.empty() && std::find(it->second.begin(), it->second.end(), id) ==
                           it->second.end()) {
      it->second.push_back(id);
    }
  }
  std::vector<std::string> host_parts;
  for (const auto& [name, ids] : hosts) {
    host_parts.push_back(
        ids.empty()
            ? EscapeHtml(name)
            : absl::StrCat(EscapeHtml(name), " <span class=\"muted\">(",
                           EscapeHtml(absl::StrJoin(ids, ", ")), ")</span>"));
  }

  std::string out = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, "
      "initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"gpubench ",
      kGpubenchVersion, "\">\n<title>", EscapeHtml(title), "</title>\n<style>",
      ReportCss(), "</style>\n</head>\n<body>\n<main>\n<header>\n<h1>",
      EscapeHtml(title), "</h1>\n<p class=\"meta\">", "Generated ",
      absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::Now(),
                       absl::UTCTimeZone()),
      " \u00b7 ", jobs.size(), jobs.size() == 1 ? " job" : " jobs", " \u00b7 ",
      hosts.size() == 1 ? "host " : "hosts ",
      host_parts.empty() ? "-" : absl::StrJoin(host_parts, ", "), "</p>\n");
  if (jobs.size() > 1) {
    out += "<ul class=\"toc\">";
    for (const ReportJob& job : jobs) {
      const v1::Job& j = job.job;
      absl::StrAppend(
          &out, "<li><a href=\"#job-", EscapeHtml(JobId(j)), "\">",
          EscapeHtml(j.spec().name().empty() ? j.job_id() : j.spec().name()),
          "</a> <span class=\"muted\">", EscapeHtml(j.job_id()),
          "</span></li>");
    }
    out += "</ul>\n";
  }
  out += "</header>\n";
  if (jobs.empty()) out += "<p class=\"note\">No jobs.</p>\n";
  for (const ReportJob& job : jobs) out += JobSection(job);
  absl::StrAppend(
      &out, "<footer>gpubench ", kGpubenchVersion,
      " \u00b7 self-contained report: inline CSS and SVG, no scripts</footer>\n"
      "</main>\n</body>\n</html>\n");
  return out;
}

}  // namespace gpubench::client
