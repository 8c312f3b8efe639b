#include "client/cli.h"

#include <unistd.h>

#include <algorithm>

#include "absl/algorithm/container.h"
#include "absl/flags/flag.h"
#include "absl/flags/commandlineflag.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "client/cli_internal.h"
#include "client/spec_flags.h"
#include "client/suggest.h"
#include "common/flags.h"
#include "common/version.h"
#include "google/protobuf/util/time_util.h"

// Command options: every other --flag is a spec flag (client/spec_flags.cc).
// Read per call by ParseArgs; `gpubench --help` lists them from here.
ABSL_FLAG(std::vector<std::string>, host, {},
          "a daemon: ADDRESS, NAME=ADDRESS or a fleet file name (repeatable)");
ABSL_FLAG(std::vector<std::string>, hosts, {}, "compare, report: hosts side by side (comma list)");
ABSL_FLAG(std::string, output, "table",
          "table, json (protobuf JSON mapping), csv, markdown, or gbench (Google "
          "Benchmark's JSON: show, runs)");
ABSL_FLAG(std::string, data_dir, "",
          "run: where the SQLite file lives (default: ~/.local/share/gpubench)");
ABSL_FLAG(std::string, worker, "", "run: the gpubench-worker binary (default: beside gpubench)");
ABSL_FLAG(std::string, daemon, "", "run: the gpubenchd binary (default: beside gpubench)");
ABSL_FLAG(std::string, since, "", "jobs, runs, regressions: from WHEN (7d, 24h, 2026-11-01)");
ABSL_FLAG(std::string, until, "", "jobs, runs: before WHEN");
ABSL_FLAG(std::vector<std::string>, state, {}, "jobs, runs: only these states (repeatable)");
ABSL_FLAG(std::vector<std::string>, config, {}, "runs: FIELD=VALUE of the run config (repeatable)");
ABSL_FLAG(std::string, job, "", "runs: the runs of this job");
ABSL_FLAG(std::string, schedule, "", "jobs, runs: of this schedule");
ABSL_FLAG(std::string, host_id, "", "runs: measured on this host id");
ABSL_FLAG(std::string, limit, "", "jobs, runs: at most N rows");
ABSL_FLAG(std::string, cron, "", "schedule add: \"MIN HOUR DOM MON DOW\"");
ABSL_FLAG(std::string, tz, "",
          "schedule add: the cron's time zone (default: the daemon's local zone)");
ABSL_FLAG(std::string, out, "", "report, trace: the file to write (also -o)");
ABSL_FLAG(std::string, title, "", "report: its title");
ABSL_FLAG(std::string, alpha, "", "compare: significance level (default 0.05)");
ABSL_FLAG(std::string, repeat, "",
          "compare: measure each side N times, alternating (5 or more can give a verdict)");
ABSL_FLAG(std::string, min_effect, "",
          "compare: smallest relative change that counts (default 0.01)");
ABSL_FLAG(bool, history, false, "compare RUN: against its schedule's last runs");
ABSL_FLAG(bool, wait, false, "submit: follow the job until it ends");
ABSL_FLAG(bool, dry_run, false,
          "spec: the daemon's plan of the job (--host, else the default), queueing nothing");
ABSL_FLAG(bool, watch, false, "submit: follow the job with its progress");
ABSL_FLAG(bool, include_improvements, false, "regressions: improvements too");
ABSL_FLAG(std::string, host_timeout, "",
          "each call's deadline in seconds (default 10 for hosts, regressions, probe and "
          "fleet, 30 otherwise): a host that has not answered by then is named unreachable");
ABSL_FLAG(bool, small, false, "probe: the suite at CPU sizes on the CPU (a check of the setup)");
ABSL_FLAG(std::string, threshold, "",
          "fleet: distance from the median (or own history) that flags a GPU (default 0.05)");
ABSL_FLAG(std::string, max_age, "", "fleet: a probe older than AGE is missing (default 8d)");
ABSL_FLAG(std::string, report, "", "fleet: also write the fleet page (HTML) to this file");
ABSL_FLAG(std::string, to, "",
          "export: load the runs into PostgreSQL (postgresql://USER@HOST:PORT/DB) instead of "
          "writing JSON Lines");
ABSL_FLAG(std::string, table, "", "export --to: the table (default gpubench_runs)");

