#include "client/schedule_history.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/contention.h"
#include "common/cron.h"
#include "common/spec.h"
#include "common/stats.h"
#include "google/protobuf/util/time_util.h"

namespace gpubench::client {
namespace {

using google::protobuf::util::TimeUtil;

absl::Time TimeOf(const google::protobuf::Timestamp& t) {
  return absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(t));
}

google::protobuf::Timestamp Stamp(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

std::string Local(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d %H:%M", t, absl::LocalTimeZone());
}

// A schedule's succeeded runs since `after`, newest first.
absl::Status RunsOf(const Daemon& d, const std::string& schedule_id, absl::Time after,
                    std::vector<v1::Run>* runs) {
  v1::QueryRunsRequest req;
  req.set_schedule_id(schedule_id);
  req.add_states(v1::RUN_STATE_SUCCEEDED);
  *req.mutable_started_after() = Stamp(after);
  req.set_page_size(1000);
  for (int page = 0; page < 10; ++page) {
    auto resp = d.Call(&v1::BenchService::Stub::QueryRuns, req);
    if (!resp.ok()) return resp.status();
    for (v1::Run& r : *resp->mutable_runs()) {
      r.clear_samples();
      runs->push_back(std::move(r));
    }
    if (resp->next_page_token().empty()) break;
    req.set_page_token(resp->next_page_token());
  }
  return absl::OkStatus();
}

// A schedule's jobs submitted since `after`.
absl::Status JobsOf(const Daemon& d, const std::string& schedule_id, absl::Time after,
                    std::vector<v1::Job>* jobs) {
  v1::ListJobsRequest req;
  req.set_schedule_id(schedule_id);
  *req.mutable_submitted_after() = Stamp(after);
  req.set_page_size(1000);
  for (int page = 0; page < 10; ++page) {
    auto resp = d.Call(&v1::BenchService::Stub::ListJobs, req);
    if (!resp.ok()) return resp.status();
    for (const v1::Job& j : resp->jobs()) jobs->push_back(j);
    if (resp->next_page_token().empty()) break;
    req.set_page_token(resp->next_page_token());
  }
  return absl::OkStatus();
}

// One series per config: a job a point, the median samples/s of its runs
// of the config, oldest first.
std::vector<report::Series> SeriesOf(const std::string& host, const v1::Schedule& s,
                                     const std::vector<v1::Run>& runs) {
  struct Night {
    std::vector<double> values;
    const v1::Run* first = nullptr;
  };
  std::map<std::string, std::map<std::string, Night>> by_config;  // config -> job -> night
  for (const v1::Run& r : runs) {
    if (r.result().throughput_samples_per_s() <= 0 || !NotABaselineBecause(r).empty()) continue;
    Night& n = by_config[ConfigKey(r.config())][r.job_id()];
    n.values.push_back(r.result().throughput_samples_per_s());
    if (n.first == nullptr || TimeOf(r.start_time()) < TimeOf(n.first->start_time())) n.first = &r;
  }
  std::vector<report::Series> out;
  for (const auto& [key, nights] : by_config) {
    report::Series series;
    series.host = host;
    series.what = absl::StrCat(s.name().empty() ? s.schedule_id() : s.name(), ": ",
                               DescribeConfig(nights.begin()->second.first->config()));
    series.unit = "samples/s";
    for (const auto& [job, n] : nights) {
      series.points.push_back({stats::Median(n.values), n.first->run_id(),
                               absl::ToUnixNanos(TimeOf(n.first->start_time())),
                               n.first->fingerprint()});
    }
    std::sort(series.points.begin(), series.points.end(),
              [](const report::SeriesPoint& a, const report::SeriesPoint& b) {
                return a.start_ns < b.start_ns;
              });
    out.push_back(std::move(series));
  }
  return out;
}

// The due times since `since` (and the schedule's creation) judged by now
// whose window up to the next due time has no job, or only jobs that ended
// without a measured run: "missed 2 of 7 due times: 2026-11-25 02:00 (no
// job), 2026-11-26 02:00 (job j.. FAILED)". "" where none is missed.
std::string Missed(const v1::Schedule& s, const std::vector<v1::Job>& jobs, absl::Time since,
                   absl::Time now) {
  auto cron = CronSchedule::Parse(s.cron());
  auto zone = LoadZone(s.time_zone().empty() ? "UTC" : s.time_zone());
  if (!cron.ok() || !zone.ok() || s.disabled()) return "";
  absl::Time due = std::max(since, TimeOf(s.create_time()));
  auto next = cron->Next(due, *zone);
  std::vector<std::string> missed;
  int judged = 0;
  for (int i = 0; next.ok() && i < 10000; ++i) {
    due = *next;
    next = cron->Next(due, *zone);
    const absl::Time window_end = next.ok() ? *next : absl::InfiniteFuture();
    if (now < std::min(due + kDueGrace, window_end)) break;
    ++judged;
    std::string why = "no job";
    for (const v1::Job& j : jobs) {
      const absl::Time at = TimeOf(j.submit_time());
      if (at < due || at >= window_end) continue;
      if (j.state() == v1::JOB_STATE_SUCCEEDED || j.state() == v1::JOB_STATE_QUEUED ||
          j.state() == v1::JOB_STATE_RUNNING) {
        why.clear();
        break;
      }
      why = absl::StrCat("job ", j.job_id(), " ", Short(v1::JobState_descriptor(), j.state()));
    }
    if (!why.empty()) missed.push_back(absl::StrCat(Local(due), " (", why, ")"));
  }
  if (missed.empty()) return "";
  const size_t shown = std::min<size_t>(missed.size(), 3);
  return absl::StrCat("missed ", missed.size(), " of ", judged, " due times: ",
                      absl::StrJoin(missed.end() - shown, missed.end(), ", "),
                      missed.size() > shown ? " (the latest 3)" : "");
}

}  // namespace

absl::Status ReadScheduleHistory(const Daemon& d, absl::Time since, absl::Time now,
                                 ScheduleHistory* out) {
  auto schedules = d.Call(&v1::BenchService::Stub::ListSchedules, v1::ListSchedulesRequest());
  if (!schedules.ok()) return schedules.status();
  for (const v1::Schedule& s : schedules->schedules()) {
    std::vector<v1::Run> runs;
    if (auto st = RunsOf(d, s.schedule_id(), now - kSeriesLookback, &runs); !st.ok()) return st;
    for (report::Series& series : SeriesOf(d.host.name, s, runs)) {
      out->series.push_back(std::move(series));
    }
    std::vector<v1::Job> jobs;
    if (auto st = JobsOf(d, s.schedule_id(), since, &jobs); !st.ok()) return st;
    const std::string missed = Missed(s, jobs, since, now);
    if (!missed.empty()) {
      out->missing.push_back(
          {d.host.name, absl::StrCat("schedule ", s.name().empty() ? s.schedule_id() : s.name()),
           missed});
    }
  }
  return absl::OkStatus();
}

}  // namespace gpubench::client
