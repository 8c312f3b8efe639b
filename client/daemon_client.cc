// The CLI's daemon client: connecting to one daemon or the fleet, paging
// through a job's runs, and how a failed call reads.
#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "common/workload_registry.h"
#include "report/roofline.h"

namespace gpubench::client {

absl::StatusOr<std::vector<Daemon>> ConnectAll(const Args& a, bool all_fleet) {
  std::vector<std::string> flags;
  for (const std::string& h : a.All("host")) {
    for (absl::string_view part : absl::StrSplit(h, ',', absl::SkipWhitespace())) {
      flags.emplace_back(part);
    }
  }
  auto hosts = ResolveHosts(flags, all_fleet);
  if (!hosts.ok()) return hosts.status();
  std::vector<Daemon> daemons;
  int call_seconds = all_fleet ? kFleetCallSeconds : kCallSeconds;
  if (a.Has("host-timeout") &&
      (!absl::SimpleAtoi(a.Option("host-timeout"), &call_seconds) || call_seconds < 1 ||
       call_seconds > 3600)) {
    return absl::InvalidArgumentError("--host-timeout: seconds from 1 to 3600");
  }
  for (HostEntry& h : *hosts) {
    Daemon d;
    d.call_seconds = call_seconds;
    d.stub = v1::BenchService::NewStub(Dial(h));
    d.host = std::move(h);
    daemons.push_back(std::move(d));
  }
  return daemons;
}

absl::Status ListAllRuns(const Daemon& d, const std::string& job_id, bool include_samples,
                         std::vector<v1::Run>* runs) {
  runs->clear();
  v1::ListRunsRequest req;
  req.set_job_id(job_id);
  req.set_include_samples(include_samples);
  do {
    auto resp = d.Call(&v1::BenchService::Stub::ListRuns, req);
    if (!resp.ok()) return resp.status();
    runs->insert(runs->end(), resp->runs().begin(), resp->runs().end());
    req.set_page_token(resp->next_page_token());
  } while (!req.page_token().empty());
  return absl::OkStatus();
}

absl::StatusOr<v1::Run> FetchRun(const Daemon& d, const std::string& run_id,
                                 bool include_samples) {
  v1::GetRunRequest req;
  req.set_run_id(run_id);
  req.set_include_samples(include_samples);
  auto resp = d.Call(&v1::BenchService::Stub::GetRun, req);
  if (!resp.ok()) return resp.status();
  return std::move(*resp->mutable_run());
}

absl::Status ListPeakRuns(const Daemon& d, const v1::Job& job, const std::vector<v1::Run>& runs,
                          std::vector<v1::Run>* peak_runs) {
  peak_runs->clear();
  if (!report::UsesPeaks(report::RunPointers(runs))) return absl::OkStatus();
  // The host's own peaks: its matmul and copy runs.
  for (WorkloadId id : {WorkloadId::kMatmul, WorkloadId::kCopy}) {
    v1::QueryRunsRequest req;
    req.set_workload(NameOf(id));
    req.set_host_id(job.host_id());
    req.add_states(v1::RUN_STATE_SUCCEEDED);
    for (int page = 0; page < 10; ++page) {
      auto resp = d.Call(&v1::BenchService::Stub::QueryRuns, req);
      if (!resp.ok()) return resp.status();
      peak_runs->insert(peak_runs->end(), resp->runs().begin(), resp->runs().end());
      if (resp->next_page_token().empty()) break;
      req.set_page_token(resp->next_page_token());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Daemon> ConnectOne(const Args& a) {
  auto all = ConnectAll(a, /*all_fleet=*/false);
  if (!all.ok()) return all.status();
  return std::move(all->front());
}

absl::Status FromGrpc(const grpc::Status& s) {
  // gRPC's codes are the canonical codes absl's are.
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

int CallFailed(const HostEntry& host, const absl::Status& s, std::ostream& err) {
  if (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) {
    err << "gpubench: cannot reach a daemon at " << host.address << " (" << host.name
        << "): " << Printable(std::string(s.message())) << "\n  start one with `gpubenchd --listen "
        << host.address << "` or pass --host / GPUBENCH_HOST\n";
    return kExitUnreachable;
  }
  if (absl::IsUnauthenticated(s) || absl::IsPermissionDenied(s)) {
    err << "gpubench: " << host.name << ": " << Printable(std::string(s.message()))
        << (absl::IsUnauthenticated(s)
                ? "\n  set the host's token (or token_file) in the fleet file\n"
                : "\n");
    return kExitAuth;
  }
  err << "gpubench: " << host.name << ": " << Printable(std::string(s.message())) << "\n";
  return absl::IsInvalidArgument(s) ? kExitUsage : kExitJobFailed;
}

void ForEachIndex(size_t n, const std::function<void(size_t)>& call) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  const size_t workers = std::min<size_t>(n, kMaxHostsAtOnce);
  for (size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) call(i);
    });
  }
  for (auto& t : threads) t.join();
}

void ForEachDaemon(const std::vector<Daemon>& daemons, const std::function<void(size_t)>& call) {
  ForEachIndex(daemons.size(), call);
}

std::string HostsAnswered(const std::vector<Daemon>& daemons,
                          const std::vector<absl::Status>& status) {
  std::vector<std::string> unreachable, refused, failed;
  for (size_t i = 0; i < daemons.size(); ++i) {
    if (status[i].ok()) continue;
    const std::string& name = daemons[i].host.name;
    if (absl::IsUnauthenticated(status[i]) || absl::IsPermissionDenied(status[i])) {
      refused.push_back(name);
    } else if (absl::IsUnavailable(status[i]) || absl::IsDeadlineExceeded(status[i])) {
      unreachable.push_back(name);
    } else {
      failed.push_back(name);
    }
  }
  std::string text = absl::StrCat(
      daemons.size() - unreachable.size() - refused.size() - failed.size(), " of ",
      daemons.size(), daemons.size() == 1 ? " host answered" : " hosts answered");
  const std::pair<const char*, const std::vector<std::string>*> kinds[] = {
      {"unreachable", &unreachable}, {"refused the caller", &refused}, {"failed", &failed}};
  for (const auto& [what, names] : kinds) {
    if (names->empty()) continue;
    absl::StrAppend(&text, "; ", names->size(), " ", what, " (",
                    Printable(absl::StrJoin(*names, ", ")), ")");
  }
  return text;
}

}  // namespace gpubench::client