namespace gpubench::client {
namespace {

constexpr char kUsageTail[] = R"(hosts: --host flags, else $GPUBENCH_HOST (comma list), else ~/.config/gpubench/fleet.json
       ({"hosts": [{"name", "address", "tls", "ca_file", "token" | "token_file"}]}),
       else 127.0.0.1:50051.
exit codes: 0 ok; 1 a job or run failed; 2 usage; 3 cannot reach a daemon; 4 a regression or
            a significant slowdown was found; 5 the daemon refused the caller (no or a wrong
            credential, or a role too weak); 6 data is missing (regressions, fleet).

examples:
  gpubench submit --workload resnet50 --mode train --batch 32,64,128 --precision fp32,bf16 --wait
  gpubench watch j3f2c...; gpubench show j3f2c... --output json
  gpubench runs --workload resnet50 --config precision=bf16 --since 7d --output csv
  gpubench compare --hosts h100-a,h200-b --workload resnet50 --batch 64 --mode infer
  gpubench compare j1... j2... || echo "slower"
  gpubench schedule add --cron "0 2 * * *" --tz Europe/Paris nightly.json
  gpubench report j1... j2... -o report.html

spec flags (one value sets it; a comma list sweeps it):
)";

absl::StatusOr<Args> ParseArgs(const std::vector<std::string>& argv) {
  // The flags are the process's: one parse at a time, each from the
  // defaults (RunCli may run on several threads, as in the tests).
  ABSL_CONST_INIT static absl::Mutex mu(absl::kConstInit);
  absl::MutexLock lock(&mu);
  struct ResetToDefaults {  // absl::FlagSaver would log each flag it restores
    ~ResetToDefaults() {
      std::string error;
      for (absl::CommandLineFlag* flag : FlagsDefinedIn("client/cli.cc")) {
        flag->ParseFrom(flag->DefaultValue(), &error);
      }
    }
  } reset_after_this_call;
  std::vector<const char*> c_argv = {"gpubench"};
  for (const std::string& arg : argv) c_argv.push_back(arg == "-o" ? "--out" : arg.c_str());
  Args a;
  std::vector<std::pair<std::string, std::string>> spec_flags;
  // A flag that is neither an option nor a spec flag is a typo: say so, with
  // the closest of both, before the parser takes it for a spec flag that
  // wants a value ("--wiat needs a value").
  {
    std::vector<std::string> known;
    for (absl::CommandLineFlag* f : FlagsDefinedIn("client/cli.cc")) {
      known.push_back(absl::StrReplaceAll(f->Name(), {{"_", "-"}}));
    }
    for (const auto& [flag, unused] : SpecFlagHelp()) known.push_back(flag);
    for (const std::string& arg : argv) {
      if (arg == "--") break;
      if (!absl::StartsWith(arg, "--") || arg == "--version" || arg == "--help") continue;
      std::string name = absl::StrReplaceAll(arg.substr(2, arg.find('=') - 2), {{"_", "-"}});
      if (absl::c_linear_search(known, name)) continue;
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option --", name, DidYouMean(name, known)));
    }
  }
  FlagParser parser("client/cli.cc");
  parser.PassUnknownFlagsTo(&spec_flags, IsSpecSwitch);
  auto positional = parser.Parse(c_argv.size(), c_argv.data());
  if (!positional.ok()) return positional.status();
  if (!positional->empty()) {
    a.command = positional->front();
    a.positional.assign(positional->begin() + 1, positional->end());
  }
  for (auto& [name, value] : spec_flags) a.spec_flags[name] = value;
  for (const absl::CommandLineFlag* flag : FlagsDefinedIn("client/cli.cc")) {
    if (!parser.IsSetOnCommandLine(flag->Name())) continue;
    std::vector<std::string>& values =
        a.options[absl::StrReplaceAll(flag->Name(), {{"_", "-"}})];
    if (flag->IsOfType<std::vector<std::string>>()) {
      values = absl::StrSplit(flag->CurrentValue(), ',', absl::SkipEmpty());
    } else {
      values.push_back(flag->CurrentValue());
    }
  }
  a.help = parser.help_requested();
  if (parser.version_requested() && a.command.empty()) a.command = "version";
  a.wait = a.Has("wait") || a.Has("watch");
  a.watch = a.Has("watch");
  auto format = ParseFormat(a.Option("output", "table"));
  if (!format.ok()) return format.status();
  a.format = *format;
  return a;
}

int VersionCommand(const Args&, std::ostream& out, std::ostream&) {
  out << VersionText("gpubench", nullptr,
                     "LibTorch: none in the CLI (a daemon's, with CUDA and cuDNN: gpubench hosts)");
  return kExitOk;
}

int CompletionCommand(const Args& a, std::ostream& out, std::ostream& err);
}  // namespace

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      {"submit", nullptr, /*daemon=*/true, /*takes_spec=*/true, /*spec_help=*/true, SubmitCommand,
       R"(  submit [SPEC.json] [spec flags] [--wait|--watch]
                         queue a job; --wait prints its results when done,
                         --watch also shows live progress)",
       R"(usage: gpubench submit [SPEC.json] [spec flags] [--wait | --watch] [--host H]
