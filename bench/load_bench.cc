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
#include "bench/bench_process.h"
#include "bench/load_client.h"
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

bool FlagsValid() {
  const double submit = absl::GetFlag(FLAGS_submit_percent);
  if (absl::GetFlag(FLAGS_clients) < 1 || absl::GetFlag(FLAGS_seconds) < 1 ||
      absl::GetFlag(FLAGS_watch_ms) < 1 || submit < 0 || submit >= 100 ||
      absl::GetFlag(FLAGS_rpc_deadline_ms) < 1 || absl::GetFlag(FLAGS_drain_seconds) < 0) {
    std::cerr << "load_bench: --clients, --seconds, --watch_ms and "
                 "--rpc_deadline_ms must "
                 "be positive, --drain_seconds not negative, --submit_percent "
                 "in [0, 100)\n";
    return false;
  }
  return true;
}

// The daemon under load: --address's, or one started here on a fresh data
// directory (*data_dir). Its address; empty (and said why) if none.
std::string StartDaemon(DaemonChild* daemon, std::string* data_dir) {
  std::string address = absl::GetFlag(FLAGS_address);
  if (!address.empty()) {
    std::cout << "daemon: existing, at " << address << "\n";
    return address;
  }
  std::string daemon_path = absl::GetFlag(FLAGS_daemon);
  std::string worker_path = absl::GetFlag(FLAGS_worker);
  if (daemon_path.empty()) daemon_path = BesideSelf("gpubenchd");
  if (worker_path.empty()) worker_path = BesideSelf("gpubench-worker");
  for (const std::string& binary : {daemon_path, worker_path}) {
    if (access(binary.c_str(), X_OK) != 0) {
      std::cerr << "load_bench: " << binary << " is not an executable; build it or "
                << "give --daemon/--worker\n";
      return "";
    }
  }
  char dir_template[] = "/tmp/gpubench-load-XXXXXX";
  if (!mkdtemp(dir_template)) {
    std::cerr << "load_bench: cannot create a temporary data directory\n";
    return "";
  }
  *data_dir = dir_template;
  if (!daemon->Start(daemon_path, worker_path, *data_dir)) {
    std::cerr << "load_bench: gpubenchd did not start (" << daemon->Describe() << "); see "
              << daemon->log_path() << "\n";
    daemon->Stop();
    return "";
  }
  address = absl::StrCat("127.0.0.1:", daemon->port());
  std::cout << "daemon: " << daemon_path << " pid " << daemon->pid() << " on " << address
            << ", data " << *data_dir << "\n";
  return address;
}

void PrintPlan(int clients, int seconds) {
  const double submit = absl::GetFlag(FLAGS_submit_percent);
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
}

// Every client gets its own channel and its own connection: a local
// subchannel pool stops gRPC from sharing one TCP connection among
// channels with equal arguments. False if one cannot connect.
bool ConnectClients(const std::string& address, int clients, Progress* progress,
                    std::vector<std::unique_ptr<Client>>* pool) {
  for (int i = 0; i < clients; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
      std::cerr << "load_bench: client " << i << " cannot connect to " << address << "\n";
      return false;
    }
    pool->push_back(std::make_unique<Client>(i, channel, progress));
  }
  return true;
}

// What the load phase measured beside the clients' own figures.
struct LoadPhase {
  Clock::time_point start;
  double load_s = 0;  // until the last unary call returned
  double daemon_cpu_s = 0, own_cpu_s = 0;
  std::string load_average_before, memory_after;
  bool daemon_died = false;
};

