// The CLI's commands on one daemon: submit, watch, show, cancel, rm, jobs,
// runs, trace, model upload, schedules.
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/gbench.h"
#include "common/spec.h"
#include "common/spec_schema.h"
#include "google/protobuf/util/time_util.h"
#include "common/sha256.h"

namespace gpubench::client {
namespace {

std::string When(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixSeconds(t.seconds()),
                          absl::LocalTimeZone());
}

// A schedule's time in the schedule's own zone, its UTC offset said
// ("2026-11-27 02:00 +01:00"); in UTC where the zone is the daemon's local
// one or unknown here.
std::string WhenIn(const google::protobuf::Timestamp& t, const std::string& zone) {
  if (t.seconds() == 0) return "-";
  absl::TimeZone tz = absl::UTCTimeZone();
  if (!zone.empty() && !absl::LoadTimeZone(zone, &tz)) tz = absl::UTCTimeZone();
  return absl::FormatTime("%Y-%m-%d %H:%M %Ez", absl::FromUnixSeconds(t.seconds()), tz);
}

std::string Duration(double ms) {
  if (ms < 0) ms = 0;
  const int64_t s = static_cast<int64_t>(ms / 1000);
  return s >= 3600 ? absl::StrFormat("%dh%02dm", s / 3600, s / 60 % 60)
                   : absl::StrFormat("%dm%02ds", s / 60, s % 60);
}

// When the daemon recorded the event (a replay keeps the real run times).
absl::Time EventTime(const v1::ProgressEvent& e) {
  return absl::FromUnixSeconds(e.time().seconds()) + absl::Nanoseconds(e.time().nanos());
}

// Live progress of a job. On a terminal: one redrawn status line (run i/N,
// its config, phase, iterations, throughput so far, ETA of the job). Not on a
// terminal (a CI log): one plain line per event that matters, and a progress
// line at most every few seconds. A run's ETA is the time left to its
// max-time bound, which it never passes by more than a step: an upper bound.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::ostream& err, bool tty) : err_(err), tty_(tty) {}

  void On(const v1::ProgressEvent& e) {
    if (e.has_state_changed()) {
      Clear();
      err_ << "job " << e.job_id() << ": "
           << Short(v1::JobState_descriptor(), e.state_changed().state())
           << (e.state_changed().error().empty()
                    ? ""
                    : " (" + Printable(e.state_changed().error()) + ")")
           << "\n";
    } else if (e.has_run_started()) {
      run_index_ = e.run_started().index();
      run_count_ = e.run_started().run_count();
      label_ = DescribeConfig(e.run_started().config());
      run_start_ = last_line_ = EventTime(e);
      if (!tty_) err_ << "run " << run_index_ + 1 << "/" << run_count_ << ": " << label_ << "\n";
    } else if (e.has_run_progress() && !tty_) {
      const auto& p = e.run_progress();
      if (EventTime(e) - last_line_ < absl::Seconds(kPlainEverySeconds)) return;
      last_line_ = EventTime(e);
      err_ << absl::StrFormat("  run %d/%d: %s, %d it, %.1f samples/s, %s in, at most %s left\n",
                              run_index_ + 1, run_count_, p.phase(), p.iterations(),
                              p.throughput_samples_per_s(), Duration(p.elapsed_ms()),
                              Duration(p.eta_ms()));
    } else if (e.has_run_progress()) {
      const auto& p = e.run_progress();
      // ETA: this run's own estimate, plus the mean run time so far for
      // each run still to come.
      const double mean_run_ms = finished_ > 0 ? finished_ms_ / finished_ : p.elapsed_ms() + p.eta_ms();
      const double eta_ms = p.eta_ms() + mean_run_ms * std::max(0, run_count_ - run_index_ - 1);
      const std::string line = absl::StrFormat(
          "[%s] run %d/%d %s | %s %d it | %.1f samples/s | ETA %s", Bar(), run_index_ + 1,
          run_count_, label_, p.phase(), p.iterations(), p.throughput_samples_per_s(),
          Duration(eta_ms));
      err_ << "\r" << line.substr(0, 160) << "\033[K" << std::flush;
      drawn_ = true;
    } else if (e.has_run_finished()) {
      ++finished_;
      finished_ms_ += absl::ToDoubleMilliseconds(EventTime(e) - run_start_);
      const v1::Run& r = e.run_finished().run();
      Clear();
      err_ << "  run " << r.index() + 1 << "/" << run_count_ << " "
           << Short(v1::RunState_descriptor(), r.state())
           << (r.state() == v1::RUN_STATE_SUCCEEDED
                   ? absl::StrFormat(", %.1f samples/s", r.result().throughput_samples_per_s())
                   : "")
           << (r.error().empty() ? "" : " (" + Printable(r.error().substr(0, 80)) + ")") << "\n";
    } else if (e.has_log() && !tty_) {
      err_ << "  " << Printable(e.log().text()) << "\n";
    }
  }