Queues a job on a daemon and prints its id. --wait waits and prints the results
table (exit 1 if the job or a run failed); --watch also shows live progress.
With neither a spec file nor spec flags, submits the default mlp sweep.
examples:
  gpubench submit --workload resnet50 --mode train --batch 32,64,128 --precision fp32,bf16 --wait
  gpubench submit nightly.json --host h100-a --watch
)"},
      {"watch", nullptr, /*daemon=*/true, /*takes_spec=*/false, /*spec_help=*/false, JobCommand,
       R"(  watch JOB              follow a job until it ends (progress bar on a terminal))",
       R"(usage: gpubench watch JOB [--host H]
Follows a job until it ends: a progress bar on a terminal (run i/N, config,
iterations, samples/s so far, ETA), plain lines otherwise; then its results.
example: gpubench watch j3f2c0d1e2a3b4c5d
)"},
      {"jobs", nullptr, /*daemon=*/true, /*takes_spec=*/true, /*spec_help=*/false, JobsCommand,
       R"(  jobs                   recent jobs   [--state S] [--workload W] [--schedule ID]
                                       [--since WHEN] [--until WHEN] [--limit N])",
       R"(usage: gpubench jobs [--state S]... [--workload W] [--schedule ID]
                    [--since WHEN] [--until WHEN] [--limit N] [--output F] [--host H]
Recent jobs, newest first. WHEN: 2026-11-20, an RFC 3339 time, or an age (36h, 7d).
example: gpubench jobs --state failed --since 7d
)"},
      {"show", nullptr, /*daemon=*/true, /*takes_spec=*/false, /*spec_help=*/false, JobCommand,
       R"(  show JOB               a job and its runs)",
       R"(usage: gpubench show JOB [--output table|json|csv|markdown|gbench] [--host H]
A job and its runs. JSON is {"job": Job, "runs": [Run]} in the API's JSON mapping.
gbench is Google Benchmark's JSON: a benchmark per run (real_time per iteration,
items_per_second, p50_ms/p95_ms/p99_ms), runs of one config as its repetitions.
examples:
  gpubench show j3f2c0d1e2a3b4c5d --output json | jq '.runs[].result.throughput_samples_per_s'
  gpubench show JOB_A --output gbench > a.json; gpubench show JOB_B --output gbench > b.json
  compare.py benchmarks a.json b.json      # Google Benchmark's tools/compare.py
)"},
      {"cancel", nullptr, /*daemon=*/true, /*takes_spec=*/false, /*spec_help=*/false, JobCommand,
       R"(  cancel JOB             cancel a queued or running job)",
       R"(usage: gpubench cancel JOB [--host H]
Cancels a queued job, or stops a running one at its next iteration (completed runs are kept).
example: gpubench cancel j3f2c0d1e2a3b4c5d --host h100-a
)"},
      {"rm", nullptr, /*daemon=*/true, /*takes_spec=*/false, /*spec_help=*/false, RmCommand,
       R"(  rm JOB...              delete ended jobs with their runs, freeing their room)",
       R"(usage: gpubench rm JOB [JOB...] [--host H]
Deletes ended jobs with their runs, samples, traces and events, freeing their room in the
store and in your share of it (gpubenchd --max-db-share). Your own jobs; another's needs the
admin role. A queued or running job is refused: gpubench cancel JOB first.
example: gpubench rm j3f2c0d1e2a3b4c5d j9a8b7c6d5e4f3a2b --host h100-a
)"},
      {"runs", "results", /*daemon=*/true, /*takes_spec=*/true, /*spec_help=*/false, RunsCommand,
       R"(  runs | results         query runs   [--workload W] [--config FIELD=VALUE]...
                         [--job JOB] [--schedule ID] [--host-id ID] [--state S]
                         [--since WHEN] [--until WHEN] [--limit N])",
       R"(usage: gpubench runs [--workload W] [--config FIELD=VALUE]... [--job JOB]
                    [--schedule ID] [--host-id ID] [--state S]... [--since WHEN]
                    [--until WHEN] [--limit N] [--output F] [--host H]
