// What the CLI's command files share: parsed arguments, connections, and
// the runs table. Internal to client/.
#ifndef GPUBENCH_CLIENT_CLI_INTERNAL_H_
#define GPUBENCH_CLIENT_CLI_INTERNAL_H_

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/fleet.h"
#include "client/output.h"
#include "common/verdict.h"
#include "report/facets.h"
#include "report/format.h"
#include "report/trace_breakdown.h"
#include "report/trace_events.h"
#include "gpubench/v1/service.grpc.pb.h"

namespace gpubench::client {

// The report's formatting, shared by the CLI's tables.
using report::Bytes;
using report::DescribeConfig;
using report::FlopRate;
using report::NumericsNote;
using report::Short;
using report::RunWarnings;
using report::WarningMeaning;
using report::GpuTelemetry;

struct Args {
  std::string command;
  std::vector<std::string> positional;          // after the command
  std::map<std::string, std::string> spec_flags;  // --workload resnet50 ...
  std::map<std::string, std::vector<std::string>> options;  // command options
  Format format = Format::kTable;
  bool wait = false;
  bool watch = false;
  bool help = false;

  // The last value of a command option, or fallback.
  std::string Option(const std::string& name, const std::string& fallback = "") const;
  bool Has(const std::string& name) const { return options.count(name) > 0; }
  const std::vector<std::string>& All(const std::string& name) const;
};

// Deadline of a unary call, seconds (--host-timeout sets it).
inline constexpr int kCallSeconds = 30;

// The same for the commands that ask the whole fleet by default (hosts,
// regressions, probe, fleet): a host that does not answer in this time is
// named unreachable, and the others' answers stand.
inline constexpr int kFleetCallSeconds = 10;

// How many hosts a fleet command talks to at once.
inline constexpr int kMaxHostsAtOnce = 32;

// A gRPC status as an absl::Status: the client's one conversion.
absl::Status FromGrpc(const grpc::Status& s);

// One daemon: where it is, a stub for its streams, and typed unary calls.
struct Daemon {
  HostEntry host;
  std::unique_ptr<v1::BenchService::Stub> stub;
  int call_seconds = kCallSeconds;  // a unary call's deadline (--host-timeout)

  // A unary rpc (e.g. &v1::BenchService::Stub::GetJob) with the host's token
  // and a deadline in seconds (0: none; -1: call_seconds): its reply, or its
  // status.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(grpc::Status (v1::BenchService::Stub::*rpc)(
                                    grpc::ClientContext*, const Request&, Response*),
                                const Request& request, int deadline_s = -1) const {
    grpc::ClientContext context;
    PrepareCall(host, deadline_s < 0 ? call_seconds : deadline_s, &context);
    Response response;
    const grpc::Status s = (stub.get()->*rpc)(&context, request, &response);
    if (!s.ok()) return FromGrpc(s);
    return response;
  }
};

// Follows a job until its stream ends; progress to err when show_progress.
grpc::Status FollowJob(const Daemon& d, const std::string& job_id, bool show_progress,
                       std::ostream& err);

// Every run of a job, in sweep order, page after page (a page holds at most
// 32 MiB). The first failed call's status.
absl::Status ListAllRuns(const Daemon& d, const std::string& job_id, bool include_samples,
                         std::vector<v1::Run>* runs);
// One run's record (GetRun), with its per-iteration samples where asked.
absl::StatusOr<v1::Run> FetchRun(const Daemon& d, const std::string& run_id,
                                 bool include_samples = false);

// Connects to every host resolved from --host / GPUBENCH_HOST / the fleet
// file; all_fleet as in ResolveHosts.
absl::StatusOr<std::vector<Daemon>> ConnectAll(const Args& a, bool all_fleet);
// The single daemon a command talks to (the first resolved host).
absl::StatusOr<Daemon> ConnectOne(const Args& a);

// Reports a failed call and returns the exit code it implies: UNAVAILABLE or
// DEADLINE_EXCEEDED is 3 (cannot reach), UNAUTHENTICATED or
// PERMISSION_DENIED 5, INVALID_ARGUMENT 2, others 1.
int CallFailed(const HostEntry& host, const absl::Status& s, std::ostream& err);
inline int CallFailed(const HostEntry& host, const grpc::Status& s, std::ostream& err) {
  return CallFailed(host, FromGrpc(s), err);
}


// A date or time for --since/--until: "2026-11-20", "2026-11-20T08:00:00Z"
// (RFC 3339), or an age before now: "36h", "7d". InvalidArgument naming the
// flag otherwise.
absl::StatusOr<absl::Time> ParseWhen(const std::string& flag, const std::string& text);