  void Clear() {
    if (drawn_) err_ << "\r\033[K";
    drawn_ = false;
  }

 private:
  std::string Bar() const {
    const int width = 20;
    const int done = run_count_ > 0 ? width * run_index_ / run_count_ : 0;
    return std::string(done, '#') + std::string(width - done, '.');
  }

  std::ostream& err_;
  const bool tty_;
  int run_index_ = 0, run_count_ = 0, finished_ = 0;
  double finished_ms_ = 0;
  std::string label_;
  static constexpr int kPlainEverySeconds = 5;
  absl::Time run_start_, last_line_;
  bool drawn_ = false;
};

absl::Status GetJob(const Daemon& d, const std::string& id, v1::Job* job,
                    std::vector<v1::Run>* runs) {
  v1::GetJobRequest req;
  req.set_job_id(id);
  auto resp = d.Call(&v1::BenchService::Stub::GetJob, req);
  if (!resp.ok()) return resp.status();
  *job = resp->job();
  return ListAllRuns(d, id, /*include_samples=*/false, runs);
}

// Prints a job and its runs; returns the exit code its state implies.
int ShowJob(const Daemon& d, const std::string& id, const Args& a, std::ostream& out,
            std::ostream& err) {
  v1::Job job;
  std::vector<v1::Run> runs;
  if (auto s = GetJob(d, id, &job, &runs); !s.ok()) return CallFailed(d.host, s, err);
  std::vector<v1::Run> peak_runs;
  if (auto s = ListPeakRuns(d, job, runs, &peak_runs); !s.ok()) return CallFailed(d.host, s, err);
  PrintJob(job, runs, a.format, out, peak_runs);
  const v1::JobState state = job.state();
  if (state == v1::JOB_STATE_FAILED || state == v1::JOB_STATE_CANCELLED ||
      state == v1::JOB_STATE_INTERRUPTED) {
    err << "gpubench: job " << Short(v1::JobState_descriptor(), state) << ": " << Printable(job.error())
        << "\n";
    if (!job.worker_stderr_tail().empty()) {
      err << Printable(job.worker_stderr_tail(), /*keep_newlines=*/true) << "\n";
    }
    return kExitJobFailed;
  }
  // The table may be long, or JSON: the runs that failed are named here too.
  constexpr int kNamed = 5;
  int failed = 0;
  for (const v1::Run& r : runs) {
    if (r.state() != v1::RUN_STATE_FAILED) continue;
    if (++failed <= kNamed) {
      err << "gpubench: run " << r.index() << " (" << DescribeConfig(r.config())
          << ") failed: " << Printable(r.error()) << "\n";
    }
  }
  if (failed > kNamed) err << "gpubench: and " << failed - kNamed << " more runs failed\n";
  return failed > 0 ? kExitJobFailed : kExitOk;
}

// A positive --limit, or fallback.
absl::StatusOr<int> Limit(const Args& a, int fallback) {
  if (!a.Has("limit")) return fallback;
  int n = 0;
  if (!absl::SimpleAtoi(a.Option("limit"), &n) || n <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--limit: \"", a.Option("limit"), "\" is not a positive number"));
  }
  return n;
}

}  // namespace

// Follows a job until its stream ends; progress to err when show_progress.
grpc::Status FollowJob(const Daemon& d, const std::string& job_id, bool show_progress,
                       std::ostream& err) {
  grpc::ClientContext ctx;
  PrepareCall(d.host, 0, &ctx);
  v1::WatchJobRequest req;
  req.set_job_id(job_id);
  auto reader = d.stub->WatchJob(&ctx, req);
  v1::WatchJobResponse resp;
  ProgressPrinter printer(err, isatty(fileno(stderr)) && &err == &std::cerr);
  while (reader->Read(&resp)) {
    if (show_progress) printer.On(resp.event());
  }
  printer.Clear();
  return reader->Finish();
}

