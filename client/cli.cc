#include "client/cli.h"

#include <sys/stat.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/local_runner.h"
#include "client/spec_flags.h"
#include "common/paths.h"
#include "common/spec.h"
#include "common/version.h"
#include "gpubench/v1/service.grpc.pb.h"
#include "worker/process.h"

namespace gpubench::client {
namespace {

constexpr char kUsage[] = R"(usage: gpubench <command> [options]

commands (through a daemon):
  submit [SPEC.json] [spec flags] [--wait|--watch]
                                 queue a job; --wait prints its results when done,
                                 --watch also shows progress
  watch JOB                      follow a job's progress until it ends
  jobs                           list recent jobs
  show JOB                       a job and its runs
  cancel JOB                     cancel a queued or running job
  hosts                          the daemon's host: GPUs, driver, CUDA, torch, CPU

commands (no daemon):
  run [SPEC.json] [spec flags]   run a job on this machine and print its results
  spec [SPEC.json] [spec flags]  validate a spec and print its expanded runs
  version                        print the version

options:
  --host HOST:PORT   the daemon (default: $GPUBENCH_HOST, else 127.0.0.1:50051)
  --data-dir DIR     run: where the SQLite file lives (default: ~/.local/share/gpubench)
  --output FORMAT    table (default) or json
  --worker PATH      run: the gpubench-worker binary (default: beside gpubench)

examples:
  gpubench submit --workload resnet50 --mode train --batch 32,64,128 --precision fp32,bf16 --wait
  gpubench watch j3f2c...; gpubench show j3f2c... --output json

spec flags (one value sets it; a comma list sweeps it):
)";

struct Args {
  std::string command;
  std::string spec_path;
  std::map<std::string, std::string> spec_flags;
  std::string data_dir;
  std::string output = "table";
  std::string worker;
  std::string host;
  bool wait = false;
  bool watch = false;
  bool help = false;
};

absl::StatusOr<Args> ParseArgs(const std::vector<std::string>& argv) {
  Args a;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      a.help = true;
    } else if (arg == "--wait") {
      a.wait = true;
    } else if (arg == "--watch") {
      a.watch = a.wait = true;
    } else if (absl::StartsWith(arg, "--")) {
      std::string name = arg.substr(2), value;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
      } else if (i + 1 < argv.size()) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat(arg, " needs a value"));
      }
      if (name == "data-dir") a.data_dir = value;
      else if (name == "output") a.output = value;
      else if (name == "worker") a.worker = value;
      else if (name == "host") a.host = value;
      else a.spec_flags[name] = value;
    } else if (a.command.empty()) {
      a.command = arg;
    } else if (a.spec_path.empty()) {
      a.spec_path = arg;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", arg, "\""));
    }
  }
  if (a.output != "table" && a.output != "json") {
    return absl::InvalidArgumentError("--output: must be table or json");
  }
  return a;
}

absl::StatusOr<v1::JobSpec> BuildSpec(const Args& a) {
  v1::JobSpec spec;
  if (!a.spec_path.empty()) {
    std::ifstream in(a.spec_path);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", a.spec_path));
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = ParseJobSpecJson(text.str());
    if (!parsed.ok()) return parsed.status();
    spec = *parsed;
  } else if (a.spec_flags.empty()) {
    // The embedded default: a small model-size sweep that finishes in
    // seconds on a CPU and shows the GPU's advantage where there is one.
    spec.mutable_base()->set_workload("mlp");
    spec.mutable_base()->set_batch_size(64);
    spec.mutable_sweep()->add_model_size("small");
    spec.mutable_sweep()->add_model_size("medium");
    spec.mutable_sweep()->add_model_size("large");
    spec.mutable_measurement()->set_min_time_ms(500);
    spec.mutable_measurement()->set_max_time_ms(5000);
    spec.set_name("default: mlp model-size sweep");
  }
  if (auto s = ApplySpecFlags(a.spec_flags, &spec); !s.ok()) return s;
  if (auto s = ValidateJobSpec(spec); !s.ok()) return s;
  return spec;
}

std::string Short(const google::protobuf::EnumDescriptor* type, int v) {
  return EnumShortName(type, v == 0 ? 1 : v);
}

