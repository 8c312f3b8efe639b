// load_bench: puts a real gpubenchd under concurrent client load and checks
// that it loses nothing. It starts a daemon child on a loopback port with a
// fresh data directory (or targets --address), then runs --clients threads,
// each with its own gRPC channel, for --seconds. Each client calls in a
// closed loop a mix that reads dominate (GetJob, ListJobs, QueryRuns) with
// SubmitJob of tiny CPU jobs (the "empty" workload, two runs each) so that
// workers keep storing runs throughout, and keeps one WatchJob stream of one
// of its own jobs open beside them (a new one when the last ends). It prints
// the latency of every rpc (a RESOURCE_EXHAUSTED submit is "refused (queue
// full)", not an error), then waits for the submitted jobs to end and checks
// that each is found, ended, and has every run of a SUCCEEDED job stored.
// The daemon's RSS is read from /proc before and after, and its CPU time and
// the machine's load average are printed beside the figures (on a shared
// machine they say how much the figures are worth).
//
// A benchmark, not a test: it asserts nothing about speed. It exits 1 when
// any rpc failed (other than a full queue), a job or run was lost, or the
// daemon died; 2 on bad flags; 3 when the daemon cannot be started.
//
// Usage: load_bench [--clients 50] [--seconds 30] [--address HOST:PORT]
//                   [--daemon PATH] [--worker PATH] [--submit_percent 10]
//                   [--drain_seconds 120] [--watch_ms 2000]
//                   [--rpc_deadline_ms 10000] [--keep_data]
// The daemon and worker default to gpubenchd and gpubench-worker beside
// load_bench (build them too: cmake --build B --target load_bench gpubenchd
// gpubench-worker).

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gpubench/v1/service.grpc.pb.h"

ABSL_FLAG(int, clients, 50, "concurrent clients, each with its own thread and channel");
ABSL_FLAG(int, seconds, 30, "length of the load phase");
ABSL_FLAG(std::string, address, "",
          "target this running daemon instead of starting one (no RSS figures)");
ABSL_FLAG(std::string, daemon, "", "gpubenchd binary (default: beside load_bench)");
ABSL_FLAG(std::string, worker, "", "gpubench-worker binary (default: beside load_bench)");
ABSL_FLAG(double, submit_percent, 10,
          "share of a client's unary calls that submit a job; the reads share "
          "the rest");
ABSL_FLAG(int, drain_seconds, 120, "longest wait for the submitted jobs to end");
ABSL_FLAG(int, watch_ms, 2000, "deadline of one WatchJob stream");
ABSL_FLAG(int, rpc_deadline_ms, 10000, "deadline of each unary rpc");
ABSL_FLAG(double, rate, 0,
          "open loop: unary calls per second across all clients, Poisson arrivals, each "
          "latency counted from its scheduled send time (no coordinated omission); 0: each "
          "client calls again as soon as its last call returns (closed loop, saturating)");
ABSL_FLAG(bool, keep_data, false, "keep the daemon's data directory (kept anyway on failure)");

namespace gpubench::bench {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

enum Rpc { kSubmitJob, kSubmitRefused, kGetJob, kListJobs, kQueryRuns, kWatchJob, kRpcs };
constexpr const char* kRpcNames[kRpcs] = {
    "SubmitJob", "SubmitJob refused", "GetJob", "ListJobs", "QueryRuns", "WatchJob (first event)"};

// The reads' shares of the unary calls that do not submit. By default one
// call in ten submits (--submit_percent), so the single CPU lease always has
// queued work and runs keep being stored while the reads go on. WatchJob is
// not in the mix: a stream holds its caller for up to --watch_ms, so a
// blocking watch among ~1 ms reads would leave the clients mostly idle;
// instead each client keeps one stream open beside its calls.
struct ReadShare {
  Rpc rpc;
  double weight;
};
constexpr ReadShare kReads[] = {{kGetJob, 35}, {kListJobs, 25}, {kQueryRuns, 30}};

// Two runs per job so that "every run stored" means more than one row.
constexpr int kBatchSizes[] = {1, 2};

// "DEADLINE_EXCEEDED" for a gRPC code: gRPC's codes are Abseil's, number for
// number.
std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

bool IsTerminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
         s == v1::JOB_STATE_CANCELLED || s == v1::JOB_STATE_INTERRUPTED;
}

double MsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Nearest rank; v sorted.
double Percentile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(q * v.size()));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

std::string BesideSelf(const std::string& name) {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return name;
  std::string dir(self, n);
  return dir.substr(0, dir.rfind('/') + 1) + name;
}