int SubmitAndShow(const Daemon& d, const v1::JobSpec& spec, const Args& a, std::ostream& out,
                  std::ostream& err) {
  v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  auto resp = d.Call(&v1::BenchService::Stub::SubmitJob, req);
  if (!resp.ok()) return CallFailed(d.host, resp.status(), err);
  for (const std::string& note : resp->notes()) {
    err << "gpubench: note: " << Printable(note) << "\n";
  }
  const std::string& id = resp->job().job_id();
  if (!a.wait) {
    out << id << "\n";
    return kExitOk;
  }
  err << "job " << id << " queued on " << d.host.name << " (" << resp->job().run_count()
      << " runs)\n";
  if (auto s = FollowJob(d, id, a.watch || a.format == Format::kTable, err); !s.ok()) {
    return CallFailed(d.host, s, err);
  }
  return ShowJob(d, id, a, out, err);
}

int DryRun(const Args& a, const v1::JobSpec& spec, std::ostream& out, std::ostream& err) {
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  req.set_dry_run(true);
  auto resp = d->Call(&v1::BenchService::Stub::SubmitJob, req);
  if (!resp.ok()) return CallFailed(d->host, resp.status(), err);
  for (const std::string& note : resp->notes()) {
    err << "gpubench: note: " << Printable(note) << "\n";
  }
  if (a.format == Format::kJson) {
    out << MessageToJson(*resp) << "\n";
    return kExitOk;
  }
  Table t;
  t.header = {"#", "run", "device"};
  for (int i = 0; i < resp->runs_size(); ++i) {
    const v1::RunConfig& c = resp->runs(i);
    t.rows.push_back({absl::StrCat(i), DescribeConfig(c), c.device()});
  }
  PrintTable(t, a.format, out);
  if (a.format == Format::kTable) {
    out << "settings: " << SettingsText(resp->job().spec()) << "\n";
    out << resp->runs_size() << " runs as " << d->host.name << " would run them; nothing queued\n";
  }
  return kExitOk;
}

int SubmitCommand(const Args& a, std::ostream& out, std::ostream& err) {
  auto spec = BuildSpec(a, a.positional.empty() ? "" : a.positional[0]);
  if (!spec.ok()) return Usage(err, std::string(spec.status().message()));
  if (a.Has("find")) return FindMaxRate(a, *spec, out, err);
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  return SubmitAndShow(*d, *spec, a, out, err);
}

int JobCommand(const Args& a, std::ostream& out, std::ostream& err) {
  if (a.positional.size() != 1) return Usage(err, a.command + " takes one job id");
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  const std::string& id = a.positional[0];
  if (a.command == "cancel") {
    v1::CancelJobRequest req;
    req.set_job_id(id);
    auto resp = d->Call(&v1::BenchService::Stub::CancelJob, req);
    if (!resp.ok()) return CallFailed(d->host, resp.status(), err);
    out << id << " " << Short(v1::JobState_descriptor(), resp->job().state()) << "\n";
    return kExitOk;
  }
  if (a.command == "watch") {
    if (auto s = FollowJob(*d, id, true, err); !s.ok()) return CallFailed(d->host, s, err);
  }
  return ShowJob(*d, id, a, out, err);
}

int RmCommand(const Args& a, std::ostream& out, std::ostream& err) {
  if (a.positional.empty()) return Usage(err, "rm takes one or more job ids");
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  // Each job on its own: one refused (running, another's) leaves the others
  // deleted, and the exit code is the first failure's.
  int code = kExitOk;
  for (const std::string& id : a.positional) {
    v1::DeleteJobRequest req;
    req.set_job_id(id);
    auto resp = d->Call(&v1::BenchService::Stub::DeleteJob, req);
    if (!resp.ok()) {
      const int failed = CallFailed(d->host, resp.status(), err);
      if (code == kExitOk) code = failed;
      if (failed == kExitUnreachable) break;
      continue;
    }
    out << Printable(id) << " deleted: " << resp->runs_deleted()
        << (resp->runs_deleted() == 1 ? " run, " : " runs, ") << Bytes(resp->bytes_freed())
        << " freed\n";
  }
  return code;
}