Runs across jobs, newest first. FIELD is a RunConfig field, dotted for nested ones.
examples:
  gpubench runs --workload resnet50 --config precision=bf16 --config batch_size=64 --output csv
  gpubench runs --config params.model_size=large --since 30d
)"},
      {"hosts", nullptr, /*daemon=*/true, /*takes_spec=*/false, /*spec_help=*/false, HostsCommand,
       R"(  hosts                  host info of every daemon in the fleet, side by side)",
       R"(usage: gpubench hosts [--host H]... [--output F]
Host info (GPUs, driver, CUDA, cuDNN, torch, CPU, memory, OS) of every daemon in the
fleet, one column each. Unreachable hosts are reported; the others still answer (exit 3).
examples:
  gpubench hosts                       (every host in ~/.config/gpubench/fleet.json)
  gpubench hosts --host h100-a --host 10.0.0.7:50051 --output markdown
)"},
      {"compare", nullptr, /*daemon=*/true, /*takes_spec=*/true, /*spec_help=*/true, CompareCommand,
       R"(  compare A B            two jobs (runs paired by config) or two runs
  compare A B --repeat N measure jobs or spec files A and B again, A B A B..., N times each
  compare --hosts a,b[,c] [SPEC.json] [spec flags] [--repeat N]
                         run one spec on several hosts at once and compare them
                         (the first host is the baseline)
  compare RUN --history  a run against its schedule's last runs of the same config)",
       R"(usage: gpubench compare A B [--repeat N] [--host H [--host H2]]
       gpubench compare --hosts a,b[,c] [SPEC.json] [spec flags] [--repeat N]
       gpubench compare RUN --history
Side by side with ratios and a verdict per config: faster, slower, no significant
difference, or too noisy to tell. Each run is one repetition (its own worker process, at
its own time) and gives one figure, its median time per sample; iterations of one run are
never counted as independent evidence. The verdict is faster or slower when a Mann-Whitney
U test over the runs' figures (exact at these sizes) gives p < --alpha (0.05), the ratio of
medians moves by more than --min-effect (0.01) and its bootstrap 95% interval excludes 1.
It is "no significant difference" when the change and the resolution (the smallest change
these runs can show, from how much they vary) are both within --min-effect. Otherwise it is
"too noisy to tell", with how much the runs vary: one run a side, or fewer than 4, can never
be more. --repeat N measures each side N times, alternating A B A B in fresh workers so that
drift on the host hits both alike; 5 or more a side can give a verdict. A and B are job ids
(runs paired by config), run ids, or with --repeat spec files; with two --host flags A comes
from the first. --history takes the schedule's last runs as the repetitions of the baseline
and asks whether the run lies outside where the next one would fall. Exit 4 when a row is
slower.
examples:
  gpubench compare j1... j2... --repeat 5
  gpubench compare --hosts h100-a,h200-b --workload resnet50 --batch 64 --mode infer --repeat 5
  gpubench compare j1... j2... --output markdown
)"},
      {"regressions", nullptr, /*daemon=*/true, /*takes_spec=*/false, /*spec_help=*/false, RegressionsCommand,
       R"(  regressions            what nightly schedules flagged across the fleet
                         [--since WHEN] [--include-improvements])",
       R"(usage: gpubench regressions [--since WHEN] [--include-improvements] [--host H]...
