#include "common/cron.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/civil_time.h"

namespace gpubench {
namespace {

struct Field {
  const char* name;
  int low, high;
  const char* const* names;  // index 0 is value `low`
};

const char* const kMonths[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                               "JUL", "AUG", "SEP", "OCT", "NOV", "DEC", nullptr};
const char* const kDays[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", nullptr};

absl::Status Bad(const Field& f, const std::string& text, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("cron: ", f.name, " field \"", text, "\" ", why));
}

absl::StatusOr<int> Value(const Field& f, const std::string& token, const std::string& text) {
  int v;
  if (absl::SimpleAtoi(token, &v)) {
    const int high = f.names == kDays ? 7 : f.high;  // 7 is Sunday too
    if (v < f.low || v > high) {
      return Bad(f, text, absl::StrCat("out of range ", f.low, "-", f.high));
    }
    return f.names == kDays ? v % 7 : v;
  }
  const std::string upper = absl::AsciiStrToUpper(token);
  for (int i = 0; f.names && f.names[i]; ++i) {
    if (upper == f.names[i]) return f.low + i;
  }
  return Bad(f, text, "is not a number or name");
}

// Sets the bits one field allows; *restricted is false for "*".
template <size_t N>
absl::Status ParseField(const Field& f, const std::string& text, std::bitset<N>* bits,
                        bool* restricted) {
  *restricted = text != "*";
  for (const std::string& part : std::vector<std::string>(absl::StrSplit(text, ','))) {
    std::string range = part;
    int step = 1;
    if (auto slash = part.find('/'); slash != std::string::npos) {
      range = part.substr(0, slash);
      // A step past the field's span matches its start alone, and a huge
      // one overflowed the loop below: refuse it, naming it.
      const std::string step_text = part.substr(slash + 1);
      const int span = f.high - f.low + 1;
      if (step_text.empty() || step_text.size() > 2 ||
          step_text.find_first_not_of("0123456789") != std::string::npos ||
          !absl::SimpleAtoi(step_text, &step) || step < 1 || step > span) {
        return Bad(f, text,
                   absl::StrCat("has step \"", step_text.substr(0, 16),
                                step_text.size() > 16 ? "..." : "", "\"; a step must be in 1-",
                                span));
      }
    }
    int lo = f.low, hi = f.high;
    if (range != "*") {
      auto dash = range.find('-');
      auto a = Value(f, range.substr(0, dash), text);
      if (!a.ok()) return a.status();
      lo = hi = *a;
      if (dash != std::string::npos) {
        auto b = Value(f, range.substr(dash + 1), text);
        if (!b.ok()) return b.status();
        hi = *b;
        if (f.names == kDays && hi == 0 && range.substr(dash + 1) == "7") hi = 7;
      } else if (step > 1) {
        hi = f.high;  // "a/n" means a, a+n, ... up to the end
      }
      if (hi < lo) return Bad(f, text, "has a range that runs backwards");
    }
    for (int v = lo; v <= hi; v += step) bits->set(f.names == kDays ? v % 7 : v);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CronSchedule> CronSchedule::Parse(const std::string& expr) {
  std::string text(absl::StripAsciiWhitespace(expr));
  static const std::pair<const char*, const char*> kMacros[] = {
      {"@hourly", "0 * * * *"},  {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
      {"@weekly", "0 0 * * 0"},  {"@monthly", "0 0 1 * *"}, {"@yearly", "0 0 1 1 *"},
      {"@annually", "0 0 1 1 *"}};
  if (!text.empty() && text[0] == '@') {
    bool found = false;
    for (const auto& [name, value] : kMacros) {
      if (absl::AsciiStrToLower(text) == name) {
        text = value;
        found = true;
      }
    }
    if (!found) return absl::InvalidArgumentError(absl::StrCat("cron: unknown macro \"", text, "\""));
  }
  std::vector<std::string> fields = absl::StrSplit(text, ' ', absl::SkipWhitespace());
  if (fields.size() != 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cron: \"", expr, "\" has ", fields.size(),
        " fields; expected 5 (minute hour day-of-month month day-of-week)"));
  }
  CronSchedule c;
  bool unused;
  if (auto s = ParseField({"minute", 0, 59, nullptr}, fields[0], &c.minutes_, &unused); !s.ok())
    return s;
  if (auto s = ParseField({"hour", 0, 23, nullptr}, fields[1], &c.hours_, &unused); !s.ok())
    return s;
  if (auto s = ParseField({"day-of-month", 1, 31, nullptr}, fields[2], &c.days_,
                          &c.days_restricted_);
      !s.ok())
    return s;
  if (auto s = ParseField({"month", 1, 12, kMonths}, fields[3], &c.months_, &unused); !s.ok())
    return s;
  if (auto s = ParseField({"day-of-week", 0, 6, kDays}, fields[4], &c.weekdays_,
                          &c.weekdays_restricted_);
      !s.ok())
    return s;
  return c;
}

bool CronSchedule::DayMatches(const absl::CivilDay& day) const {
  const bool dom = days_[day.day()];
  const bool dow = weekdays_[(static_cast<int>(absl::GetWeekday(day)) + 1) % 7];
  if (days_restricted_ && weekdays_restricted_) return dom || dow;
  return dom && dow;
}

absl::StatusOr<absl::Time> CronSchedule::Next(absl::Time after,
                                              const absl::TimeZone& tz) const {
  absl::CivilMinute m = absl::ToCivilMinute(after, tz) + 1;
  const absl::CivilMinute end = m + 5 * 366 * 24 * 60;
  while (m < end) {
    if (!months_[m.month()]) {
      m = absl::CivilMinute(absl::CivilMonth(m) + 1);
      continue;
    }
    if (!DayMatches(absl::CivilDay(m))) {
      m = absl::CivilMinute(absl::CivilDay(m) + 1);
      continue;
    }
    if (!hours_[m.hour()]) {
      m = absl::CivilMinute(absl::CivilHour(m) + 1);
      continue;
    }
    if (!minutes_[m.minute()]) {
      m += 1;
      continue;
    }
    const absl::TimeZone::TimeInfo info = tz.At(m);
    // A skipped local minute does not exist; a repeated one fires at its
    // first occurrence only.
    if (info.kind != absl::TimeZone::TimeInfo::SKIPPED && info.pre > after) {
      return info.pre;
    }
    m += 1;
  }
  return absl::NotFoundError("cron: no matching time within 5 years");
}

absl::Status CronSchedule::CheckCanMatch() const {
  // Restricted days of the week match some day of every month, and when both
  // day fields are restricted a day matches either: only a day of the month
  // with "*" for the weekday can miss every month. February counts 29 days:
  // a leap year comes within Next's 5-year horizon.
  if (!days_restricted_ || weekdays_restricted_) return absl::OkStatus();
  static constexpr int kMaxDays[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  for (int month = 1; month <= 12; ++month) {
    if (!months_[month]) continue;
    for (int day = 1; day <= kMaxDays[month]; ++day) {
      if (days_[day]) return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      "cron: never matches: none of its months has any of its days of the month");
}

absl::Status CheckZoneName(const std::string& name) {
  // A tz database name, "Area/Location" segments of [A-Za-z0-9_+-]: never a
  // path of the caller's choosing (cctz opens an absolute name as a file, and
  // a FIFO there hung the loading thread and the daemon's shutdown).
  static constexpr size_t kMaxZoneNameBytes = 64;
  bool ok = !name.empty() && name.size() <= kMaxZoneNameBytes && name.front() != '/' &&
            name.back() != '/';
  for (size_t i = 0; ok && i < name.size(); ++i) {
    const char c = name[i];
    if (c == '/') {
      ok = name[i - 1] != '/';
    } else {
      ok = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '+' ||
           c == '-';
    }
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "must be a tz database name such as Europe/Paris or UTC (Area/Location: letters, "
      "digits, _ + -, at most ", kMaxZoneNameBytes, " bytes), got \"",
      name.substr(0, kMaxZoneNameBytes), name.size() > kMaxZoneNameBytes ? "..." : "", "\""));
}

absl::StatusOr<absl::TimeZone> LoadZone(const std::string& name) {
  if (name.empty()) return absl::LocalTimeZone();
  if (auto s = CheckZoneName(name); !s.ok()) return s;
  absl::TimeZone tz;
  if (!absl::LoadTimeZone(name, &tz)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown time zone \"", name, "\""));
  }
  return tz;
}

}  // namespace gpubench
