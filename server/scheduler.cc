#include "server/scheduler.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/spec.h"
#include "google/protobuf/util/time_util.h"
#include "common/cron.h"
#include "common/contention.h"
#include "common/fingerprint.h"
#include "report/profile_diff.h"
#include "server/history.h"

namespace gpubench::server {
namespace {

using google::protobuf::util::TimeUtil;

constexpr int kDefaultHistoryWindow = 7;
constexpr double kDefaultThreshold = 0.05;
constexpr int kOperatorChanges = 5;  // a change's operators kept with its run
// Bounds of a schedule's own fields (its spec has the spec's).
constexpr size_t kMaxCronBytes = 128;
constexpr int kMaxHistoryWindow = 100;  // the comparison reads 3x as many runs
constexpr size_t kMaxErrorBytes = 1000;  // a stored submit error, cut

google::protobuf::Timestamp ToProto(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(t));
}

// The next time of a stored (already validated) schedule after `after`.
absl::StatusOr<absl::Time> NextTime(const v1::Schedule& s, absl::Time after) {
  auto cron = CronSchedule::Parse(s.cron());
  if (!cron.ok()) return cron.status();
  auto zone = LoadZone(s.time_zone());
  if (!zone.ok()) return zone.status();
  return cron->Next(after, *zone);
}

absl::Status Prefixed(const absl::Status& s, const std::string& prefix) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

}  // namespace

Scheduler::Scheduler(JobManager* jobs, storage::Store* store)
    : jobs_(jobs), store_(store) {}

Scheduler::~Scheduler() { Stop(); }

absl::StatusOr<v1::Schedule> Scheduler::Create(v1::Schedule schedule, absl::Time now) {
  if (schedule.name().size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule.name: at most ", kMaxNameBytes, " bytes, got ",
                     schedule.name().size()));
  }
  if (schedule.cron().size() > kMaxCronBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule.cron: at most ", kMaxCronBytes, " bytes, got ",
                     schedule.cron().size()));
  }
  if (auto c = CronSchedule::Parse(schedule.cron()); !c.ok()) {
    return Prefixed(c.status(), "schedule.");
  } else if (auto can = c->CheckCanMatch(); !can.ok()) {
    return Prefixed(can, "schedule.");
  }
  if (auto z = LoadZone(schedule.time_zone()); !z.ok()) {
    return Prefixed(z.status(), "schedule.time_zone: ");
  }
  if (auto runs = ExpandSweep(schedule.spec()); !runs.ok()) {
    return Prefixed(runs.status(), "schedule.");
  }
  // Its jobs would be refused at every tick (JobManager::PlanJob): only the
  // daemon's own probe suite names a fleet probe.
  if (!schedule.spec().base().probe().empty()) {
    return absl::InvalidArgumentError(
        "schedule.spec.base.probe: set by gpubench probe only (the daemon's own probe suite, "
        "RunProbe); a schedule may not name a fleet probe");
  }
  if (schedule.history_window() < 0 || schedule.history_window() > kMaxHistoryWindow) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule.history_window: must be in [0, ", kMaxHistoryWindow, "], got ",
                     schedule.history_window()));
  }
  // Written so that NaN fails it too (every comparison with NaN is false).
  if (!(schedule.regression_threshold() >= 0 && schedule.regression_threshold() < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule.regression_threshold: must be in [0, 1), got ",
                     schedule.regression_threshold()));
  }
  schedule.clear_schedule_id();
  schedule.clear_last_error();
  schedule.clear_failure_count();
  *schedule.mutable_create_time() = ToProto(now);
  schedule.clear_last_run_time();
  auto next = NextTime(schedule, now);
  // No time within Next's horizon is the caller's expression, not a missing
  // thing: INVALID_ARGUMENT, as for a date CheckCanMatch already refuses.
  if (!next.ok() && absl::IsNotFound(next.status())) {
    return absl::InvalidArgumentError(absl::StrCat("schedule.", next.status().message()));
  }
  if (!next.ok()) return Prefixed(next.status(), "schedule.cron: ");
  *schedule.mutable_next_run_time() = ToProto(*next);
  auto id = store_->schedules().Insert(schedule);
  if (!id.ok()) return id.status();
  schedule.set_schedule_id(*id);
  return schedule;
}