Runs the nightly schedules flagged (default: the last 7 days), change points since WHEN, and
what is missing (docs/fleets.md). Exit 4 when a run or series got worse; 6 data is missing.
example: gpubench regressions --since 2026-11-01 --include-improvements --output csv
)"},
      {"probe", nullptr, /*daemon=*/true, /*takes_spec=*/false, /*spec_help=*/false, ProbeCommand,
       R"(  probe                  the fleet probe suite on every host, each GPU in turn [--small])",
       R"(usage: gpubench probe [--host H]... [--small] [--output F]
Runs the fixed fleet probe suite (v1) on every host, each GPU in turn and the host to
itself: bf16, fp16 and (sm_89+) fp8 matrix products at 4096 and 8192, a causal attention
forward, a 1 GiB device copy, pinned host-to-device and device-to-host copies, the launch
of a tiny kernel, and with two GPUs or more an NCCL all-reduce on a pair. Prints each
GPU's figures; `gpubench fleet` ranks them. --small: CPU sizes on the CPU. Each daemon
builds the suite itself and marks its runs (admin role; a spec cannot name a probe).
example: gpubench probe --host h100-a --host h100-b
)"},
      {"fleet", nullptr, /*daemon=*/true, /*takes_spec=*/false, /*spec_help=*/false, FleetCommand,
       R"(  fleet                  rank each GPU against its peers on the probes
                         [--since WHEN] [--threshold X] [--report FILE])",
       R"(usage: gpubench fleet [--host H]... [--since WHEN] [--threshold X] [--max-age AGE] [--report FILE]
                     [--output table|json|csv|markdown]
Ranks each GPU's latest probe figures (the daemons' own gpubench probe runs, neither
contended nor throttled, since WHEN: default 30d) against every GPU of the same SKU and
driver: ratio to their median, percentile, z-score (negative: worse); a straggler is worse
than the median by more than --threshold (0.05) in a group of 3 or more GPUs (fewer: the row
says so) and 3 times their spread away, the spread never below the probe's own between
sessions; a drifted GPU that much worse than the median of its own 3 or more earlier
probes, outside their prediction interval (p < 0.05); otherwise too noisy to tell.
Flagged GPUs name where their setup differs from most of their peers' (power limit,
clocks, PCIe width...). --report writes an HTML page. Says how many hosts answered; each
is asked at most --host-timeout seconds (10), 32 at a time; then change points, and devices not
probed within --max-age (8d). Exit 4 when a GPU is flagged; 6 when a probe is missing.
example: gpubench fleet --since 7d --report fleet.html
)"},
      {"export", nullptr, /*daemon=*/true, /*takes_spec=*/true, /*spec_help=*/false, ExportCommand,
       R"(  export                 every host's runs as JSON Lines, or into PostgreSQL
                         [--to postgresql://...] [--table T] [runs' filters])",
       R"(usage: gpubench export [--host H]... [--to postgresql://USER@HOST:PORT/DB [--table T]]
                      [--workload W] [--config FIELD=VALUE]... [--state S]... [--since WHEN]
                      [--until WHEN] [--job JOB] [--schedule ID] [--host-id ID]
Streams the runs of every host (the fleet file, or --host) as flat rows: the CSV's columns
(show --output csv), then host, host_id, job_id, workload, mode, precision, batch_size,
start_time and end_time, then the run's environment fingerprint as fp_NAME columns
(fp_driver_version, fp_power_limit_w, ...). Absent figures are null. Without --to, one JSON
object a line on stdout, which DuckDB (read_json_auto), pandas (read_json(lines=True)) and
ClickHouse (JSONEachRow) read as they are. With --to, the rows go into table T (default
gpubench_runs; made, and given new columns, where missing) through libpq, keyed by
(host_id, run_id): exporting again adds nothing, and a run that changed since (it ended)
is updated. Each host is read a page (1000 runs) at a time, 32 hosts at once; each page is
loaded in a transaction of its own. Says how many runs were new, updated and unchanged, and
how many hosts answered.
examples:
  gpubench export --since 30d > runs.jsonl
  duckdb -c "SELECT fp_gpu_name, median(throughput_samples_per_s) FROM 'runs.jsonl' GROUP BY 1"
  gpubench export --to postgresql://bench@db.internal/perf --workload resnet50
)"},
      {"trace", nullptr, /*daemon=*/true, /*takes_spec=*/false, /*spec_help=*/false, TraceCommand,
       R"(  trace RUN -o FILE      save a run's profiler trace (Chrome/Perfetto JSON))",
       R"(usage: gpubench trace RUN -o FILE [--host H]
Saves a run's profiler trace (Chrome trace JSON: ui.perfetto.dev, chrome://tracing).
Runs have a trace when their spec asks for one: "profiling": {"enabled": true}.
example: gpubench trace r5c41a6f4c985aaff -o trace.json
)"},
      {"schedule", nullptr, /*daemon=*/true, /*takes_spec=*/true, /*spec_help=*/true, ScheduleCommand,
       R"(  schedule add --cron "0 2 * * *" [--tz ZONE] [SPEC.json] [spec flags]
  schedule list | rm ID | history ID)",
       R"(usage: gpubench schedule add --cron "MIN HOUR DOM MON DOW" [--tz ZONE] [SPEC.json] [spec flags]
       gpubench schedule list | rm ID | history ID
Nightly (cron) jobs; each scheduled run is compared with the schedule's history.
example: gpubench schedule add --cron "0 2 * * *" --tz Europe/Paris --workload resnet50 --batch 64
)"},
      {"model", nullptr, /*daemon=*/true, /*takes_spec=*/false, /*spec_help=*/false, ModelCommand,
       R"(  model upload FILE      upload a TorchScript (.pt) or AOTInductor (.pt2, admin)
                         model; prints its sha256 for spec params.model_sha256
  model rm SHA256        delete an uploaded model (admin))",
       R"(usage: gpubench model upload FILE [--host H]
       gpubench model rm SHA256 [--host H]