// Errors of one kind (rpc and status code): how many, and the first message.
struct ErrorKind {
  int64_t count = 0;
  std::string first_message;
};

// What one client saw. Each client owns its own; merged after the threads
// join, so the timed loop takes no lock.
struct ClientStats {
  std::array<std::vector<double>, kRpcs> latency_ms;
  // The slowest call of each rpc and when it started, to line stalls up
  // across rpcs.
  std::array<double, kRpcs> slowest_ms{};
  std::array<Clock::time_point, kRpcs> slowest_start{};
  std::array<int64_t, kRpcs> errors{};
  std::map<std::string, ErrorKind> error_kinds;  // by "rpc CODE"
  std::vector<std::string> job_ids;              // every id SubmitJob returned
  int64_t watch_ended = 0;                       // streams that ended with the job
  int64_t watch_deadline = 0;  // streams cut by --watch_ms (the job had not ended)
  int64_t watch_events = 0;
  std::vector<double> watch_stream_ms;

  void Record(Rpc rpc, double ms, Clock::time_point started) {
    if (ms > slowest_ms[rpc]) {
      slowest_ms[rpc] = ms;
      slowest_start[rpc] = started;
    }
    latency_ms[rpc].push_back(ms);
  }
  void Error(Rpc rpc, const std::string& kind, const std::string& message) {
    ++errors[rpc];
    ErrorKind& k = error_kinds[absl::StrCat(kRpcNames[rpc], " ", kind)];
    if (k.count++ == 0) k.first_message = message;
  }
  void Error(Rpc rpc, const grpc::Status& s) {
    Error(rpc, CodeName(s.error_code()), s.error_message());
  }
};

// Counters the progress line reads while clients run.
struct Progress {
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> submitted{0};
  std::atomic<int64_t> refused{0};
  std::atomic<int64_t> errors{0};
};

v1::JobSpec TinyCpuJob(int client) {
  v1::JobSpec spec;
  spec.set_name(absl::StrCat("load-bench-client-", client));
  v1::RunConfig* base = spec.mutable_base();
  base->set_workload("empty");
  base->set_device("cpu");
  for (int b : kBatchSizes) spec.mutable_sweep()->add_batch_size(b);
  v1::Measurement* m = spec.mutable_measurement();
  m->set_warmup_iterations(1);
  m->set_min_iterations(5);
  m->set_min_time_ms(10);
  m->set_max_time_ms(200);
  (*spec.mutable_labels())["source"] = "load_bench";
  return spec;
}

// One WatchJob stream on gRPC's callback API, so that its client goes on
// calling while it is open. It replays the job's events from the start; the
// latency is the time to the first event (the replay begins with the stored
// QUEUED event, so it never waits for the job), and the stream runs until
// the job ends or --watch_ms passes. Thread-safe: the reactions run on gRPC
// threads, and the owner reads the results only once Done() is true.
class Watch : public grpc::ClientReadReactor<v1::WatchJobResponse> {
 public:
  Watch(v1::BenchService::Stub* stub, const std::string& job_id) : start_(Clock::now()) {
    request_.set_job_id(job_id);
    context_.set_deadline(std::chrono::system_clock::now() +
                          milliseconds(absl::GetFlag(FLAGS_watch_ms)));
    stub->async()->WatchJob(&context_, &request_, this);
    StartRead(&response_);
    StartCall();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream is over; OnDone follows
    if (first_event_ms_ < 0) first_event_ms_ = MsBetween(start_, Clock::now());
    ++events_;
    const v1::ProgressEvent& e = response_.event();
    terminal_ = e.has_state_changed() && IsTerminal(e.state_changed().state());
    StartRead(&response_);
  }

  void OnDone(const grpc::Status& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    stream_ms_ = MsBetween(start_, Clock::now());
    status_ = status;
    done_ = true;
    cv_.notify_all();
  }

  bool Done() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
  void WaitDone() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
  }

  // Valid once done.
  const std::string& job_id() const { return request_.job_id(); }
  Clock::time_point start() const { return start_; }
  const grpc::Status& status() const { return status_; }
  double first_event_ms() const { return first_event_ms_; }  // -1: none came
  double stream_ms() const { return stream_ms_; }
  int64_t events() const { return events_; }
  bool ended_on_terminal_event() const { return terminal_; }

 private:
  const Clock::time_point start_;
  grpc::ClientContext context_;
  v1::WatchJobRequest request_;
  v1::WatchJobResponse response_;
  // Written by the reactions in turn, read by the owner after done_.
  double first_event_ms_ = -1;
  int64_t events_ = 0;
  bool terminal_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  double stream_ms_ = 0;  // guarded by mu_, as status_ and done_
  grpc::Status status_;
  bool done_ = false;
};

