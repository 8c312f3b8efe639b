// Five-field cron expressions (minute hour day-of-month month day-of-week),
// evaluated in a time zone with daylight-saving changes handled.
#ifndef GPUBENCH_COMMON_CRON_H_
#define GPUBENCH_COMMON_CRON_H_

#include <bitset>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gpubench {

// Immutable and thread-safe once parsed.
class CronSchedule {
 public:
  // Accepts *, numbers, ranges a-b, lists a,b, steps */n and a-b/n, month
  // names JAN-DEC and day names SUN-SAT (any case), 0 and 7 for Sunday, and
  // @hourly @daily @midnight @weekly @monthly @yearly @annually. When both
  // day fields are restricted a day matches either (as Vixie cron does).
  // InvalidArgument naming the field, e.g. `cron: minute field "61" out of
  // range 0-59`.
  static absl::StatusOr<CronSchedule> Parse(const std::string& expr);

  // The first time strictly after `after` whose local time in tz matches.
  // A local minute skipped by a daylight-saving jump never fires; a repeated
  // one fires once (the first). NotFound when nothing matches within 5 years
  // (e.g. "0 0 30 2 *").
  absl::StatusOr<absl::Time> Next(absl::Time after, const absl::TimeZone& tz) const;

  // OK when some calendar date matches; InvalidArgument `cron: never
  // matches: ...` for an expression whose days of the month fall in none of
  // its months (e.g. "0 0 30 2 *", February 30th), whatever the zone.
  absl::Status CheckCanMatch() const;

 private:
  bool DayMatches(const absl::CivilDay& day) const;

  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_;    // 1-31
  std::bitset<13> months_;  // 1-12
  std::bitset<7> weekdays_;  // 0 = Sunday
  bool days_restricted_ = false;
  bool weekdays_restricted_ = false;
};

// Whether name is a tz database name (Area/Location segments of
// [A-Za-z0-9_+-], at most 64 bytes): never a path, so no file of the
// caller's choosing is opened. InvalidArgument saying what is allowed.
absl::Status CheckZoneName(const std::string& name);

// An IANA zone ("Europe/Paris"); "" is the host's local zone.
// InvalidArgument naming the zone when it is not a tz database name
// (CheckZoneName) or is unknown.
absl::StatusOr<absl::TimeZone> LoadZone(const std::string& name);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_CRON_H_
