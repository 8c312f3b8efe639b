// The commands that build a spec on this side: `run` (a job on the local
// daemon, started for it when none serves the data directory) and `spec`
// (the spec, its runs and their estimated cost, or the daemon's plan).
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/estimate.h"
#include "client/local_daemon.h"
#include "client/spec_flags.h"
#include "common/paths.h"
#include "common/spec.h"

namespace gpubench::client {

absl::StatusOr<v1::JobSpec> BuildSpec(const Args& a, const std::string& spec_path) {
  v1::JobSpec spec;
  if (!spec_path.empty()) {
    std::ifstream in(spec_path);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", spec_path));
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

// The job goes through a daemon like any other: the one that serves the data
// directory, else a child gpubenchd started for it on a private socket.
int RunCommand(const Args& a, std::ostream& out, std::ostream& err) {
  auto spec = BuildSpec(a, a.positional.empty() ? "" : a.positional[0]);
  if (!spec.ok()) return Usage(err, std::string(spec.status().message()));
  const std::string data_dir = a.Option("data-dir", DefaultDataDir());
  if (auto s = MakeDirs(data_dir); !s.ok()) return Usage(err, std::string(s.message()));
  Daemon d;
  d.host.name = "local";
  std::unique_ptr<LocalDaemon> local;
  if (auto serving = AddressOfDaemonServing(data_dir); serving.ok()) {
    d.host.address = *serving;
    err << "gpubench: the gpubenchd serving " << data_dir << " (" << *serving
        << ") takes the job\n";
  } else {
    LocalDaemonOptions options;
    options.daemon_path = a.Option("daemon", InstalledBinary("gpubenchd", "GPUBENCH_DAEMON"));
    options.data_dir = data_dir;
    // The user's own daemon on a private socket: any file they can read is
    // theirs to load.
    options.extra_args = {"--model-root", "/"};
    if (a.Has("worker")) options.extra_args.insert(options.extra_args.end(),
                                                  {"--worker", a.Option("worker")});
    auto started = LocalDaemon::Start(options);
    if (!started.ok()) {
      err << "gpubench: " << started.status().message() << "\n";
      return kExitJobFailed;
    }
    local = std::move(*started);
    d.host.address = local->address();
  }
  d.stub = v1::BenchService::NewStub(Dial(d.host));
  Args wait = a;
  wait.wait = true;
  const int code = SubmitAndShow(d, *spec, wait, out, err);
  // Pointing at the store says "your results are there": only after a
  // success. A failure has said on stderr what failed (the job's error, the
  // failed runs, or the daemon's refusal).
  if (code == kExitOk && a.format == Format::kTable) {
    out << "stored in " << data_dir << "/gpubench.db\n";
  }
  return code;
}

int SpecCommand(const Args& a, std::ostream& out, std::ostream& err) {
  auto spec = BuildSpec(a, a.positional.empty() ? "" : a.positional[0]);
  if (!spec.ok()) {
    err << "gpubench: " << spec.status().message() << "\n";
    return kExitUsage;
  }
  if (a.Has("dry-run")) return DryRun(a, *spec, out, err);
  auto runs = ExpandSweep(*spec);
  if (!runs.ok()) {
    err << "gpubench: " << runs.status().message() << "\n";
    return kExitUsage;
  }
  // JSON output is the spec alone, which submit and compare take back.
  out << MessageToJson(*spec) << "\n";
  if (a.format == Format::kTable) {
    out << "\nestimated from the architectures (a training step: forward and backward, layer by layer):\n";
    PrintTable(EstimateTable(*runs), Format::kTable, out);
  }
  (a.format == Format::kJson ? err : out) << runs->size() << " runs\n";
  return kExitOk;
}

}  // namespace gpubench::client
