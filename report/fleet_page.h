// The fleet page's sections (gpubench fleet --report): per probe and SKU,
// each GPU's figure against its peers' median as a bar, stragglers and
// drifted GPUs in red with what differs in their setup, then the table.
#ifndef GPUBENCH_REPORT_FLEET_PAGE_H_
#define GPUBENCH_REPORT_FLEET_PAGE_H_

#include <string>
#include <vector>

#include "report/fleet_rank.h"

namespace gpubench::report::internal {

// The page's body between its header and footer (report.cc's
// RenderFleetPage wraps it). Every text from the fleet is HTML-escaped.
std::string FleetSections(const std::vector<Ranked>& ranked, const FleetRule& rule);

}  // namespace gpubench::report::internal

#endif  // GPUBENCH_REPORT_FLEET_PAGE_H_