// The runs of one or more jobs as a table: the config columns that vary,
// state, throughput with CI, latency percentiles, wait share, peak memory,
// loss, notes.
Table RunsTable(const std::vector<v1::Run>& runs, bool with_job_column, Format format);

// Prints a job and its runs in the chosen format, with the analyses its runs
// support (device-sweep speedup; the roofline against peak_runs, the host's
// matmul and copy runs); JSON is {"job": Job, "runs": [Run...],
// "device_speedups": [...], "roofline": [...]}.
void PrintJob(const v1::Job& job, const std::vector<v1::Run>& runs, Format format,
              std::ostream& out, const std::vector<v1::Run>& peak_runs = {});

// The host's succeeded matmul and copy runs (the roofline's peaks, at most
// 1000 of each) where the job's runs have roofline figures; none otherwise.
absl::Status ListPeakRuns(const Daemon& d, const v1::Job& job, const std::vector<v1::Run>& runs,
                          std::vector<v1::Run>* peak_runs);

// Prints "gpubench: message; see gpubench --help" and returns 2.
int Usage(std::ostream& err, const std::string& message);

// --since and --until into a request's time range; unset flags leave their
// field alone. InvalidArgument naming the flag.
absl::Status TimeRange(const Args& a, google::protobuf::Timestamp* after,
                       google::protobuf::Timestamp* before);

// The filters of `runs` and `export` (--workload, --config, --job,
// --schedule, --host-id, --state, --since, --until) into a request.
// InvalidArgument naming the flag. (job_commands.cc)
absl::Status RunsQuery(const Args& a, v1::QueryRunsRequest* req);

// Submits spec to d, follows the job to its end and appends its runs to
// runs. The exit code (kExitJobFailed where a run did not succeed); what
// went wrong goes to log. (compare_command.cc)
int MeasureOnce(const Daemon& d, const v1::JobSpec& spec, std::vector<v1::Run>* runs,
                std::ostream& log);
// MeasureOnce's second half, for a job already queued (the daemon's probe
// suite): follows job_id to its end and appends its runs to runs; the exit
// code, what went wrong to log. (compare_command.cc)
int GatherJob(const Daemon& d, const std::string& job_id, std::vector<v1::Run>* runs,
              std::ostream& log);

// Calls call(i) for i from 0 to n - 1, kMaxHostsAtOnce at a time (each on
// a thread of a pool), and returns when all are done.
void ForEachIndex(size_t n, const std::function<void(size_t)>& call);
// Calls call(i) for every daemon, kMaxHostsAtOnce at a time (each on a
// thread of a pool), and returns when all are done.
void ForEachDaemon(const std::vector<Daemon>& daemons, const std::function<void(size_t)>& call);

// What a fleet command tells of its hosts, from each one's status: "97 of
// 100 hosts answered; 2 unreachable (a, b); 1 refused the caller (c)".
std::string HostsAnswered(const std::vector<Daemon>& daemons,
                          const std::vector<absl::Status>& status);

// Submits spec to d; with a.wait, follows it (progress on err) and prints
// the finished job. Returns the exit code.
int SubmitAndShow(const Daemon& d, const v1::JobSpec& spec, const Args& a, std::ostream& out,
                  std::ostream& err);

// Commands, each returning the exit code.
int SubmitCommand(const Args& a, std::ostream& out, std::ostream& err);
// submit --find max-rate: spec's one serving point at rate after rate on
// one daemon, the largest meeting its SLOs at p99 (find_rate.cc).
int FindMaxRate(const Args& a, const v1::JobSpec& spec, std::ostream& out, std::ostream& err);
int RunCommand(const Args& a, std::ostream& out, std::ostream& err);   // spec_commands.cc
int SpecCommand(const Args& a, std::ostream& out, std::ostream& err);  // spec_commands.cc
// `spec --dry-run`: the daemon's plan of spec (what SubmitJob would queue
// and its workers would run, cuda:all rewritten), queueing nothing.
int DryRun(const Args& a, const v1::JobSpec& spec, std::ostream& out, std::ostream& err);
int JobCommand(const Args& a, std::ostream& out, std::ostream& err);  // watch, show, cancel
int RmCommand(const Args& a, std::ostream& out, std::ostream& err);
int JobsCommand(const Args& a, std::ostream& out, std::ostream& err);
int RunsCommand(const Args& a, std::ostream& out, std::ostream& err);
int TraceCommand(const Args& a, std::ostream& out, std::ostream& err);
// A run's trace as it arrived: the call's status, the daemon's info, and
// what came (its size and sha256, intact when they are the info's).
struct TraceArrival {
  grpc::Status status;
  v1::TraceInfo info;
  int64_t bytes = 0;
  std::string sha256;
  bool intact() const { return bytes == info.size_bytes() && sha256 == info.sha256(); }
};
// Streams run_id's trace (of `rank`, for a distributed run) from d into
// on_chunk a piece at a time (trace, explain), never holding it whole;
// job_commands.cc.
TraceArrival StreamTrace(const Daemon& d, const std::string& run_id, int rank,
                         const std::function<void(std::string_view)>& on_chunk);
