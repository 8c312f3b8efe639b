// The command table (one entry per command: its name, alias, whether it
// talks to a daemon and takes spec flags, its handler, its line in
// `gpubench --help` and its own --help): read by dispatch, --help,
// completion and `gpubench reference cli`.
#include <string>
#include <vector>

#include "client/cli.h"
#include "client/cli_internal.h"

namespace gpubench::client {

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      {"submit", nullptr, /*daemon=*/true, /*takes_spec=*/true, /*spec_help=*/true, SubmitCommand,
       R"(  submit [SPEC.json] [spec flags] [--wait|--watch]
                         queue a job; --wait prints its results when done,
                         --watch also shows live progress)",
       R"(usage: gpubench submit [SPEC.json] [spec flags] [--wait | --watch] [--host H]
       gpubench submit [spec flags of one serving run] --find max-rate [--limit N]
Queues a job on a daemon and prints its id. --wait waits and prints the results
table (exit 1 if the job or a run failed); --watch also shows live progress.
With neither a spec file nor spec flags, submits the default mlp sweep.
--find max-rate runs one serving point (--mode serve with --slo) at rates
from --request-rate (default 1) up, doubling, then halving the bracket, each
rate a job (at most --limit, default 12), and prints the largest whose p99s
met every target (exit 1 where none did); see docs/serving.md.
examples:
  gpubench submit --workload resnet50 --mode train --batch 32,64,128 --precision fp32,bf16 --wait
  gpubench submit nightly.json --host h100-a --watch
  gpubench submit --workload llama --mode serve --slo ttft_ms=200,tpot_ms=20 --find max-rate
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
       R"(usage: gpubench show JOB [--output table|json|csv|markdown|gbench|spec] [--host H]
A job and its runs. JSON is {"job": Job, "runs": [Run]} in the API's JSON mapping.
gbench is Google Benchmark's JSON: a benchmark per run (real_time per iteration,
items_per_second, p50_ms/p95_ms/p99_ms), runs of one config as its repetitions.
spec is the job's spec file, which `gpubench submit FILE` submits again. The table's
"reproduce:" line is the command that submits the same plan: its spec flags, or
where flags cannot say all of it (a serving trace), the spec file.
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
  compare RUN --history  a run against its schedule's last runs of the same config
  compare ... --explain  and where a side is faster or slower, why)",
       R"(usage: gpubench compare A B [--repeat N] [--host H [--host H2]] [--explain]
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
slower. --explain follows each faster or slower row with why: what differs in the configs and
environments, then each operator's (and, with CUDA traces, each kernel's) calls a step and
time a call on both sides, sorted by what it adds to the time per sample, and where the
device's time went on each side. It reads each side's latest run's profiled window; a run
without one is measured again with --profile (with --repeat, the last repetition profiles).
examples:
  gpubench compare j1... j2... --repeat 5
  gpubench compare --hosts h100-a,h200-b --workload resnet50 --batch 64 --mode infer --repeat 5
  gpubench compare j1... j2... --output markdown
  gpubench compare a.json b.json --repeat 5 --explain
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
--envelope FILE writes each SKU's envelope from the sessions read, for qualify.
example: gpubench fleet --since 7d --report fleet.html
)"},
      {"qualify", nullptr, /*daemon=*/true, /*takes_spec=*/false, /*spec_help=*/false, QualifyCommand,
       R"(  qualify                pass or fail each GPU against its SKU's envelope (node health)
                         [--level 1|2|3] [--envelope FILE] [--latest] [--textfile FILE]
                         [--pairs])",
       R"(usage: gpubench qualify [--host H]... [--level 1|2|3] [--sustain 60s] [--load 15m]
                       [--envelope FILE] [--latest] [--max-age AGE] [--textfile FILE]
                       [--output table|json]
       gpubench qualify --pairs [--host H]... [--textfile FILE] [--output table|json]
