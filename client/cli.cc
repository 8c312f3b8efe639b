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
ABSL_FLAG(std::string, limit, "", "jobs, runs: at most N rows; submit --find: at most N runs");
ABSL_FLAG(std::string, cron, "", "schedule add: \"MIN HOUR DOM MON DOW\"");
ABSL_FLAG(std::string, tz, "",
          "schedule add: the cron's time zone (default: the daemon's local zone)");
ABSL_FLAG(std::string, out, "", "report, trace: the file to write (also -o)");
ABSL_FLAG(std::string, rank, "", "trace, explain: which rank of a distributed run (default 0)");
ABSL_FLAG(std::string, title, "", "report: its title");
ABSL_FLAG(std::string, alpha, "", "compare: significance level (default 0.05)");
ABSL_FLAG(std::string, repeat, "",
          "compare: measure each side N times, alternating (5 or more can give a verdict)");
ABSL_FLAG(std::string, min_effect, "",
          "compare: smallest relative change that counts (default 0.01)");
ABSL_FLAG(bool, history, false, "compare RUN: against its schedule's last runs");
ABSL_FLAG(bool, explain, false,
          "compare: where a side is faster or slower, why: its operators' and kernels' calls "
          "and times before and after, from profiled windows");
ABSL_FLAG(bool, wait, false, "submit: follow the job until it ends");
ABSL_FLAG(bool, dry_run, false,
          "spec: the daemon's plan of the job (--host, else the default), queueing nothing");
ABSL_FLAG(bool, watch, false, "submit: follow the job with its progress");
ABSL_FLAG(std::string, find, "",
          "submit --mode serve: max-rate, the largest request rate meeting the --slo targets");
ABSL_FLAG(bool, include_improvements, false, "regressions: improvements too");
ABSL_FLAG(std::string, host_timeout, "",
          "each call's deadline in seconds (default 10 for hosts, regressions, probe and "
          "fleet, 30 otherwise): a host that has not answered by then is named unreachable");
ABSL_FLAG(bool, small, false, "probe: the suite at CPU sizes on the CPU (a check of the setup)");
ABSL_FLAG(std::string, threshold, "",
          "fleet: distance from the median (or own history) that flags a GPU (default 0.05)");
ABSL_FLAG(std::string, max_age, "",
          "fleet: a probe older than AGE is missing; qualify --latest: sessions since (default 8d)");
ABSL_FLAG(std::string, envelope, "",
          "fleet: write the probes' envelope to FILE; qualify: judge against FILE (default: shipped)");
ABSL_FLAG(std::string, level, "",
          "qualify: the level of checks (1; 2: the held bf16 product, the pair matrix; 3: every "
          "GPU loaded at once)");
ABSL_FLAG(std::string, sustain, "",
          "qualify --level 2 or 3: how long the bf16 product is held on each GPU (60s)");
ABSL_FLAG(std::string, load, "", "qualify --level 3: how long every GPU is loaded at once (15m)");
ABSL_FLAG(std::string, textfile, "", "qualify: also write the checks as Prometheus gauges to FILE");
ABSL_FLAG(bool, latest, false, "qualify: judge each GPU's latest stored probe session, run none");
ABSL_FLAG(bool, pairs, false,
          "qualify: an all-reduce between every two hosts, one rank on each (gpubenchd "
          "--pair-address); each host judged by its fastest link");
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

}  // namespace

int VersionCommand(const Args&, std::ostream& out, std::ostream&) {
  out << VersionText("gpubench", nullptr,
                     "LibTorch: none in the CLI (a daemon's, with CUDA and cuDNN: gpubench hosts)");
  return kExitOk;
}

namespace {

const Command* FindCommand(const std::string& name) {
  for (const Command& c : Commands()) {
    if (name == c.name || (c.alias != nullptr && name == c.alias)) return &c;
  }
  return nullptr;
}

}  // namespace

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

namespace {

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
  // A spec file is a job's: show's alone.
  if (args->format == Format::kSpec && std::string(command->name) != "show") {
    err << "gpubench: --output spec: " << args->command
        << " has no job's spec to print (show JOB does)\n";
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
