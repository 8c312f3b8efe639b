#include "client/cli.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/local_runner.h"
#include "client/spec_flags.h"
#include "common/spec.h"
#include "common/version.h"
#include "gpubench/v1/service.pb.h"
#include "worker/process.h"

namespace gpubench::client {
namespace {

constexpr char kUsage[] = R"(usage: gpubench <command> [options]

commands:
  run [SPEC.json] [spec flags]   run a job on this machine and print its results
  spec [SPEC.json] [spec flags]  validate a spec and print its expanded runs
  version                        print the version

options:
  --data-dir DIR     where the SQLite file lives (default: ~/.local/share/gpubench)
  --output FORMAT    table (default) or json
  --worker PATH      the gpubench-worker binary (default: beside gpubench)

spec flags (one value sets it; a comma list sweeps it):
)";

struct Args {
  std::string command;
  std::string spec_path;
  std::map<std::string, std::string> spec_flags;
  std::string data_dir;
  std::string output = "table";
  std::string worker;
  bool help = false;
};

absl::StatusOr<Args> ParseArgs(const std::vector<std::string>& argv) {
  Args a;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      a.help = true;
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

void PrintTable(const v1::Job& job, const std::vector<v1::Run>& runs,
                std::ostream& out) {
  out << "job " << job.job_id() << "  " << job.spec().name() << "  state "
      << Short(v1::JobState_descriptor(), job.state()) << "\n";
  const char* fmt = "%-3s %-11s %-6s %-6s %-6s %5s %-6s %-10s %22s %9s %9s %9s %6s %10s %15s %s\n";
  out << absl::StrFormat(fmt, "#", "workload", "size", "mode", "device", "batch",
                         "prec", "state", "samples/s [95% CI]", "p50 ms",
                         "p95 ms", "p99 ms", "wait%", "peak mem", "loss first>last",
                         "");
  for (const auto& r : runs) {
    const auto& c = r.config();
    const auto& res = r.result();
    const bool measured = r.state() == v1::RUN_STATE_SUCCEEDED ||
                          r.state() == v1::RUN_STATE_CANCELLED;
    std::string tput = "-", p50 = "-", p95 = "-", p99 = "-", wait = "-", loss = "-";
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
    }
    const int64_t mem = res.memory().peak_device_allocated_bytes() > 0
                            ? res.memory().peak_device_allocated_bytes()
                            : res.memory().peak_host_rss_bytes();
    std::string note;
    if (measured && !res.stable()) note = "unstable";
    if (!r.error().empty()) note = r.error().substr(0, 80);
    out << absl::StrFormat(
        fmt, absl::StrCat(r.index()), c.workload(),
        c.params().model_size().empty() ? "-" : c.params().model_size(),
        Short(v1::Mode_descriptor(), c.mode()),
        res.resolved_device().empty() ? (c.device().empty() ? "auto" : c.device())
                                      : res.resolved_device(),
        absl::StrCat(c.batch_size() == 0 ? 32 : c.batch_size()),
        Short(v1::Precision_descriptor(), c.precision()),
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
  if (std::system(absl::StrCat("mkdir -p '", data_dir, "'").c_str()) != 0) {
    err << "gpubench: cannot create data directory " << data_dir << "\n";
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
  if (args->command == "spec") return SpecCommand(*args, out, err);
  if (args->command == "version") {
    out << "gpubench " << kGpubenchVersion << "\n";
    return kExitOk;
  }
  err << "gpubench: unknown command \"" << args->command << "\"; see gpubench --help\n";
  return kExitUsage;
}

}  // namespace gpubench::client