// One client: a closed loop of unary calls on its own channel until `end`,
// with one watch open beside them once it has a job to watch.
class Client {
 public:
  Client(int index, std::shared_ptr<grpc::Channel> channel, Progress* progress)
      : index_(index),
        stub_(v1::BenchService::NewStub(channel)),
        rng_(1000 + index),
        progress_(progress) {}

  void Run(Clock::time_point end) {
    const double submit = absl::GetFlag(FLAGS_submit_percent);
    double read_weights = 0;
    for (const ReadShare& r : kReads) read_weights += r.weight;
    std::uniform_real_distribution<double> percent(0, 100);
    // Open loop: this client's share of --rate, as a Poisson process.
    const double rate = absl::GetFlag(FLAGS_rate) / absl::GetFlag(FLAGS_clients);
    std::exponential_distribution<double> gap(rate > 0 ? rate : 1);
    Clock::time_point next = Clock::now();
    while (Clock::now() < end) {
      if (rate > 0) {
        next += std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(gap(rng_)));
        if (next >= end) break;
        std::this_thread::sleep_until(next);
        scheduled_ = next;
      }
      if (watch_ && watch_->Done()) EndWatch();
      if (!watch_ && !stats_.job_ids.empty()) {
        watch_ = std::make_unique<Watch>(stub_.get(), SomeJob());
      }
      double p = percent(rng_);
      Rpc rpc = kReads[0].rpc;
      if (p < submit) {
        rpc = kSubmitJob;
      } else {
        p = (p - submit) / (100 - submit) * read_weights;
        for (const ReadShare& r : kReads) {
          rpc = r.rpc;
          if (p < r.weight) break;
          p -= r.weight;
        }
      }
      // GetJob needs a job of this client's; until it has one, list.
      if (stats_.job_ids.empty() && rpc == kGetJob) rpc = kListJobs;
      switch (rpc) {
        case kSubmitJob:
          Submit();
          break;
        case kGetJob:
          GetJob();
          break;
        case kListJobs:
          ListJobs();
          break;
        case kQueryRuns:
          QueryRuns();
          break;
        default:
          break;
      }
      progress_->calls.fetch_add(1, std::memory_order_relaxed);
    }
    calls_end_ = Clock::now();
    // The last stream ends by --watch_ms at the latest.
    if (watch_) {
      watch_->WaitDone();
      EndWatch();
    }
  }

  ClientStats& stats() { return stats_; }
  // When its last unary call returned.
  Clock::time_point calls_end() const { return calls_end_; }

 private:
  void SetDeadline(grpc::ClientContext* context) const {
    context->set_deadline(std::chrono::system_clock::now() +
                          milliseconds(absl::GetFlag(FLAGS_rpc_deadline_ms)));
  }

  // Times one unary call and files its latency and status under rpc.
  template <typename Call>
  grpc::Status Timed(Rpc rpc, Call call) {
    grpc::ClientContext context;
    SetDeadline(&context);
    // Counted from when the call was due, if it is late (open loop).
    const Clock::time_point start = std::min(Clock::now(), scheduled_);
    grpc::Status s = call(&context);
    const double ms = MsBetween(start, Clock::now());
    if (rpc == kSubmitJob && s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      stats_.Record(kSubmitRefused, ms, start);
      progress_->refused.fetch_add(1, std::memory_order_relaxed);
      return s;
    }
    stats_.Record(rpc, ms, start);
    if (!s.ok()) {
      stats_.Error(rpc, s);
      progress_->errors.fetch_add(1, std::memory_order_relaxed);
    }
    return s;
  }

  const std::string& SomeJob() {
    return stats_
        .job_ids[std::uniform_int_distribution<size_t>(0, stats_.job_ids.size() - 1)(rng_)];
  }

  void Submit() {
    v1::SubmitJobRequest request;
    *request.mutable_spec() = TinyCpuJob(index_);
    v1::SubmitJobResponse response;
    grpc::Status s = Timed(kSubmitJob, [&](grpc::ClientContext* c) {
      return stub_->SubmitJob(c, request, &response);
    });
    if (s.ok()) {
      stats_.job_ids.push_back(response.job().job_id());
      progress_->submitted.fetch_add(1, std::memory_order_relaxed);
    }
  }

  void GetJob() {
    v1::GetJobRequest request;
    request.set_job_id(SomeJob());
    v1::GetJobResponse response;
    Timed(kGetJob, [&](grpc::ClientContext* c) { return stub_->GetJob(c, request, &response); });
  }

  // The CLI's two common listings: `gpubench jobs` and jobs in one state.
  void ListJobs() {
    v1::ListJobsRequest request;
    if (rng_() % 2) request.add_states(v1::JOB_STATE_SUCCEEDED);
    v1::ListJobsResponse response;
    Timed(kListJobs,
          [&](grpc::ClientContext* c) { return stub_->ListJobs(c, request, &response); });
  }

  // The runs of one of its jobs, or the newest runs of the workload.
  void QueryRuns() {
    v1::QueryRunsRequest request;
    if (!stats_.job_ids.empty() && rng_() % 2) {
      request.set_job_id(SomeJob());
    } else {
      request.set_workload("empty");
    }
    v1::QueryRunsResponse response;
    Timed(kQueryRuns,
          [&](grpc::ClientContext* c) { return stub_->QueryRuns(c, request, &response); });
  }

  // Files a finished watch. A stream that ends OK must end on a terminal
  // state event, and one cut by the deadline must have replayed something.
  void EndWatch() {
    const Watch& w = *watch_;
    const grpc::Status& s = w.status();
    stats_.watch_stream_ms.push_back(w.stream_ms());
    stats_.watch_events += w.events();
    stats_.Record(kWatchJob, w.first_event_ms() < 0 ? w.stream_ms() : w.first_event_ms(),
                  w.start());
    auto error = [&](const std::string& kind, const std::string& message) {
      stats_.Error(kWatchJob, kind, absl::StrCat("job ", w.job_id(), ": ", message));
      progress_->errors.fetch_add(1, std::memory_order_relaxed);
    };
    if (s.ok()) {
      ++stats_.watch_ended;
      if (!w.ended_on_terminal_event()) {
        error("OK without a terminal event",
              absl::StrCat("the stream ended OK after ", w.events(),
                           " events, the last not a terminal state"));
      }
    } else if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && w.first_event_ms() >= 0) {
      ++stats_.watch_deadline;
    } else if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      error("no event before the deadline", "no event replayed within --watch_ms");
    } else {
      error(CodeName(s.error_code()), s.error_message());
    }
    watch_.reset();
  }

  const int index_;
  std::unique_ptr<v1::BenchService::Stub> stub_;
  std::mt19937_64 rng_;
  Progress* const progress_;
  ClientStats stats_;
  std::unique_ptr<Watch> watch_;  // the open stream, if any
  Clock::time_point calls_end_;
  // When the current call was due (open loop); the far future in a closed loop.
  Clock::time_point scheduled_ = Clock::time_point::max();
};

