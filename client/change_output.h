// Change points in the CLI's output (gpubench fleet, gpubench regressions):
// the table, the JSON and the exit rule, one for both commands.
#ifndef GPUBENCH_CLIENT_CHANGE_OUTPUT_H_
#define GPUBENCH_CLIENT_CHANGE_OUTPUT_H_

#include <ostream>

#include "client/json_writer.h"
#include "client/output.h"
#include "report/change_history.h"

namespace gpubench::client {

// host, series, when (the first run after), median before and after, the
// change, p, points on each side, the first run after, what the
// environment changed there.
Table ChangeTable(const report::ChangeFamily& family);

// {"rule": "...", "series": N, "found": N, "change_points": [{...}]} under
// the writer's current key.
void ChangesJson(const report::ChangeFamily& family, JsonWriter& json);

// Prints the table (table and markdown output; CSV keeps to the command's
// one table) and the family's line on err.
void PrintChanges(const report::ChangeFamily& family, Format format, std::ostream& out,
                  std::ostream& err);

// A kept point that moved its series the bad way and is its series' latest:
// the series is still there.
bool StillWorse(const report::ChangeFamily& family);

// What should be there and is not (a host that did not answer, a night a
// schedule has no run for, a GPU whose latest probe is too old): a table of
// host, what, and why. Printed after the command's tables (table and
// markdown output), as an array of objects in JSON.
void PrintMissing(const Table& missing, Format format, std::ostream& out);
void MissingJson(const Table& missing, JsonWriter& json);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_CHANGE_OUTPUT_H_