Uploads a TorchScript model, or an AOTInductor package (.pt2: native code, so the admin
role), sha256-checked and stored once; prints the hash to use as the spec's
params.model_sha256. rm deletes one (admin).
example: gpubench model upload mymodel.pt --host h100-a
)"},
      {"report", nullptr, /*daemon=*/true, /*takes_spec=*/false, /*spec_help=*/false, ReportCommand,
       R"(  report JOB... -o FILE  one self-contained HTML report with tables and plots)",
       R"(usage: gpubench report JOB... -o FILE [--title T] [--host H]
One self-contained HTML file (tables and SVG plots: throughput and latency against
batch size, peak memory, speedups, data-wait share against loader threads, top
operators), readable offline.
example: gpubench report j1... j2... -o report.html
)"},
      {"run", nullptr, /*daemon=*/false, /*takes_spec=*/true, /*spec_help=*/true, RunCommand,
       R"(  run [SPEC.json] [spec flags]   run a job on this machine (its data directory's
                                 daemon, or one started for it) and print its results)",
       R"(usage: gpubench run [SPEC.json] [spec flags] [--data-dir DIR] [--worker PATH]
                    [--daemon PATH]
Runs a job on this machine and prints its results. The gpubenchd that serves the
data directory takes it; without one, a gpubenchd started for this job on a
private socket (any model file you can read may be loaded), stopped after it.
Results stay in the data directory's SQLite file.
example: gpubench run --workload mlp --model-size small,medium,large --device cpu
)"},
      {"spec", nullptr, /*daemon=*/false, /*takes_spec=*/true, /*spec_help=*/true, SpecCommand,
       R"(  spec [SPEC.json] [spec flags]  validate a spec and print its expanded runs)",
       R"(usage: gpubench spec [SPEC.json] [spec flags] [--dry-run [--host H]]
Validates a spec and prints it with the number of runs its sweep expands to.
With --dry-run the daemon plans it as a submit would (cuda:all becomes one
run per GPU; what the host cannot run is refused, naming the field) and
prints each run it would run; nothing is queued.
example: gpubench spec --workload resnet50 --batch 32,64 --precision fp32,bf16
example: gpubench spec --dry-run --host gpu1:7070 --workload mlp --device cuda:all
)"},
      {"workloads", nullptr, /*daemon=*/false, /*takes_spec=*/false, /*spec_help=*/false,
       WorkloadsCommand,
       R"(  workloads [NAME]               list the built-in workloads, their parameters and
                         defaults, and what applies to each)",
       R"(usage: gpubench workloads [NAME]