// --rank: a rank of a distributed run, 0 where not given; job_commands.cc.
absl::StatusOr<int> RankOption(const Args& a);
int ExplainCommand(const Args& a, std::ostream& out, std::ostream& err);  // explain_command.cc
// explain for a CPU run (its profile without device times): explain_cpu.cc.
int ExplainCpuRun(const Args& a, const v1::Run& run, std::ostream& out);
// Operators as explain lists them (explain_cpu.cc): each one's calls, its
// time in microseconds (the column named time_column), mean time a call and
// share, and with_category its category.
Table OperatorTable(const google::protobuf::RepeatedPtrField<v1::OperatorStat>& operators,
                    const char* time_column, bool with_category);
// run_id's trace of rank from d, read as it streams in; DataLoss where it
// arrived damaged, InvalidArgument where it is not a trace
// (explain_command.cc).
absl::Status FetchTraceEvents(const Daemon& d, const std::string& run_id, int rank,
                              report::TraceEvents* out);
// The breakdown of each of a distributed run's traced ranks (its
// ProfileSummary.traced_ranks) still stored, top_n kernels each;
// explain_command.cc.
absl::StatusOr<std::vector<report::RankBreakdown>> RankBreakdowns(const Daemon& d,
                                                                  const v1::Run& run, int top_n);
// One side of compare --explain: its name, the daemon that stored it, its
// latest run, and the median throughput of its runs (the verdict's).
struct ExplainedSide {
  std::string name;
  const Daemon* daemon = nullptr;
  const v1::Run* run = nullptr;
  double samples_per_s = 0;
};
// Prints why cand's time per sample differs from base's (verdict: slower
// or faster): the configs' differences (what ConfigDifferences gives) and
// the environment's, the profiled operators' diff, and with device traces
// the kernels' diff and both breakdowns. A side whose run has no profile is
// measured again (its config, a profiled window). The exit code; what went
// wrong to err. (compare_explain.cc)
int ExplainDifference(const Args& a, const ExplainedSide& base, const ExplainedSide& cand,
                      verdict::Verdict verdict, const std::string& differences,
                      const std::string& environment, std::ostream& out, std::ostream& err);
int ModelCommand(const Args& a, std::ostream& out, std::ostream& err);
int ScheduleCommand(const Args& a, std::ostream& out, std::ostream& err);
int HostsCommand(const Args& a, std::ostream& out, std::ostream& err);
int CompareCommand(const Args& a, std::ostream& out, std::ostream& err);
int RegressionsCommand(const Args& a, std::ostream& out, std::ostream& err);
int ProbeCommand(const Args& a, std::ostream& out, std::ostream& err);  // probe_commands.cc
int FleetCommand(const Args& a, std::ostream& out, std::ostream& err);  // probe_commands.cc
int QualifyCommand(const Args& a, std::ostream& out, std::ostream& err);  // probe_commands.cc
int ExportCommand(const Args& a, std::ostream& out, std::ostream& err);  // export_command.cc
int WorkloadsCommand(const Args& a, std::ostream& out, std::ostream& err);  // workloads_command.cc
int ReportCommand(const Args& a, std::ostream& out, std::ostream& err);

int ReferenceCommand(const Args& a, std::ostream& out, std::ostream& err);  // reference.cc

// Every command: its name (and alias), whether it talks to a daemon, whether
// it takes spec flags, its handler, its lines in `gpubench --help` and its
// own `gpubench NAME --help`. Help, dispatch, completion and docs/cli.md
// all come from this table (cli.cc).
struct Command {
  const char* name;
  const char* alias;
  bool daemon;      // listed under "through a daemon"
  bool takes_spec;  // spec flags allowed
  bool spec_help;   // its help lists the spec flags
  int (*handler)(const Args&, std::ostream&, std::ostream&);
  const char* summary;
  const char* help;
};
const std::vector<Command>& Commands();  // commands.cc

// version and completion, cli.cc.
int VersionCommand(const Args& a, std::ostream& out, std::ostream& err);
int CompletionCommand(const Args& a, std::ostream& out, std::ostream& err);

// `gpubench --help`: the commands from the table, then what they share.
std::string Usage();

// Builds the spec from a JSON file (positional[0] when given) and flags;
// with neither, the embedded default job.
absl::StatusOr<v1::JobSpec> BuildSpec(const Args& a, const std::string& spec_path);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_CLI_INTERNAL_H_