int Scheduler::Tick(absl::Time now) {
  auto schedules = store_->schedules().List();
  if (!schedules.ok()) return 0;
  int submitted = 0;
  for (v1::Schedule& s : *schedules) {
    if (s.disabled() || FromProto(s.next_run_time()) > now) continue;
    // A job that cannot be submitted (a full queue or store, a spec the
    // daemon no longer takes) is a failure of the schedule, kept with it,
    // logged and counted (gpubench_schedule_failures_total): last_run_time
    // says when a job was last enqueued, so it stays.
    if (auto job = jobs_->Submit(s.spec(), s.schedule_id(), "scheduler"); job.ok()) {
      ++submitted;
      *s.mutable_last_run_time() = ToProto(now);
      s.clear_last_error();
    } else {
      const std::string why(job.status().message().substr(0, kMaxErrorBytes));
      s.set_last_error(absl::StrCat(absl::StatusCodeToString(job.status().code()), ": ", why));
      s.set_failure_count(s.failure_count() + 1);
      Log(LogLevel::kWarning, "schedule ", s.schedule_id(), ": its job due at ",
          absl::FormatTime(FromProto(s.next_run_time()), absl::UTCTimeZone()),
          " could not be submitted (failure ", s.failure_count(), "): ", s.last_error());
    }
    auto next = NextTime(s, now);
    if (next.ok()) {
      *s.mutable_next_run_time() = ToProto(*next);
    } else {
      s.set_disabled(true);  // no future time: stop rather than fire forever
    }
    if (auto stored = store_->schedules().Update(s); !stored.ok()) {
      // It is due again at the next tick; say why, once per tick.
      Log(LogLevel::kWarning, "schedule ", s.schedule_id(),
          ": cannot store its next run time: ", stored.message());
    }
  }
  return submitted;
}

void Scheduler::CompareWithHistory(const v1::Job& job, v1::Run* run) {
  if (job.schedule_id().empty() || run->state() != v1::RUN_STATE_SUCCEEDED) return;
  int window = kDefaultHistoryWindow;
  double threshold = kDefaultThreshold;
  if (auto schedules = store_->schedules().List(); schedules.ok()) {
    for (const auto& s : *schedules) {
      if (s.schedule_id() != job.schedule_id()) continue;
      if (s.history_window() > 0) window = s.history_window();
      if (s.regression_threshold() > 0) threshold = s.regression_threshold();
    }
  }
  // Contended and thermally throttled runs are no baseline: the last
  // `window` of the others are (read three times as many to find them).
  auto history = store_->runs().ScheduleHistory(job.schedule_id(), run->config(), 3 * window,
                                                job.job_id());
  if (!history.ok()) return;
  std::vector<double> values;
  const v1::Run* latest = nullptr;  // the newest of the baseline
  for (const auto& r : *history) {
    if (static_cast<int>(values.size()) == window) break;
    if (!NotABaselineBecause(r).empty()) continue;
    values.push_back(r.result().throughput_samples_per_s());
    if (latest == nullptr) latest = &r;
  }
  HistoryRule rule;
  rule.threshold = threshold;
  *run->mutable_history() =
      server::CompareWithHistory(run->result().throughput_samples_per_s(), values, rule);
  // Whatever the verdict: a change of driver or power limit is worth
  // naming beside "no change" too.
  if (latest != nullptr) {
    for (std::string& change : FingerprintChanges(latest->fingerprint(), run->fingerprint())) {
      run->mutable_history()->add_environment_changes(std::move(change));
    }
  }
  // A change, where both ends were profiled: what moved in the profile.
  const v1::Verdict verdict = run->history().verdict();
  if (latest == nullptr ||
      (verdict != v1::VERDICT_REGRESSED && verdict != v1::VERDICT_IMPROVED)) {
    return;
  }
  const report::ProfileDiff diff = report::DiffWindows(report::WindowOf(*latest),
                                                       report::WindowOf(*run));
  for (const report::DiffRow& r : diff.rows) {
    if (!r.known || run->history().operator_changes_size() == kOperatorChanges) break;
    v1::OperatorChange* c = run->mutable_history()->add_operator_changes();
    c->set_name(r.name);
    c->set_baseline_calls_per_step(r.a_calls_per_step);
    c->set_baseline_us_per_call(r.a_us_per_call);
    c->set_calls_per_step(r.b_calls_per_step);
    c->set_us_per_call(r.b_us_per_call);
    c->set_delta_us_per_sample(r.delta_us_per_sample);
    c->set_share(r.share);
  }
}

void Scheduler::Start() {
  thread_ = std::thread([this] {
    for (;;) {
      Tick(absl::Now());
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stop_), absl::Seconds(15))) return;
    }
  });
}

void Scheduler::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpubench::server
