// load_bench's clients: each a closed (or paced) loop of unary calls on its
// own channel, with one WatchJob stream open beside them, and the figures
// each keeps (latencies, errors by kind, the jobs it submitted). Only
// load_bench.cc includes it.
#ifndef GPUBENCH_BENCH_LOAD_CLIENT_H_
#define GPUBENCH_BENCH_LOAD_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "gpubench/v1/service.grpc.pb.h"

ABSL_DECLARE_FLAG(int, clients);
ABSL_DECLARE_FLAG(double, submit_percent);
ABSL_DECLARE_FLAG(int, watch_ms);
ABSL_DECLARE_FLAG(int, rpc_deadline_ms);
ABSL_DECLARE_FLAG(double, rate);

namespace gpubench::bench {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

enum Rpc { kSubmitJob, kSubmitRefused, kGetJob, kListJobs, kQueryRuns, kWatchJob, kRpcs };
inline constexpr const char* kRpcNames[kRpcs] = {
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
inline constexpr ReadShare kReads[] = {{kGetJob, 35}, {kListJobs, 25}, {kQueryRuns, 30}};

// Two runs per job so that "every run stored" means more than one row.
inline constexpr int kBatchSizes[] = {1, 2};

// "DEADLINE_EXCEEDED" for a gRPC code: gRPC's codes are Abseil's, number for
// number.
inline std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

inline bool IsTerminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
         s == v1::JOB_STATE_CANCELLED || s == v1::JOB_STATE_INTERRUPTED;
}

inline double MsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Nearest rank; v sorted.
inline double Percentile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(q * v.size()));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
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

inline v1::JobSpec TinyCpuJob(int client) {
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

}  // namespace gpubench::bench

#endif  // GPUBENCH_BENCH_LOAD_CLIENT_H_