// A gpubenchd child on 127.0.0.1, port chosen by the daemon and read back
// from --port-file. Not thread-safe.
class DaemonChild {
 public:
  // Starts the daemon with its data in data_dir and waits (up to 60 s: it
  // probes devices with the worker first) until it serves.
  bool Start(const std::string& daemon, const std::string& worker, const std::string& data_dir) {
    log_path_ = data_dir + "/daemon.log";
    const std::string port_file = data_dir + "/port";
    std::vector<std::string> args = {daemon,       "--listen", "127.0.0.1:0",
                                     "--data-dir", data_dir,   "--port-file",
                                     port_file,    "--worker", worker};
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      if (!freopen(log_path_.c_str(), "a", stderr)) _exit(126);
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 1200; ++i) {
      std::ifstream in(port_file);
      if (in >> port_ && port_ > 0) return true;
      if (!Alive()) return false;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
  }

  bool Alive() {
    if (exited_) return false;
    if (waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
    return !exited_;
  }

  // SIGTERM (a clean shutdown: running jobs are stopped and requeued), then
  // SIGKILL after 60 s. Returns how it ended, e.g. "exit 0", "signal 9".
  std::string Stop() {
    if (!exited_ && pid_ > 0) {
      kill(pid_, SIGTERM);
      for (int i = 0; i < 600 && Alive(); ++i) std::this_thread::sleep_for(milliseconds(100));
      if (!exited_) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status_, 0);
        exited_ = true;
        return absl::StrCat("killed after 60 s without exiting (signal ", SIGKILL, ")");
      }
    }
    return Describe();
  }

  std::string Describe() const {
    if (!exited_) return "running";
    if (WIFEXITED(status_)) return absl::StrCat("exit ", WEXITSTATUS(status_));
    if (WIFSIGNALED(status_)) return absl::StrCat("signal ", WTERMSIG(status_));
    return "ended";
  }
  bool clean_exit() const { return exited_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0; }

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  const std::string& log_path() const { return log_path_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int status_ = 0;
  bool exited_ = false;
  std::string log_path_;
};