// Runs every client until --seconds pass, printing progress every 5 s.
LoadPhase RunLoad(std::vector<std::unique_ptr<Client>>& pool, DaemonChild& daemon,
                  const Progress& progress) {
  LoadPhase phase;
  const double daemon_cpu_before = CpuSecondsOf(daemon.pid());
  const double own_cpu_before = OwnCpuSeconds();
  phase.load_average_before = LoadAverage();
  const Clock::time_point start = phase.start = Clock::now();
  const Clock::time_point end = start + std::chrono::seconds(absl::GetFlag(FLAGS_seconds));
  // Wall-clock time, to line the "max at s" column up with the daemon's log
  // or a trace of it.
  std::cout << "load started at "
            << absl::FormatTime("%Y-%m-%d %H:%M:%E3S UTC", absl::Now(), absl::UTCTimeZone())
            << "\n";
  std::vector<std::thread> threads;
  for (auto& client : pool) {
    threads.emplace_back([&client, end] { client->Run(end); });
  }
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
    } else if (!phase.daemon_died) {
      phase.daemon_died = true;
      std::cout << "  the daemon died during the load: " << daemon.Describe() << "\n";
    }
  }
  for (auto& t : threads) t.join();
  // Rates are over the unary loop, not the wait for the last streams.
  Clock::time_point calls_end = start;
  for (auto& client : pool) calls_end = std::max(calls_end, client->calls_end());
  phase.load_s = MsBetween(start, calls_end) / 1000;
  phase.memory_after = MemoryOf(daemon.pid());
  phase.daemon_cpu_s = CpuSecondsOf(daemon.pid()) - daemon_cpu_before;
  phase.own_cpu_s = OwnCpuSeconds() - own_cpu_before;
  return phase;
}

ClientStats Merge(std::vector<std::unique_ptr<Client>>& pool) {
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
  return all;
}

// The latency table, the streams and the CPU; the number of failed calls.
int64_t PrintLoad(ClientStats& all, const LoadPhase& phase, int clients) {
  const double load_s = phase.load_s;
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
        v.empty() ? "-"
                  : absl::StrFormat("%.1f", MsBetween(phase.start, all.slowest_start[r]) / 1000);
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
      phase.daemon_cpu_s < 0 ? std::string("unknown")
                             : absl::StrFormat("%.1f s (%.2f cores)", phase.daemon_cpu_s,
                                               phase.daemon_cpu_s / load_s),
      phase.own_cpu_s, phase.own_cpu_s / load_s, phase.load_average_before, LoadAverage());
  if (!all.error_kinds.empty()) {
    std::cout << "first error of each kind:\n";
    for (const auto& [kind, e] : all.error_kinds) {
      std::cout << "  " << kind << " (" << e.count << "): " << e.first_message << "\n";
    }
  }
  return total_errors;
}

// Waits for every submitted job to end and checks that each is there with
// its runs; prints what it found.
JobCheck CheckAndPrintJobs(const std::string& address, const std::vector<std::string>& job_ids) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto stub = v1::BenchService::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
  std::cout << "\n== jobs (waiting up to " << absl::GetFlag(FLAGS_drain_seconds)
            << " s for them to end)\n"
            << std::flush;
  const JobCheck check =
      CheckJobs(stub.get(), job_ids, std::chrono::seconds(absl::GetFlag(FLAGS_drain_seconds)));
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
  return check;
}

int Main() {
  if (!FlagsValid()) return 2;
  const int clients = absl::GetFlag(FLAGS_clients);
  DaemonChild daemon;
  std::string data_dir;
  const std::string address = StartDaemon(&daemon, &data_dir);
  if (address.empty()) return 3;
  PrintPlan(clients, absl::GetFlag(FLAGS_seconds));
  const std::string memory_before = MemoryOf(daemon.pid());
  std::cout << "daemon memory before the load: " << memory_before << "\n" << std::flush;
  Progress progress;
  std::vector<std::unique_ptr<Client>> pool;
  if (!ConnectClients(address, clients, &progress, &pool)) {
    daemon.Stop();
    return 3;
  }
  const LoadPhase phase = RunLoad(pool, daemon, progress);
  ClientStats all = Merge(pool);
  const int64_t total_errors = PrintLoad(all, phase, clients);
  const JobCheck check = CheckAndPrintJobs(address, all.job_ids);
  std::cout << "\n== daemon memory\nbefore the load: " << memory_before
            << "\nafter the load:  " << phase.memory_after
            << "\nafter the drain: " << MemoryOf(daemon.pid()) << "\n";
  bool failed =
      total_errors > 0 || check.lost() > 0 || check.check_errors > 0 || phase.daemon_died;
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
