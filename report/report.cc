#include "report/report.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "report/chart.h"
#include "report/fleet_page.h"
#include "report/html.h"
#include "common/version.h"

namespace gpubench::report {

using internal::EscapeHtml;
using internal::JobId;
using internal::JobIndexRow;
using internal::JobSection;
using internal::ReportCss;

namespace {

// The page up to its header's meta line: "Generated <time> · " and meta_html.
std::string PageStart(const std::string& title, const std::string& meta_html) {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, "
      "initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"gpubench ",
      kGpubenchVersion, "\">\n<title>", EscapeHtml(title), "</title>\n<style>",
      ReportCss(), "</style>\n</head>\n<body>\n<main>\n<header>\n<h1>",
      EscapeHtml(title), "</h1>\n<p class=\"meta\">", "Generated ",
      absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::Now(), absl::UTCTimeZone()),
      " \u00b7 ", meta_html, "</p>\n");
}

std::string PageEnd() {
  return absl::StrCat("<footer>gpubench ", kGpubenchVersion,
                      " \u00b7 self-contained report: inline CSS and SVG, no scripts</footer>\n"
                      "</main>\n</body>\n</html>\n");
}

}  // namespace

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

  std::string out = PageStart(
      title, absl::StrCat(jobs.size(), jobs.size() == 1 ? " job" : " jobs", " \u00b7 ",
                          hosts.size() == 1 ? "host " : "hosts ",
                          host_parts.empty() ? "-" : absl::StrJoin(host_parts, ", ")));
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
  return out + PageEnd();
}

std::string RenderFleetPage(const std::vector<Ranked>& ranked, const std::string& answered,
                            const FleetRule& rule) {
  return absl::StrCat(PageStart(absl::StrCat("gpubench fleet, probe suite ", kProbeSuite),
                                EscapeHtml(answered)),
                      "</header>\n", internal::FleetSections(ranked, rule), PageEnd());
}

std::string RenderJobIndex(const std::vector<v1::Job>& jobs, const std::string& title,
                           const std::string& host, const std::string& link_prefix) {
  std::string out = PageStart(
      title, absl::StrCat("the newest ", jobs.size(), jobs.size() == 1 ? " job" : " jobs",
                          " \u00b7 host ", EscapeHtml(host)));
  out += "</header>\n";
  if (jobs.empty()) {
    out += "<p class=\"note\">No jobs.</p>\n";
  } else {
    out += "<table class=\"runs\"><thead><tr><th>job</th><th>name</th><th>state</th>"
           "<th>workload</th><th>runs</th><th>submitted</th></tr></thead><tbody>\n";
    for (const v1::Job& job : jobs) out += JobIndexRow(job, link_prefix + JobId(job));
    out += "</tbody></table>\n";
  }
  return out + PageEnd();
}

}  // namespace gpubench::report