// "VmRSS 41.2 MiB, VmHWM (peak) 45.0 MiB, 37 threads" from /proc/<pid>/status.
std::string MemoryOf(pid_t pid) {
  if (pid <= 0) return "unknown (--address given)";
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line, rss = "?", hwm = "?", threads = "?";
  auto value = [](const std::string& l) {
    const size_t start = l.find_first_not_of(" \t", l.find(':') + 1);
    return start == std::string::npos ? std::string() : l.substr(start);
  };
  auto mib = [](const std::string& kb) {
    return absl::StrFormat("%.1f MiB", std::atof(kb.c_str()) / 1024.0);
  };
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) rss = mib(value(line));
    if (line.rfind("VmHWM:", 0) == 0) hwm = mib(value(line));
    if (line.rfind("Threads:", 0) == 0) threads = value(line);
  }
  return absl::StrCat("VmRSS ", rss, ", VmHWM (peak) ", hwm, ", ", threads, " threads");
}

// CPU seconds (user + system) the process has used, from /proc/<pid>/stat;
// -1 when unknown. Its workers are other processes and are not counted.
double CpuSecondsOf(pid_t pid) {
  if (pid <= 0) return -1;
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  std::getline(in, stat);
  // Fields after the command name (which may hold spaces) start at ") ".
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::atof(field.c_str());  // utime, stime
  }
  return ticks / sysconf(_SC_CLK_TCK);
}

double OwnCpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto s = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return s(usage.ru_utime) + s(usage.ru_stime);
}

// The first line of /proc/loadavg: the machine may be shared, and the
// figures mean little without it.
std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  std::getline(in, line);
  return line;
}

// What the end-of-load check found.
struct JobCheck {
  int64_t submitted = 0;
  int64_t found = 0;
  int64_t not_found = 0;     // GetJob said NOT_FOUND: the job is gone
  int64_t runs_missing = 0;  // SUCCEEDED jobs with fewer runs than run_count
  int64_t not_ended = 0;     // still queued or running after the drain
  int64_t check_errors = 0;  // GetJob/ListRuns failed otherwise
  std::map<std::string, int64_t> states;
  std::vector<std::string> notes;  // the first few problems, with job ids
  double drain_s = 0;
  int64_t lost() const { return not_found + runs_missing; }
};

// Waits up to drain for every job to end, then checks each one.
JobCheck CheckJobs(v1::BenchService::Stub* stub, const std::vector<std::string>& ids,
                   std::chrono::seconds drain) {
  JobCheck check;
  check.submitted = ids.size();
  auto note = [&](std::string text) {
    if (check.notes.size() < 10) check.notes.push_back(std::move(text));
  };
  auto get = [&](const std::string& id, v1::Job* job) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::GetJobRequest request;
    request.set_job_id(id);
    v1::GetJobResponse response;
    grpc::Status s = stub->GetJob(&context, request, &response);
    *job = response.job();
    return s;
  };

  const Clock::time_point start = Clock::now();
  std::set<std::string> pending(ids.begin(), ids.end());
  while (!pending.empty() && Clock::now() - start < drain) {
    for (auto it = pending.begin(); it != pending.end();) {
      v1::Job job;
      // Anything but an ended job is looked at again in the final pass.
      it = get(*it, &job).ok() && IsTerminal(job.state()) ? pending.erase(it) : ++it;
    }
    if (!pending.empty()) std::this_thread::sleep_for(milliseconds(1000));
  }
  check.drain_s = MsBetween(start, Clock::now()) / 1000;

  for (const std::string& id : ids) {
    v1::Job job;
    grpc::Status s = get(id, &job);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
      ++check.not_found;
      note(absl::StrCat("job ", id, ": GetJob NOT_FOUND: ", s.error_message()));
      continue;
    }
    if (!s.ok()) {
      ++check.check_errors;
      note(
          absl::StrCat("job ", id, ": GetJob ", CodeName(s.error_code()), ": ", s.error_message()));
      continue;
    }
    ++check.found;
    ++check.states[v1::JobState_Name(job.state())];
    if (!IsTerminal(job.state())) {
      ++check.not_ended;
      continue;
    }
    if (job.state() == v1::JOB_STATE_FAILED) {
      note(absl::StrCat("job ", id, ": FAILED: ", job.error()));
    }
    if (job.state() != v1::JOB_STATE_SUCCEEDED) continue;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ListRunsRequest request;
    request.set_job_id(id);
    v1::ListRunsResponse runs;
    s = stub->ListRuns(&context, request, &runs);
    if (!s.ok()) {
      ++check.check_errors;
      note(absl::StrCat("job ", id, ": ListRuns ", CodeName(s.error_code()), ": ",
                        s.error_message()));
    } else if (runs.runs_size() != job.run_count()) {
      ++check.runs_missing;
      note(absl::StrCat("job ", id, ": SUCCEEDED with ", runs.runs_size(), " runs stored of ",
                        job.run_count(), " (runs_done ", job.runs_done(), ")"));
    }
  }
  return check;
}