std::string Bytes(int64_t b) {
  if (b <= 0) return "-";
  if (b >= (int64_t{1} << 30)) return absl::StrFormat("%.2f GiB", b / double(1 << 30));
  return absl::StrFormat("%.1f MiB", b / double(1 << 20));
}

// The options of a run that the fixed columns do not show, e.g.
// "graph cl host/8L pinned" or "8192x8192x8192".
std::string Options(const v1::RunConfig& c) {
  std::vector<std::string> parts;
  if (c.workload() == "matmul") {
    parts.push_back(absl::StrFormat("%dx%dx%d", c.params().matmul_m(),
                                    c.params().matmul_n(), c.params().matmul_k()));
  }
  if (c.workload() == "copy") {
    parts.push_back(absl::StrCat(Bytes(c.params().copy_bytes()), " ",
                                 Short(v1::CopyDirection_descriptor(),
                                       c.params().copy_direction())));
    parts.push_back(c.pipeline().pinned_memory() ? "pinned" : "pageable");
  }
  if (c.execution() == v1::EXECUTION_CUDA_GRAPH) parts.push_back("graph");
  if (c.channels_last()) parts.push_back("cl");
  if (c.cudnn_benchmark()) parts.push_back("cudnn-bm");
  if (c.input_source() == v1::INPUT_SOURCE_HOST) {
    parts.push_back(absl::StrFormat("host/%dL%s", c.pipeline().loader_threads(),
                                    c.pipeline().pinned_memory() ? " pinned" : ""));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, " ");
}

void PrintTable(const v1::Job& job, const std::vector<v1::Run>& runs,
                std::ostream& out) {
  out << "job " << job.job_id() << "  " << job.spec().name() << "  state "
      << Short(v1::JobState_descriptor(), job.state()) << "\n";
  const char* fmt =
      "%-3s %-11s %-6s %-6s %-6s %5s %-5s %-18s %-10s %22s %9s %9s %9s %6s %10s "
      "%15s %s\n";
  out << absl::StrFormat(fmt, "#", "workload", "size", "mode", "device", "batch",
                         "prec", "options", "state", "samples/s [95% CI]",
                         "p50 ms", "p95 ms", "p99 ms", "wait%", "peak mem",
                         "loss first>last", "");
  for (const auto& r : runs) {
    const auto& c = r.config();
    const auto& res = r.result();
    const bool measured = r.state() == v1::RUN_STATE_SUCCEEDED ||
                          r.state() == v1::RUN_STATE_CANCELLED;
    std::string tput = "-", p50 = "-", p95 = "-", p99 = "-", wait = "-", loss = "-";
    std::string note;
    if (measured) {
      tput = absl::StrFormat("%.1f [%.0f-%.0f]", res.throughput_samples_per_s(),
                             res.throughput_ci_low(), res.throughput_ci_high());
      p50 = absl::StrFormat("%.3f", res.latency().p50_ms());
      p95 = absl::StrFormat("%.3f", res.latency().p95_ms());
      p99 = absl::StrFormat("%.3f", res.latency().p99_ms());
      wait = absl::StrFormat("%.1f", 100 * res.data_wait_share());
      if (c.mode() != v1::MODE_INFER && res.first_loss() != 0) {
        loss = absl::StrFormat("%.3f>%.3f", res.first_loss(), res.last_loss());
      }
      if (res.bandwidth_gb_per_s() > 0) {
        note = absl::StrFormat("%.1f GB/s", res.bandwidth_gb_per_s());
      } else if (c.workload() == "matmul" && res.achieved_tflops() > 0) {
        note = absl::StrFormat("%.1f TFLOP/s", res.achieved_tflops());
      }
      if (!res.stable()) note = absl::StrCat(note, note.empty() ? "" : " ", "unstable");
    }
    const int64_t mem = res.memory().peak_device_allocated_bytes() > 0
                            ? res.memory().peak_device_allocated_bytes()
                            : res.memory().peak_host_rss_bytes();
    if (!r.error().empty()) note = r.error().substr(0, 80);
    out << absl::StrFormat(
        fmt, absl::StrCat(r.index()), c.workload(),
        c.params().model_size().empty() ? "-" : c.params().model_size(),
        Short(v1::Mode_descriptor(), c.mode()),
        res.resolved_device().empty() ? (c.device().empty() ? "auto" : c.device())
                                      : res.resolved_device(),
        absl::StrCat(c.batch_size() == 0 ? 32 : c.batch_size()),
        Short(v1::Precision_descriptor(), c.precision()), Options(c),
        Short(v1::RunState_descriptor(), r.state()), tput, p50, p95, p99, wait,
        Bytes(mem), loss, note);
  }
}