int JobsCommand(const Args& a, std::ostream& out, std::ostream& err) {
  v1::ListJobsRequest req;
  for (const auto& [name, value] : a.spec_flags) {
    if (name != "workload") return Usage(err, "jobs: unknown option --" + name);
    req.set_workload(value);
  }
  for (const std::string& s : a.All("state")) {
    auto state = ParseEnumShortName(v1::JobState_descriptor(), s);
    if (!state.ok()) return Usage(err, absl::StrCat("--state: unknown job state \"", s, "\""));
    req.add_states(static_cast<v1::JobState>(*state));
  }
  req.set_schedule_id(a.Option("schedule"));
  if (auto s = TimeRange(a, req.mutable_submitted_after(), req.mutable_submitted_before());
      !s.ok()) {
    return Usage(err, std::string(s.message()));
  }
  auto limit = Limit(a, 50);
  if (!limit.ok()) return Usage(err, std::string(limit.status().message()));
  req.set_page_size(std::min(*limit, 1000));
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  auto listed = d->Call(&v1::BenchService::Stub::ListJobs, req);
  if (!listed.ok()) return CallFailed(d->host, listed.status(), err);
  const v1::ListJobsResponse& resp = *listed;
  if (a.format == Format::kJson) {
    out << MessageToJson(resp) << "\n";
    return kExitOk;
  }
  Table t;
  t.header = {"job", "state", "workload", "runs", "failed", "submitted", "name"};
  for (const v1::Job& j : resp.jobs()) {
    t.rows.push_back({j.job_id(), Short(v1::JobState_descriptor(), j.state()),
                      j.spec().base().workload(), absl::StrCat(j.runs_done(), "/", j.run_count()), absl::StrCat(j.runs_failed()),
                      When(j.submit_time()), j.spec().name().empty() ? "-" : j.spec().name()});
  }
  PrintTable(t, a.format, out);
  return kExitOk;
}

absl::Status RunsQuery(const Args& a, v1::QueryRunsRequest* req) {
  for (const auto& [name, value] : a.spec_flags) {
    if (name != "workload") {
      return absl::InvalidArgumentError(a.command + ": unknown option --" + name);
    }
    req->set_workload(value);
  }
  for (const std::string& c : a.All("config")) req->add_config_equals(c);
  req->set_job_id(a.Option("job"));
  req->set_schedule_id(a.Option("schedule"));
  req->set_host_id(a.Option("host-id"));
  for (const std::string& s : a.All("state")) {
    auto state = ParseEnumShortName(v1::RunState_descriptor(), s);
    if (!state.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--state: unknown run state \"", s, "\""));
    }
    req->add_states(static_cast<v1::RunState>(*state));
  }
  return TimeRange(a, req->mutable_started_after(), req->mutable_started_before());
}

int RunsCommand(const Args& a, std::ostream& out, std::ostream& err) {
  v1::QueryRunsRequest req;
  if (auto s = RunsQuery(a, &req); !s.ok()) return Usage(err, std::string(s.message()));
  auto limit = Limit(a, 100);
  if (!limit.ok()) return Usage(err, std::string(limit.status().message()));
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  // Page through until the limit.
  v1::QueryRunsResponse all;
  std::string token;
  do {
    req.set_page_size(std::min(1000, *limit - all.runs_size()));
    req.set_page_token(token);
    auto resp = d->Call(&v1::BenchService::Stub::QueryRuns, req);
    if (!resp.ok()) return CallFailed(d->host, resp.status(), err);
    for (auto& r : *resp->mutable_runs()) *all.add_runs() = std::move(r);
    token = resp->next_page_token();
  } while (!token.empty() && all.runs_size() < *limit);
  if (a.format == Format::kJson) {
    out << MessageToJson(all) << "\n";
    return kExitOk;
  }
  if (a.format == Format::kGbench) {
    PrintGbench({all.runs().begin(), all.runs().end()}, "gpubench runs", out);
    return kExitOk;
  }
  PrintTable(RunsTable({all.runs().begin(), all.runs().end()}, true, a.format), a.format, out);
  return kExitOk;
}

TraceArrival StreamTrace(const Daemon& d, const std::string& run_id, int rank,
                         const std::function<void(std::string_view)>& on_chunk) {
  grpc::ClientContext ctx;
  PrepareCall(d.host, 0, &ctx);
  v1::GetTraceRequest req;
  req.set_run_id(run_id);
  req.set_rank(rank);
  auto reader = d.stub->GetTrace(&ctx, req);
  v1::GetTraceResponse resp;
  TraceArrival got;
  Sha256 sha;
  while (reader->Read(&resp)) {
    if (resp.has_info()) got.info = resp.info();
    if (resp.part_case() == v1::GetTraceResponse::kChunk) {
      sha.Update(resp.chunk());
      on_chunk(resp.chunk());
      got.bytes += resp.chunk().size();
    }
  }
  got.status = reader->Finish();
  got.sha256 = sha.HexDigest();
  return got;
}