int Main() {
  const int clients = absl::GetFlag(FLAGS_clients);
  const int seconds = absl::GetFlag(FLAGS_seconds);
  const double submit = absl::GetFlag(FLAGS_submit_percent);
  if (clients < 1 || seconds < 1 || absl::GetFlag(FLAGS_watch_ms) < 1 || submit < 0 ||
      submit >= 100 || absl::GetFlag(FLAGS_rpc_deadline_ms) < 1 ||
      absl::GetFlag(FLAGS_drain_seconds) < 0) {
    std::cerr << "load_bench: --clients, --seconds, --watch_ms and "
                 "--rpc_deadline_ms must "
                 "be positive, --drain_seconds not negative, --submit_percent "
                 "in [0, 100)\n";
    return 2;
  }

  DaemonChild daemon;
  std::string address = absl::GetFlag(FLAGS_address), data_dir;
  if (address.empty()) {
    std::string daemon_path = absl::GetFlag(FLAGS_daemon);
    std::string worker_path = absl::GetFlag(FLAGS_worker);
    if (daemon_path.empty()) daemon_path = BesideSelf("gpubenchd");
    if (worker_path.empty()) worker_path = BesideSelf("gpubench-worker");
    for (const std::string& binary : {daemon_path, worker_path}) {
      if (access(binary.c_str(), X_OK) != 0) {
        std::cerr << "load_bench: " << binary << " is not an executable; build it or "
                  << "give --daemon/--worker\n";
        return 3;
      }
    }
    char dir_template[] = "/tmp/gpubench-load-XXXXXX";
    if (!mkdtemp(dir_template)) {
      std::cerr << "load_bench: cannot create a temporary data directory\n";
      return 3;
    }
    data_dir = dir_template;
    if (!daemon.Start(daemon_path, worker_path, data_dir)) {
      std::cerr << "load_bench: gpubenchd did not start (" << daemon.Describe() << "); see "
                << daemon.log_path() << "\n";
      daemon.Stop();
      return 3;
    }
    address = absl::StrCat("127.0.0.1:", daemon.port());
    std::cout << "daemon: " << daemon_path << " pid " << daemon.pid() << " on " << address
              << ", data " << data_dir << "\n";
  } else {
    std::cout << "daemon: existing, at " << address << "\n";
  }
  double read_weights = 0;
  for (const ReadShare& r : kReads) read_weights += r.weight;
  std::cout << absl::StrFormat(
      "load: %d clients for %d s; unary mix SubmitJob %g%%, GetJob %.1f%%, "
      "ListJobs "
      "%.1f%%, QueryRuns %.1f%%; plus one WatchJob stream open per client "
      "(deadline "
      "%d ms); jobs: workload empty on cpu, %d runs each\n",
      clients, seconds, submit, (100 - submit) * kReads[0].weight / read_weights,
      (100 - submit) * kReads[1].weight / read_weights,
      (100 - submit) * kReads[2].weight / read_weights, absl::GetFlag(FLAGS_watch_ms),
      std::size(kBatchSizes));
  std::cout << (absl::GetFlag(FLAGS_rate) > 0
                    ? absl::StrFormat("pacing: open loop, %g calls/s in all (Poisson), latency "
                                      "from each call's scheduled time\n",
                                      absl::GetFlag(FLAGS_rate))
                    : std::string("pacing: closed loop (each client calls again at once): "
                                  "latency is clients / throughput once the host saturates\n"));
  const std::string memory_before = MemoryOf(daemon.pid());
  std::cout << "daemon memory before the load: " << memory_before << "\n" << std::flush;

  // Every client gets its own channel and its own connection: a local
  // subchannel pool stops gRPC from sharing one TCP connection among
  // channels with equal arguments.
  Progress progress;
  std::vector<std::unique_ptr<Client>> pool;
  for (int i = 0; i < clients; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
      std::cerr << "load_bench: client " << i << " cannot connect to " << address << "\n";
      daemon.Stop();
      return 3;
    }
    pool.push_back(std::make_unique<Client>(i, channel, &progress));
  }

  const double daemon_cpu_before = CpuSecondsOf(daemon.pid());
  const double own_cpu_before = OwnCpuSeconds();
  const std::string load_average_before = LoadAverage();
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::seconds(seconds);
  // Wall-clock time, to line the "max at s" column up with the daemon's log
  // or a trace of it.
  std::cout << "load started at "
            << absl::FormatTime("%Y-%m-%d %H:%M:%E3S UTC", absl::Now(), absl::UTCTimeZone())
            << "\n";
  std::vector<std::thread> threads;
  for (auto& client : pool) {
    threads.emplace_back([&client, end] { client->Run(end); });
  }
  bool daemon_died = false;
  for (int s = 5; Clock::now() < end; s += 5) {
    std::this_thread::sleep_until(std::min(end, start + std::chrono::seconds(s)));
    if (!absl::GetFlag(FLAGS_address).empty() || daemon.Alive()) {
      std::cout << absl::StrFormat(
                       "  %5.1f s  %7d calls  %5d submitted  %5d refused  %d "
                       "errors  %s\n",
                       MsBetween(start, Clock::now()) / 1000, progress.calls.load(),
                       progress.submitted.load(), progress.refused.load(), progress.errors.load(),
                       MemoryOf(daemon.pid()))
                << std::flush;
    } else if (!daemon_died) {
      daemon_died = true;
      std::cout << "  the daemon died during the load: " << daemon.Describe() << "\n";
    }
  }
  for (auto& t : threads) t.join();
  // Rates are over the unary loop, not the wait for the last streams.
  Clock::time_point calls_end = start;
  for (auto& client : pool) calls_end = std::max(calls_end, client->calls_end());
  const double load_s = MsBetween(start, calls_end) / 1000;
  const std::string memory_after = MemoryOf(daemon.pid());
  const double daemon_cpu_s = CpuSecondsOf(daemon.pid()) - daemon_cpu_before;
  const double own_cpu_s = OwnCpuSeconds() - own_cpu_before;

  ClientStats all;
  for (auto& client : pool) {
    ClientStats& c = client->stats();
    for (int r = 0; r < kRpcs; ++r) {
      all.latency_ms[r].insert(all.latency_ms[r].end(), c.latency_ms[r].begin(),
                               c.latency_ms[r].end());
      all.errors[r] += c.errors[r];
      if (c.slowest_ms[r] > all.slowest_ms[r]) {
        all.slowest_ms[r] = c.slowest_ms[r];
        all.slowest_start[r] = c.slowest_start[r];
      }
    }
    for (auto& [kind, e] : c.error_kinds) {
      ErrorKind& k = all.error_kinds[kind];
      if (k.count == 0) k.first_message = e.first_message;
      k.count += e.count;
    }
    all.job_ids.insert(all.job_ids.end(), c.job_ids.begin(), c.job_ids.end());
    all.watch_ended += c.watch_ended;
    all.watch_deadline += c.watch_deadline;
    all.watch_events += c.watch_events;
    all.watch_stream_ms.insert(all.watch_stream_ms.end(), c.watch_stream_ms.begin(),
                               c.watch_stream_ms.end());
  }

  std::cout << absl::StrFormat(
      "\n== load: %d clients for %.1f s (wall, until the last "
      "unary call returned)\n",
      clients, load_s);
  // "max at s": when the slowest call started, in seconds into the load.
  // Format strings are literals: absl checks them at compile time (clang
  // refuses a non-constexpr one).
  std::cout << absl::StrFormat("%-24s %8s %9s %9s %9s %9s %7s %9s\n", "rpc", "calls", "calls/s", "p50 ms", "p99 ms", "max ms",
                               "errors", "max at s");
  int64_t total_calls = 0, total_errors = 0;
  for (int r = 0; r < kRpcs; ++r) {
    std::vector<double>& v = all.latency_ms[r];
    std::sort(v.begin(), v.end());
    total_calls += v.size();
    total_errors += all.errors[r];
    const std::string max_at =
        v.empty() ? "-" : absl::StrFormat("%.1f", MsBetween(start, all.slowest_start[r]) / 1000);
    std::cout << absl::StrFormat("%-24s %8d %9.1f %9.3f %9.3f %9.3f %7d %9s\n", kRpcNames[r], v.size(), v.size() / load_s,
                                 Percentile(v, 0.50), Percentile(v, 0.99),
                                 v.empty() ? 0.0 : v.back(), all.errors[r], max_at);
  }
  std::cout << absl::StrFormat("%-24s %8d %9.1f %37d\n", "all", total_calls, total_calls / load_s,
                               total_errors);
  std::sort(all.watch_stream_ms.begin(), all.watch_stream_ms.end());
  std::cout << absl::StrFormat(
      "refused (queue full): %d of %d submits\n"
      "WatchJob streams: %d ended with their job, %d cut at the %d ms "
      "deadline, %d events; "
      "whole stream p50 %.1f ms, max %.1f ms\n",
      all.latency_ms[kSubmitRefused].size(),
      all.latency_ms[kSubmitRefused].size() + all.latency_ms[kSubmitJob].size(), all.watch_ended,
      all.watch_deadline, absl::GetFlag(FLAGS_watch_ms), all.watch_events,
      Percentile(all.watch_stream_ms, 0.5),
      all.watch_stream_ms.empty() ? 0.0 : all.watch_stream_ms.back());
  const double cores = std::thread::hardware_concurrency();
  std::cout << absl::StrFormat(
      "CPU during the load (%g cores): daemon %s, load_bench %.1f s (%.2f "
      "cores); "
      "load average before \"%s\", after \"%s\"\n",
      cores,
      daemon_cpu_s < 0
          ? std::string("unknown")
          : absl::StrFormat("%.1f s (%.2f cores)", daemon_cpu_s, daemon_cpu_s / load_s),
      own_cpu_s, own_cpu_s / load_s, load_average_before, LoadAverage());
  if (!all.error_kinds.empty()) {
    std::cout << "first error of each kind:\n";
    for (const auto& [kind, e] : all.error_kinds) {
      std::cout << "  " << kind << " (" << e.count << "): " << e.first_message << "\n";
    }
  }

  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto stub = v1::BenchService::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
  std::cout << "\n== jobs (waiting up to " << absl::GetFlag(FLAGS_drain_seconds)
            << " s for them to end)\n"
            << std::flush;
  const JobCheck check =
      CheckJobs(stub.get(), all.job_ids, std::chrono::seconds(absl::GetFlag(FLAGS_drain_seconds)));
  std::cout << absl::StrFormat(
      "jobs submitted  %d\njobs found      %d\njobs lost       %d (%d not "
      "found, %d "
      "SUCCEEDED with runs missing)\njobs not ended  %d (after %.1f s of "
      "drain)\n",
      check.submitted, check.found, check.lost(), check.not_found, check.runs_missing,
      check.not_ended, check.drain_s);
  if (check.check_errors > 0) {
    std::cout << "check rpcs failed: " << check.check_errors << "\n";
  }
  std::cout << "final states:";
  for (const auto& [state, n] : check.states) std::cout << " " << state << " " << n;
  std::cout << "\n";
  for (const std::string& n : check.notes) std::cout << "  " << n << "\n";

  std::cout << "\n== daemon memory\nbefore the load: " << memory_before
            << "\nafter the load:  " << memory_after
            << "\nafter the drain: " << MemoryOf(daemon.pid()) << "\n";

  bool failed = total_errors > 0 || check.lost() > 0 || check.check_errors > 0 || daemon_died;
  if (!data_dir.empty()) {
    const std::string how = daemon.Stop();
    std::cout << "daemon stopped (SIGTERM): " << how << "\n";
    failed |= !daemon.clean_exit();
    if (failed || absl::GetFlag(FLAGS_keep_data)) {
      std::cout << "data and daemon log kept in " << data_dir << "\n";
    } else {
      std::error_code ec;
      std::filesystem::remove_all(data_dir, ec);
    }
  }
  std::cout << (failed ? "RESULT: FAIL" : "RESULT: OK") << "\n";
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace gpubench::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "puts a gpubenchd under concurrent gRPC load and checks that no job is "
      "lost");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "load_bench: unexpected argument \"" << rest[1] << "\"\n";
    return 2;
  }
  // A daemon that dies mid-call must not take the benchmark with it.
  signal(SIGPIPE, SIG_IGN);
  return gpubench::bench::Main();
}