Runs the probe suite on every host (as probe; admin role), or with --latest judges each
GPU's latest stored session since --max-age (8d), and checks each GPU's figure of each
probe against its SKU's envelope (--envelope FILE from `fleet --envelope`, else the shipped
one: docs/fleets.md): pass, fail naming the figure, the envelope and the likely cause
(power limit, clocks, PCIe width, ECC, throttling), or unknown (no envelope for the SKU).
Prints one line on stdout ("OK: ...", "NOTOK: ...", "UNKNOWN: ...") and the checks on
stderr; exit 0 ok, 1 not ok, 2 unknown (node-problem-detector's custom plugin convention;
a usage error or a host that did not answer is unknown). --textfile writes Prometheus
gauges for node_exporter's textfile collector. --level 2 adds, on each GPU in turn, the bf16
product held for --sustain (60s): its last quarter's figure against its envelope
(matmul_bf16's where the envelope has none), its throughput's fall from the first quarter
to the last (5% fails), thermal or hardware throttling (fails, naming clocks and power) and
its ECC, remapped rows and XIDs; and on several GPUs the pair matrix (copies each way by
copy engine and by kernel, an all-reduce on each pair). --level 3 adds the same product on
every GPU at once for --load (15m): the host's power and cooling.
--pairs runs no suite: an all-reduce between every two hosts (rounds of disjoint pairs at
once), one rank on each daemon (each needs gpubenchd --pair-address; admin role on each),
and judges each host by its fastest link against the hosts' median fastest link (fleet's
rule; fewer than 3 hosts: unknown): the slow link between nodes, named.
example: gpubench qualify --host 127.0.0.1:50051 --textfile /var/lib/node_exporter/gpubench.prom
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
       R"(usage: gpubench trace RUN -o FILE [--rank N] [--host H]
Saves a run's profiler trace (Chrome trace JSON: ui.perfetto.dev, chrome://tracing).
Runs have a trace when their spec asks for one: "profiling": {"enabled": true}. A
distributed run (ddp, collective) keeps one per rank, each marked with its rank
("distributedInfo", as PyTorch writes it and HTA reads a folder of ranks by); --rank
picks one (default 0).
example: gpubench trace r5c41a6f4c985aaff -o trace.json
)"},
      {"explain", nullptr, /*daemon=*/true, /*takes_spec=*/false, /*spec_help=*/false,
       ExplainCommand,
       R"(  explain RUN|FILE.json  where a profiled run's device time went, and why)",
       R"(usage: gpubench explain RUN [--rank N] [--host H] [--output json]
       gpubench explain FILE.json
Breaks a run's stored profiler trace (or a Chrome trace file: a path with '/' or ending in
.json) down by Holistic Trace Analysis' rules: the span from the first device event to the
last, split into idle (no stream busy), compute, and the rest as communication, memory and
other; each stream's idle gaps as waiting on the host (the launch came after the previous
work ended), on another kernel (under 30 us) or other; launch delays; the top kernels; and a
sentence naming the biggest share. The trace is read as it streams in, never held whole.
Runs have a trace when their spec asks for one ("profiling": {"enabled": true}). A CPU
run's trace has no device streams: explain RUN gives its operators' self time by category,
its top operators and a sentence naming the biggest share (input-bound where the wait for
the next batch leads). A
distributed run (ddp, collective) keeps a trace per rank: explain breaks down rank 0's (or
--rank N's), then every rank's work, communication and idle side by side, naming the
slowest rank: the one the others wait for, which spends the least time in communication
(a collective ends on every rank together and starts when each reaches it).
example: gpubench explain r5c41a6f4c985aaff
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
operators), readable offline. Each job's summary gives the command that submits it again;
its profiled runs get a stacked bar each of where their time went (HTA's temporal
breakdown of a stored CUDA trace, read as it streams in, as explain gives it; and the
profile's self time by operator category) and a table of what changed in each against the
job's first profiled run, as compare --explain gives it.
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

}  // namespace gpubench::client