absl::StatusOr<int> RankOption(const Args& a) {
  int rank = 0;
  if (a.Has("rank") && (!absl::SimpleAtoi(a.Option("rank"), &rank) || rank < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank: \"", a.Option("rank"), "\" is not a rank (0 or more)"));
  }
  return rank;
}

int TraceCommand(const Args& a, std::ostream& out, std::ostream& err) {
  if (a.positional.size() != 1 || !a.Has("out")) {
    return Usage(err, "trace takes a run id and -o FILE");
  }
  const absl::StatusOr<int> rank = RankOption(a);
  if (!rank.ok()) return Usage(err, std::string(rank.status().message()));
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  const std::string path = a.Option("out");
  const std::string temp = path + ".part";
  std::ofstream file(temp, std::ios::binary | std::ios::trunc);
  if (!file) return Usage(err, "cannot write " + temp);
  const TraceArrival got = StreamTrace(*d, a.positional[0], *rank, [&](std::string_view chunk) {
    file.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  });
  file.close();
  const bool written = static_cast<bool>(file);
  if (!got.status.ok()) {
    std::remove(temp.c_str());
    return CallFailed(d->host, got.status, err);
  }
  if (!written) {
    std::remove(temp.c_str());
    err << "gpubench: writing " << temp << " failed (disk full?)\n";
    return kExitJobFailed;
  }
  if (!got.intact()) {
    std::remove(temp.c_str());
    err << "gpubench: trace of " << a.positional[0] << " arrived damaged (" << got.bytes << " of "
        << got.info.size_bytes() << " bytes, sha256 " << got.sha256 << ")\n";
    return kExitJobFailed;
  }
  std::rename(temp.c_str(), path.c_str());
  out << path << ": " << got.bytes << " bytes, " << got.info.format()
      << " trace; open it in https://ui.perfetto.dev or chrome://tracing\n";
  return kExitOk;
}

int ModelCommand(const Args& a, std::ostream& out, std::ostream& err) {
  if (a.positional.size() == 2 && a.positional[0] == "rm") {
    auto d = ConnectOne(a);
    if (!d.ok()) return Usage(err, std::string(d.status().message()));
    v1::DeleteModelRequest req;
    req.set_sha256(a.positional[1]);
    auto resp = d->Call(&v1::BenchService::Stub::DeleteModel, req);
    if (!resp.ok()) return CallFailed(d->host, resp.status(), err);
    out << "deleted " << resp->model().sha256() << "  " << Printable(resp->model().name())
        << "\n";
    return kExitOk;
  }
  if (a.positional.size() != 2 || a.positional[0] != "upload") {
    return Usage(err, "model upload FILE | model rm SHA256");
  }
  const std::string& path = a.positional[1];
  std::ifstream file(path, std::ios::binary);
  if (!file) return Usage(err, "cannot read " + path);
  // Hash first (the daemon checks it), then stream.
  Sha256 sha;
  int64_t size = 0;
  std::string chunk(1 << 20, '\0');
  while (file.read(chunk.data(), chunk.size()) || file.gcount() > 0) {
    sha.Update(absl::string_view(chunk.data(), file.gcount()));
    size += file.gcount();
  }
  if (size == 0) return Usage(err, path + " is empty");
  const std::string digest = sha.HexDigest();
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  grpc::ClientContext ctx;
  PrepareCall(d->host, 0, &ctx);
  v1::UploadModelResponse resp;
  auto writer = d->stub->UploadModel(&ctx, &resp);
  v1::UploadModelRequest req;
  const size_t slash = path.find_last_of('/');
  req.mutable_header()->set_name(slash == std::string::npos ? path : path.substr(slash + 1));
  req.mutable_header()->set_sha256(digest);
  req.mutable_header()->set_size_bytes(size);
  // The daemon picks the loader from the declared format.
  req.mutable_header()->set_format(absl::EndsWith(path, ".pt2")
                                       ? v1::MODEL_FORMAT_AOTI_PACKAGE
                                       : v1::MODEL_FORMAT_TORCHSCRIPT);
  bool ok = writer->Write(req);
  file.clear();
  file.seekg(0);
  while (ok && (file.read(chunk.data(), chunk.size()) || file.gcount() > 0)) {
    req.set_chunk(chunk.data(), file.gcount());
    ok = writer->Write(req);
  }
  writer->WritesDone();
  if (auto s = writer->Finish(); !s.ok()) return CallFailed(d->host, s, err);
  out << resp.model().sha256() << "  " << Printable(resp.model().name()) << " (" << size << " bytes"
      << (resp.already_present() ? ", already stored" : "") << ")\n"
      << "use it with: --workload torchscript and params.model_sha256 = "
      << resp.model().sha256() << "\n";
  return kExitOk;
}