Lists each built-in workload (or NAME alone): what it measures, the
parameters it reads with their defaults (params.NAME in a spec, --NAME as a
flag where one exists), and which modes, executions and devices apply.
example: gpubench workloads transformer
)"},
      {"completion", nullptr, /*daemon=*/false, /*takes_spec=*/false, /*spec_help=*/false,
       CompletionCommand,
       R"(  completion bash|zsh            print shell completion for gpubench)",
       R"(usage: gpubench completion bash|zsh
Prints a completion script generated from gpubench's own command table:
commands, then each command's options (spec flags where it takes them).
examples:
  source <(gpubench completion bash)     # in ~/.bashrc
  source <(gpubench completion zsh)      # in ~/.zshrc, after compinit
)"},
      {"reference", nullptr, /*daemon=*/false, /*takes_spec=*/false, /*spec_help=*/false,
       ReferenceCommand,
       R"(  reference cli|spec|figures     print the CLI, job spec or figure reference (Markdown))",
       R"(usage: gpubench reference cli|spec|figures
Prints, as Markdown, the reference of every command (cli), of every job
spec field (spec) or of every figure a run can have (figures), generated
from the command table, the spec's schema and the figure table:
docs/cli.md, docs/spec.md and docs/figures.md are this command's output.
example: gpubench reference spec > spec.md
)"},
      {"version", nullptr, /*daemon=*/false, /*takes_spec=*/false, /*spec_help=*/false, VersionCommand,
       R"(  version                        print the version)",
       R"(usage: gpubench version
Prints the version of this gpubench (also: gpubench --version).
example: gpubench version
)"},
  };
  return *commands;
}

namespace {

const Command* FindCommand(const std::string& name) {
  for (const Command& c : Commands()) {
    if (name == c.name || (c.alias != nullptr && name == c.alias)) return &c;
  }
  return nullptr;
}

// Bash completion from the command table (zsh runs it through its
// bashcompinit): command names first, then options, with the spec flags for
// the commands that take them, and file names otherwise.
int CompletionCommand(const Args& a, std::ostream& out, std::ostream& err) {
  const std::string shell = a.positional.empty() ? "" : a.positional[0];
  if (a.positional.size() != 1 || (shell != "bash" && shell != "zsh")) {
    err << "usage: gpubench completion bash|zsh\n";
    return kExitUsage;
  }
  std::vector<std::string> names = {"--help", "--version"}, spec_takers;
  for (const Command& c : Commands()) {
    for (const char* name : {c.name, c.alias}) {
      if (name == nullptr) continue;
      names.push_back(name);
      if (c.takes_spec) spec_takers.push_back(name);
    }
  }
  std::vector<std::string> options = {"--help"}, spec_options;
  for (const absl::CommandLineFlag* flag : FlagsDefinedIn("client/cli.cc")) {
    options.push_back("--" + absl::StrReplaceAll(flag->Name(), {{"_", "-"}}));
  }
  for (const auto& [name, help] : SpecFlagHelp()) spec_options.push_back("--" + name);
  std::sort(names.begin(), names.end());
  std::sort(options.begin(), options.end());
  if (shell == "zsh") out << "autoload -U +X bashcompinit && bashcompinit\n";
  out << "# gpubench " << kGpubenchVersion << " completion, from `gpubench completion " << shell
      << "`\n"
      << "_gpubench() {\n"
      << "  local cur=${COMP_WORDS[COMP_CWORD]} command=${COMP_WORDS[1]}\n"
      << "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
      << "    COMPREPLY=($(compgen -W \"" << absl::StrJoin(names, " ") << "\" -- \"$cur\"))\n"
      << "    return\n"
      << "  fi\n"
      << "  if [[ $cur == --* ]]; then\n"
      << "    local options=\"" << absl::StrJoin(options, " ") << "\"\n"
      << "    case $command in\n"
      << "      " << absl::StrJoin(spec_takers, "|") << ")\n"
      << "        options=\"$options " << absl::StrJoin(spec_options, " ") << "\" ;;\n"
      << "    esac\n"
      << "    COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))\n"
      << "    return\n"
      << "  fi\n"
      << "  COMPREPLY=($(compgen -f -- \"$cur\"))\n"
      << "}\n"
      << "complete -o filenames -F _gpubench gpubench\n";
  return kExitOk;
}

}  // namespace

std::string Usage() {
  std::string out = "usage: gpubench <command> [options]\n";
  for (bool daemon : {true, false}) {
    out += daemon ? "\ncommands (through a daemon; --host HOST:PORT or a fleet name, repeatable):\n"
                  : "\ncommands (no daemon to reach):\n";
    for (const Command& c : Commands()) {
      if (c.daemon == daemon) absl::StrAppend(&out, c.summary, "\n");
    }
  }
  return absl::StrCat(out, "\noptions:\n", FlagsHelp("client/cli.cc"), "\n", kUsageTail);
}