int RunCommand(const Args& a, std::ostream& out, std::ostream& err) {
  auto spec = BuildSpec(a);
  if (!spec.ok()) {
    err << "gpubench: " << spec.status().message() << "\n";
    return kExitUsage;
  }
  const std::string data_dir = a.data_dir.empty() ? DefaultDataDir() : a.data_dir;
  if (auto s = MakeDirs(data_dir); !s.ok()) {
    err << "gpubench: " << s.message() << "\n";
    return kExitUsage;
  }
  storage::StoreOptions options;
  options.path = data_dir + "/gpubench.db";
  auto store = storage::Store::Open(options);
  if (!store.ok()) {
    err << "gpubench: " << store.status().message() << "\n";
    return kExitJobFailed;
  }
  const bool tty = a.output == "table" && isatty(fileno(stderr));
  auto on_event = [&](const v1::WorkerEvent& e) {
    if (e.has_run_started()) {
      err << "run " << e.run_started().index() + 1 << "/"
          << e.run_started().run_count() << ": " << e.run_started().config().workload()
          << " batch " << e.run_started().config().batch_size() << "\n";
    } else if (e.has_run_progress() && tty) {
      const auto& p = e.run_progress();
      err << absl::StrFormat("  %s %d it, %.1f samples/s\r", p.phase(),
                             p.iterations(), p.throughput_samples_per_s());
    }
  };
  auto result = RunLocalJob(*spec, a.worker.empty() ? worker::DefaultWorkerPath()
                                                    : a.worker,
                            store->get(), on_event);
  if (!result.ok()) {
    err << "gpubench: " << result.status().message() << "\n";
    return kExitJobFailed;
  }
  if (a.output == "json") {
    v1::ListRunsResponse response;
    for (auto run : result->runs) {
      run.clear_samples();
      *response.add_runs() = run;
    }
    out << MessageToJson(result->job) << "\n" << MessageToJson(response) << "\n";
  } else {
    PrintTable(result->job, result->runs, out);
    out << "stored in " << options.path << "\n";
  }
  if (result->job.state() != v1::JOB_STATE_SUCCEEDED) {
    err << "gpubench: job " << Short(v1::JobState_descriptor(), result->job.state())
        << ": " << result->job.error() << "\n";
    if (!result->job.worker_stderr_tail().empty()) {
      err << result->job.worker_stderr_tail() << "\n";
    }
    return kExitJobFailed;
  }
  return kExitOk;
}

int SpecCommand(const Args& a, std::ostream& out, std::ostream& err) {
  auto spec = BuildSpec(a);
  if (!spec.ok()) {
    err << "gpubench: " << spec.status().message() << "\n";
    return kExitUsage;
  }
  auto runs = ExpandSweep(*spec);
  if (!runs.ok()) {
    err << "gpubench: " << runs.status().message() << "\n";
    return kExitUsage;
  }
  out << MessageToJson(*spec) << "\n" << runs->size() << " runs\n";
  return kExitOk;
}

// ---- Commands through a daemon ----

std::string HostOf(const Args& a) {
  if (!a.host.empty()) return a.host;
  if (const char* h = std::getenv("GPUBENCH_HOST"); h && *h) return h;
  return "127.0.0.1:50051";
}

std::unique_ptr<v1::BenchService::Stub> Connect(const std::string& host) {
  return v1::BenchService::NewStub(
      grpc::CreateChannel(host, grpc::InsecureChannelCredentials()));
}