int ScheduleCommand(const Args& a, std::ostream& out, std::ostream& err) {
  const std::string verb = a.positional.empty() ? "" : a.positional[0];
  auto d = ConnectOne(a);
  if (!d.ok()) return Usage(err, std::string(d.status().message()));
  if (verb == "add") {
    if (!a.Has("cron")) return Usage(err, "schedule add needs --cron \"MIN HOUR DOM MON DOW\"");
    auto spec = BuildSpec(a, a.positional.size() > 1 ? a.positional[1] : "");
    if (!spec.ok()) return Usage(err, std::string(spec.status().message()));
    v1::CreateScheduleRequest req;
    v1::Schedule* s = req.mutable_schedule();
    s->set_name(spec->name());
    s->set_cron(a.Option("cron"));
    s->set_time_zone(a.Option("tz"));
    *s->mutable_spec() = *spec;
    auto resp = d->Call(&v1::BenchService::Stub::CreateSchedule, req);
    if (!resp.ok()) return CallFailed(d->host, resp.status(), err);
    out << resp->schedule().schedule_id() << "  next run "
        << WhenIn(resp->schedule().next_run_time(), resp->schedule().time_zone())
        << "\n";
    return kExitOk;
  }
  if (verb == "list") {
    auto listed = d->Call(&v1::BenchService::Stub::ListSchedules, v1::ListSchedulesRequest());
    if (!listed.ok()) return CallFailed(d->host, listed.status(), err);
    const v1::ListSchedulesResponse& resp = *listed;
    if (a.format == Format::kJson) {
      out << MessageToJson(resp) << "\n";
      return kExitOk;
    }
    Table t;
    // A due job the daemon could not submit shows here: its count and why.
    t.header = {"schedule", "cron", "zone", "next run", "last run", "name", "failures",
                "last error"};
    for (const v1::Schedule& s : resp.schedules()) {
      // Times in the zone the row names, never the client's own under it.
      t.rows.push_back({s.schedule_id(), s.cron(),
                        s.time_zone().empty() ? "daemon's local" : s.time_zone(),
                        s.disabled() ? "disabled" : WhenIn(s.next_run_time(), s.time_zone()),
                        WhenIn(s.last_run_time(), s.time_zone()),
                        s.name().empty() ? "-" : s.name(),
                        absl::StrCat(s.failure_count()),
                        s.last_error().empty() ? "-" : s.last_error()});
    }
    PrintTable(t, a.format, out);
    return kExitOk;
  }
  if (verb == "rm" && a.positional.size() == 2) {
    v1::DeleteScheduleRequest req;
    req.set_schedule_id(a.positional[1]);
    auto resp = d->Call(&v1::BenchService::Stub::DeleteSchedule, req);
    if (!resp.ok()) return CallFailed(d->host, resp.status(), err);
    out << "deleted " << a.positional[1] << "\n";
    return kExitOk;
  }
  if (verb == "history" && a.positional.size() == 2) {
    v1::QueryRunsRequest req;
    req.set_schedule_id(a.positional[1]);
    req.set_page_size(200);
    auto queried = d->Call(&v1::BenchService::Stub::QueryRuns, req);
    if (!queried.ok()) return CallFailed(d->host, queried.status(), err);
    const v1::QueryRunsResponse& resp = *queried;
    if (a.format == Format::kJson) {
      out << MessageToJson(resp) << "\n";
      return kExitOk;
    }
    PrintTable(RunsTable({resp.runs().begin(), resp.runs().end()}, true, a.format), a.format, out);
    return kExitOk;
  }
  return Usage(err, "schedule add|list|rm ID|history ID");
}

}  // namespace gpubench::client