// ---- Shared helpers (cli_internal.h) ----

std::string Args::Option(const std::string& name, const std::string& fallback) const {
  auto it = options.find(name);
  return it == options.end() || it->second.empty() ? fallback : it->second.back();
}

const std::vector<std::string>& Args::All(const std::string& name) const {
  static const std::vector<std::string> kNone;
  auto it = options.find(name);
  return it == options.end() ? kNone : it->second;
}

int Usage(std::ostream& err, const std::string& message) {
  err << "gpubench: " << message << "; see gpubench --help\n";
  return kExitUsage;
}

absl::Status TimeRange(const Args& a, google::protobuf::Timestamp* after,
                       google::protobuf::Timestamp* before) {
  for (const char* flag : {"since", "until"}) {
    if (!a.Has(flag)) continue;
    auto t = ParseWhen(flag, a.Option(flag));
    if (!t.ok()) return t.status();
    *(flag == std::string("since") ? after : before) =
        google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(*t));
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Time> ParseWhen(const std::string& flag, const std::string& text) {
  int64_t n = 0;
  if (text.size() > 1 && absl::SimpleAtoi(text.substr(0, text.size() - 1), &n) && n >= 0) {
    switch (text.back()) {
      case 'd': return absl::Now() - absl::Hours(24 * n);
      case 'h': return absl::Now() - absl::Hours(n);
      case 'm': return absl::Now() - absl::Minutes(n);
      default: break;
    }
  }
  absl::Time t;
  std::string error;
  if (absl::ParseTime(absl::RFC3339_full, text, &t, &error)) return t;
  if (absl::ParseTime("%Y-%m-%d", text, absl::LocalTimeZone(), &t, &error)) return t;
  return absl::InvalidArgumentError(absl::StrCat(
      "--", flag, ": \"", text, "\" is not a date (2026-11-20), a time (RFC 3339) or an age (36h, 7d)"));
}

int RunCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  auto args = ParseArgs(argv);
  if (!args.ok()) {
    err << "gpubench: " << args.status().message() << "\n";
    return kExitUsage;
  }
  const Command* command = args->command.empty() ? nullptr : FindCommand(args->command);
  if (args->help && command != nullptr) {
    out << command->help;
    if (command->spec_help) {
      out << "spec flags (one value sets it; a comma list sweeps it):\n";
      for (const auto& [flag, text] : SpecFlagHelp()) {
        out << absl::StrFormat("  --%-17s %s\n", flag, text);
      }
    }
    return kExitOk;
  }
  if (args->help || args->command.empty()) {
    std::ostream& o = args->help ? out : err;
    o << Usage();
    for (const auto& [name, help] : SpecFlagHelp()) {
      o << absl::StrFormat("  --%-17s %s\n", name, help);
    }
    return args->help ? kExitOk : kExitUsage;
  }
  if (command == nullptr) {
    std::vector<std::string> names;
    for (const Command& c : Commands()) names.push_back(c.name);
    err << "gpubench: unknown command \"" << args->command << "\""
        << DidYouMean(args->command, names) << "; see gpubench --help\n";
    return kExitUsage;
  }
  // Google Benchmark's format holds runs: only the commands that print runs.
  if (args->format == Format::kGbench &&
      !absl::c_linear_search(std::vector<std::string>{"show", "watch", "submit", "run", "runs"},
                             std::string(command->name))) {
    err << "gpubench: --output gbench: " << args->command
        << " prints no runs (show, watch, submit --wait, run and runs do)\n";
    return kExitUsage;
  }
  // Commands that talk to a daemon take no spec flags unless they submit.
  if (!command->takes_spec && !args->spec_flags.empty()) {
    const std::string& flag = args->spec_flags.begin()->first;
    std::vector<std::string> options;
    for (absl::CommandLineFlag* f : FlagsDefinedIn("client/cli.cc")) {
      options.push_back(absl::StrReplaceAll(f->Name(), {{"_", "-"}}));
    }
    err << "gpubench: " << args->command << ": unknown option --" << flag
        << DidYouMean(flag, options) << "; see gpubench --help\n";
    return kExitUsage;
  }
  return command->handler(*args, out, err);
}

}  // namespace gpubench::client
