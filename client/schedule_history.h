// What `gpubench regressions` reads of a daemon's schedules beyond the runs
// its nightly rule flagged: each schedule's series per config (a night a
// point: the median samples/s of its succeeded runs of the config, over the
// last 90 days), for change points; and the due times since --since that
// have no job, or whose job ended without a measured run (missing data is a
// finding: PyTorch's HUD added that alert after an outage went unnoticed).
#ifndef GPUBENCH_CLIENT_SCHEDULE_HISTORY_H_
#define GPUBENCH_CLIENT_SCHEDULE_HISTORY_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/cli_internal.h"
#include "report/change_history.h"

namespace gpubench::client {

// How long after a due time its job must have been submitted and measured
// before the due time counts as missed (or the next due time, if sooner).
inline constexpr absl::Duration kDueGrace = absl::Hours(6);

// How far back a schedule's series reaches for its change points.
inline constexpr absl::Duration kSeriesLookback = absl::Hours(24 * 90);

struct ScheduleHistory {
  std::vector<report::Series> series;  // host is the daemon's name
  // Rows of host, what, missing: one per schedule with missed due times.
  std::vector<std::vector<std::string>> missing;
};

// Reads every schedule of the daemon: ListSchedules, then its jobs since
// `since` (ListJobs) and its succeeded runs since now - kSeriesLookback
// (QueryRuns; at most 10 pages of 1000). Due times come from the
// schedule's cron in its time zone (UTC where it names none: the daemon's
// zone is not known here; a day is a day in any zone). A disabled schedule
// misses nothing. The first failed call's status.
absl::Status ReadScheduleHistory(const Daemon& d, absl::Time since, absl::Time now,
                                 ScheduleHistory* out);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_SCHEDULE_HISTORY_H_
