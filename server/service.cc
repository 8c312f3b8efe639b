#include "server/service.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/spec.h"
#include "common/version.h"
#include "google/protobuf/util/time_util.h"
#include "server/status_util.h"

namespace gpubench::server {
namespace {

// The value after "key:" on the first matching line of a /proc file.
std::string ProcField(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      auto start = line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  }
  return "";
}

}  // namespace

v1::HostInfo ProbeMachine(const std::string& address) {
  v1::HostInfo host;
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  host.set_hostname(name);
  host.set_host_id(name);
  struct utsname u;
  if (uname(&u) == 0) {
    host.set_kernel(u.release);
    host.set_os(u.sysname);
  }
  std::string pretty = ProcField("/etc/os-release", "PRETTY_NAME");
  if (pretty.empty()) {
    std::ifstream in("/etc/os-release");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("PRETTY_NAME=", 0) == 0) pretty = line.substr(12);
    }
  }
  if (!pretty.empty()) {
    if (pretty.front() == '"') pretty = pretty.substr(1, pretty.size() - 2);
    host.set_os(pretty);
  }
  host.set_cpu_model(ProcField("/proc/cpuinfo", "model name"));
  host.set_cpu_cores(static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  host.set_memory_bytes(static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) *
                        sysconf(_SC_PAGE_SIZE));
  host.set_gpubench_version(kGpubenchVersion);
  host.set_address(address);
  *host.mutable_probe_time() = google::protobuf::util::TimeUtil::GetCurrentTime();
  return host;
}

grpc::ServerUnaryReactor* BenchServiceImpl::GetHostInfo(
    grpc::CallbackServerContext* context, const v1::GetHostInfoRequest*,
    v1::GetHostInfoResponse* response) {
  *response->mutable_host() = host_;
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* BenchServiceImpl::SubmitJob(
    grpc::CallbackServerContext* context, const v1::SubmitJobRequest* request,
    v1::SubmitJobResponse* response) {
  auto* reactor = context->DefaultReactor();
  auto runs = ExpandSweep(request->spec());
  if (!runs.ok()) {
    reactor->Finish(ToGrpcStatus(runs.status()));
    return reactor;
  }
  if (!request->dry_run()) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                 "the job queue is not served yet; use dry_run "
                                 "or `gpubench run` locally"));
    return reactor;
  }
  *response->mutable_job()->mutable_spec() = request->spec();
  response->mutable_job()->set_run_count(runs->size());
  for (auto& r : *runs) *response->add_runs() = std::move(r);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace gpubench::server