// Reports a failed call; UNAVAILABLE (no daemon) is exit code 3.
int CallFailed(const std::string& host, const grpc::Status& s, std::ostream& err) {
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
      s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    err << "gpubench: cannot reach a daemon at " << host << ": " << s.error_message()
        << "\n  start one with `gpubenchd --listen " << host
        << "` or pass --host / GPUBENCH_HOST\n";
    return kExitUnreachable;
  }
  err << "gpubench: " << s.error_message() << "\n";
  return s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ? kExitUsage
                                                                : kExitJobFailed;
}

void Deadline(grpc::ClientContext* ctx, int seconds = 30) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
}

// Follows a job until it ends; progress goes to err when show_progress.
grpc::Status FollowJob(v1::BenchService::Stub* stub, const std::string& job_id,
                       bool show_progress, std::ostream& err) {
  grpc::ClientContext ctx;
  v1::WatchJobRequest req;
  req.set_job_id(job_id);
  auto reader = stub->WatchJob(&ctx, req);
  v1::WatchJobResponse resp;
  const bool tty = isatty(fileno(stderr));
  while (reader->Read(&resp)) {
    if (!show_progress) continue;
    const v1::ProgressEvent& e = resp.event();
    if (e.has_state_changed()) {
      err << "job " << job_id << ": "
          << Short(v1::JobState_descriptor(), e.state_changed().state())
          << (e.state_changed().error().empty() ? "" : " (" + e.state_changed().error() + ")")
          << "\n";
    } else if (e.has_run_started()) {
      err << "run " << e.run_started().index() + 1 << "/" << e.run_started().run_count()
          << ": " << e.run_started().config().workload() << " batch "
          << e.run_started().config().batch_size() << "\n";
    } else if (e.has_run_progress() && tty) {
      const auto& p = e.run_progress();
      err << absl::StrFormat("  %s %d it, %.1f samples/s\r", p.phase(), p.iterations(),
                             p.throughput_samples_per_s());
    } else if (e.has_run_finished()) {
      err << "  " << Short(v1::RunState_descriptor(), e.run_finished().run().state())
          << absl::StrFormat(", %.1f samples/s\n",
                             e.run_finished().run().result().throughput_samples_per_s());
    }
  }
  return reader->Finish();
}

// Prints a job and its runs; returns the exit code its state implies.
int ShowJob(v1::BenchService::Stub* stub, const std::string& host,
            const std::string& job_id, const Args& a, std::ostream& out,
            std::ostream& err) {
  v1::GetJobResponse job;
  {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    v1::GetJobRequest req;
    req.set_job_id(job_id);
    if (auto s = stub->GetJob(&ctx, req, &job); !s.ok()) return CallFailed(host, s, err);
  }
  v1::ListRunsResponse runs;
  {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    v1::ListRunsRequest req;
    req.set_job_id(job_id);
    if (auto s = stub->ListRuns(&ctx, req, &runs); !s.ok()) return CallFailed(host, s, err);
  }
  if (a.output == "json") {
    out << MessageToJson(job.job()) << "\n" << MessageToJson(runs) << "\n";
  } else {
    PrintTable(job.job(), {runs.runs().begin(), runs.runs().end()}, out);
  }
  const v1::JobState state = job.job().state();
  if (state == v1::JOB_STATE_FAILED || state == v1::JOB_STATE_CANCELLED ||
      state == v1::JOB_STATE_INTERRUPTED) {
    err << "gpubench: job " << Short(v1::JobState_descriptor(), state) << ": "
        << job.job().error() << "\n";
    if (!job.job().worker_stderr_tail().empty()) err << job.job().worker_stderr_tail() << "\n";
    return kExitJobFailed;
  }
  return kExitOk;
}

int SubmitCommand(const Args& a, std::ostream& out, std::ostream& err) {
  auto spec = BuildSpec(a);
  if (!spec.ok()) {
    err << "gpubench: " << spec.status().message() << "\n";
    return kExitUsage;
  }
  const std::string host = HostOf(a);
  auto stub = Connect(host);
  v1::SubmitJobResponse resp;
  {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    v1::SubmitJobRequest req;
    *req.mutable_spec() = *spec;
    if (auto s = stub->SubmitJob(&ctx, req, &resp); !s.ok()) return CallFailed(host, s, err);
  }
  const std::string& id = resp.job().job_id();
  if (!a.wait) {
    out << id << "\n";
    return kExitOk;
  }
  err << "job " << id << " queued on " << host << " (" << resp.job().run_count()
      << " runs)\n";
  if (auto s = FollowJob(stub.get(), id, a.watch || a.output == "table", err); !s.ok()) {
    return CallFailed(host, s, err);
  }
  return ShowJob(stub.get(), host, id, a, out, err);
}

int JobCommand(const Args& a, std::ostream& out, std::ostream& err) {
  if (a.spec_path.empty()) {
    err << "gpubench: " << a.command << " needs a job id\n";
    return kExitUsage;
  }
  const std::string host = HostOf(a);
  auto stub = Connect(host);
  const std::string& id = a.spec_path;
  if (a.command == "cancel") {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    v1::CancelJobRequest req;
    req.set_job_id(id);
    v1::CancelJobResponse resp;
    if (auto s = stub->CancelJob(&ctx, req, &resp); !s.ok()) return CallFailed(host, s, err);
    out << id << " " << Short(v1::JobState_descriptor(), resp.job().state()) << "\n";
    return kExitOk;
  }
  if (a.command == "watch") {
    if (auto s = FollowJob(stub.get(), id, true, err); !s.ok()) {
      return CallFailed(host, s, err);
    }
  }
  return ShowJob(stub.get(), host, id, a, out, err);
}

int JobsCommand(const Args& a, std::ostream& out, std::ostream& err) {
  const std::string host = HostOf(a);
  auto stub = Connect(host);
  grpc::ClientContext ctx;
  Deadline(&ctx);
  v1::ListJobsRequest req;
  req.set_page_size(50);
  v1::ListJobsResponse resp;
  if (auto s = stub->ListJobs(&ctx, req, &resp); !s.ok()) return CallFailed(host, s, err);
  if (a.output == "json") {
    out << MessageToJson(resp) << "\n";
    return kExitOk;
  }
  const char* fmt = "%-19s %-11s %-12s %-9s %s\n";
  out << absl::StrFormat(fmt, "job", "state", "workload", "runs", "name");
  for (const v1::Job& j : resp.jobs()) {
    out << absl::StrFormat(fmt, j.job_id(), Short(v1::JobState_descriptor(), j.state()),
                           j.spec().base().workload(),
                           absl::StrCat(j.runs_done(), "/", j.run_count()), j.spec().name());
  }
  return kExitOk;
}

int HostsCommand(const Args& a, std::ostream& out, std::ostream& err) {
  const std::string host = HostOf(a);
  auto stub = Connect(host);
  grpc::ClientContext ctx;
  Deadline(&ctx);
  v1::GetHostInfoResponse resp;
  if (auto s = stub->GetHostInfo(&ctx, {}, &resp); !s.ok()) return CallFailed(host, s, err);
  out << MessageToJson(resp.host()) << "\n";
  return kExitOk;
}

}  // namespace

int RunCli(const std::vector<std::string>& argv, std::ostream& out,
           std::ostream& err) {
  auto args = ParseArgs(argv);
  if (!args.ok()) {
    err << "gpubench: " << args.status().message() << "\n";
    return kExitUsage;
  }
  if (args->help || args->command.empty()) {
    (args->help ? out : err) << kUsage;
    for (const auto& [name, help] : SpecFlagHelp()) {
      (args->help ? out : err) << absl::StrFormat("  --%-17s %s\n", name, help);
    }
    return args->help ? kExitOk : kExitUsage;
  }
  if (args->command == "run") return RunCommand(*args, out, err);
  if (args->command == "submit") return SubmitCommand(*args, out, err);
  if (args->command == "watch" || args->command == "show" || args->command == "cancel") {
    return JobCommand(*args, out, err);
  }
  if (args->command == "jobs") return JobsCommand(*args, out, err);
  if (args->command == "hosts") return HostsCommand(*args, out, err);
  if (args->command == "spec") return SpecCommand(*args, out, err);
  if (args->command == "version") {
    out << "gpubench " << kGpubenchVersion << "\n";
    return kExitOk;
  }
  err << "gpubench: unknown command \"" << args->command << "\"; see gpubench --help\n";
  return kExitUsage;
}

}  // namespace gpubench::client
