// The CLI across hosts, against real daemons on loopback: compare --hosts
// and --repeat, schedules and regressions, hosts, traces and reports, a
// fleet file with TLS and tokens; and what exit codes and names print as.
// (The probe suite and fleet ranking: cli_probe_test.cc.)
#include "client/cli.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/compare.h"
#include "client/output.h"
#include "common/paths.h"
#include "report/facets.h"
#include "common/stats.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "gpubench/v1/service.pb.h"
#include "common/sha256.h"
#include "common/spec.h"
#include "storage/store.h"
#include "tests/support/command.h"
#include "tests/client/cli_test_util.h"
#include "tests/support/daemon_process.h"

namespace gpubench::client {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

TEST(CliDaemon, CompareHostsRunsOneSpecOnEveryHostAndGivesAVerdict) {
  Daemon a(FreshDir("cli_fleet_a")), b(FreshDir("cli_fleet_b"));
  ASSERT_TRUE(a.serving() && b.serving());
  Result r = Cli(Tiny({"compare", "--hosts", a.address() + "," + b.address(), "--batch",
                       "8", "--repeat", "4"}));
  ASSERT_TRUE(r.code == kExitOk || r.code == kExitRegression) << r.code << r.err << r.out;
  std::vector<std::string> lines = SplitLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_NE(lines[1].find(a.address()), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(b.address()), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("4/4"), std::string::npos) << lines[1];  // 4 jobs on each host
  EXPECT_TRUE(lines[1].find("faster") != std::string::npos ||
              lines[1].find("slower") != std::string::npos ||
              lines[1].find("no significant difference") != std::string::npos ||
              lines[1].find("too noisy to tell") != std::string::npos)
      << lines[1];
  // One job a host: nothing says how much runs vary, and the verdict says so.
  Result json = Cli(Tiny({"compare", "--hosts", a.address() + "," + b.address(), "--batch",
                          "8", "--output", "json"}));
  EXPECT_NE(json.out.find("\"verdict\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("too noisy to tell"), std::string::npos) << json.out;
}

// --repeat measures the two sides again, alternating A B A B on the host.
TEST(CliDaemon, CompareRepeatInterleavesTheTwoSides) {
  Daemon d(FreshDir("cli_repeat"));
  ASSERT_TRUE(d.serving()) << d.log();
  std::string ids[2];
  for (int i = 0; i < 2; ++i) {
    Result submitted = Cli(Tiny({"submit", "--host", d.address(), "--batch", i ? "16" : "8",
                                 "--wait", "--output", "json"}));
    ASSERT_EQ(submitted.code, kExitOk) << submitted.err;
    const std::string key = "\"job_id\": \"";
    const size_t at = submitted.out.find(key);
    ASSERT_NE(at, std::string::npos) << submitted.out;
    const size_t begin = at + key.size();
    ids[i] = submitted.out.substr(begin, submitted.out.find('"', begin) - begin);
  }
  Result r = Cli({"compare", ids[0], ids[1], "--repeat", "3", "--host", d.address()});
  ASSERT_EQ(r.code == kExitOk || r.code == kExitRegression, true) << r.err << r.out;
  EXPECT_NE(r.out.find("3/3"), std::string::npos) << r.out;
  // Three a side can never be significant: never faster or slower. Either the
  // runs bound the change within the smallest effect of interest, or the
  // verdict says why it cannot tell.
  EXPECT_EQ(r.out.find("faster"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("slower"), std::string::npos) << r.out;
  EXPECT_TRUE(r.out.find("can never reach") != std::string::npos ||
              r.out.find("no significant difference: within") != std::string::npos)
      << r.out;
  // The runs it measured, oldest first: batch 8, 16, 8, 16, 8, 16.
  Result runs = Cli({"runs", "--host", d.address(), "--output", "csv", "--limit", "6"});
  std::vector<std::string> rows = SplitLines(runs.out);
  ASSERT_EQ(rows.size(), 7u) << runs.out;
  for (int k = 1; k <= 6; ++k) {  // newest first: 16, 8, 16, ...
    EXPECT_NE(rows[k].find(k % 2 ? "b16" : "b8"), std::string::npos) << k << ": " << rows[k];
  }
  Result bad = Cli({"compare", ids[0], ids[1], "--repeat", "0", "--host", d.address()});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_NE(bad.err.find("--repeat"), std::string::npos) << bad.err;
}

// Plants a succeeded run with n samples around ms (lognormal 2% noise) in
// the daemon's store, in a job of schedule_id (if any), ended now with the
// given history verdict and environment; returns its id.
std::string PlantRun(const Daemon& d, double ms, int n, uint32_t seed,
                     const std::string& schedule_id = "",
                     v1::Verdict verdict = v1::VERDICT_UNSPECIFIED, int days_ago = 0,
                     bool contended = false, const v1::Fingerprint& fingerprint = {}) {
  auto store = storage::Store::Open({d.data_dir() + "/gpubench.db"});
  EXPECT_TRUE(store.ok()) << store.status();
  v1::Job job;
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  job.set_schedule_id(schedule_id);
  const std::string job_id = *(*store)->jobs().Insert(job);
  v1::Run run;
  run.set_job_id(job_id);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  run.mutable_config()->set_workload("mlp");
  run.mutable_config()->set_batch_size(1);
  run.mutable_result()->set_throughput_samples_per_s(1000 / ms);
  std::mt19937 rng(seed);
  std::lognormal_distribution<double> noise(0, 0.02);
  for (int i = 0; i < n; ++i) run.mutable_samples()->add_device_ms(ms * noise(rng));
  *run.mutable_start_time() = google::protobuf::util::TimeUtil::SecondsToTimestamp(
      absl::ToUnixSeconds(absl::Now()) - 86400 * days_ago);
  *run.mutable_end_time() = run.start_time();
  run.mutable_history()->set_verdict(verdict);
  *run.mutable_fingerprint() = fingerprint;
  if (contended) {
    run.mutable_result()->mutable_contention()->add_jobs_beside("jneighbour");
    run.mutable_result()->mutable_contention()->set_contended(true);
  }
  return *(*store)->runs().Insert(run);
}

// Plants a succeeded job of `runs` repetitions of one config, each run's
// center ms varying by run_noise (lognormal) and 200 samples about it;
// returns the job id.
std::string PlantJob(const Daemon& d, double ms, int runs, double run_noise, uint32_t seed,
                     const std::string& workload = "mlp") {
  auto store = storage::Store::Open({d.data_dir() + "/gpubench.db"});
  EXPECT_TRUE(store.ok()) << store.status();
  v1::Job job;
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  const std::string job_id = *(*store)->jobs().Insert(job);
  std::mt19937 rng(seed);
  std::lognormal_distribution<double> between(0, run_noise), within(0, 0.02);
  for (int i = 0; i < runs; ++i) {
    v1::Run run;
    run.set_job_id(job_id);
    run.set_index(i);
    run.set_state(v1::RUN_STATE_SUCCEEDED);
    run.mutable_config()->set_workload(workload);
    run.mutable_config()->set_batch_size(1);
    const double center = ms * between(rng);
    run.mutable_result()->set_throughput_samples_per_s(1000 / center);
    for (int k = 0; k < 200; ++k) run.mutable_samples()->add_device_ms(center * within(rng));
    EXPECT_TRUE((*store)->runs().Insert(run).ok());
  }
  return job_id;
}

TEST(CliDaemon, RunAgainstItsScheduleHistoryAndRegressionsAcrossTheFleet) {
  Daemon d(FreshDir("cli_history")), quiet(FreshDir("cli_history_quiet"));
  ASSERT_TRUE(d.serving() && quiet.serving());
  // Five nights on one driver and power limit, then a slower one after both
  // changed: the verdict names the changes, against the latest night's.
  v1::Fingerprint before;
  before.set_driver_version("580.159.04");
  before.set_power_limit_w(700);
  before.set_kernel("6.1.0");
  before.set_gpu_serial("1650123456789");
  for (uint32_t night = 0; night < 5; ++night) {
    if (night == 4) before.set_driver_version("580.160.01");
    PlantRun(d, 1.0, 200, night, "snightly", v1::VERDICT_UNSPECIFIED, 6 - night, false, before);
  }
  v1::Fingerprint after = before;
  after.set_driver_version("590.12");
  after.set_power_limit_w(500);
  after.set_gpu_serial("1650987654321");
  const std::string last =
      PlantRun(d, 1.1, 200, 99, "snightly", v1::VERDICT_REGRESSED, 0, false, after);
  Result history = Cli({"compare", last, "--history", "--host", d.address()});
  EXPECT_EQ(history.code, kExitRegression) << history.err << history.out;
  EXPECT_NE(history.out.find("last 5 runs"), std::string::npos) << history.out;
  EXPECT_NE(history.out.find("slower; environment differs: driver 580.160.01 \u2192 590.12, "
                             "power limit 700 W \u2192 500 W"),
            std::string::npos)
      << history.out;
  // Another card is another host, not a change of setup; the kernel stayed.
  EXPECT_EQ(history.out.find("serial"), std::string::npos) << history.out;
  EXPECT_EQ(history.out.find("kernel"), std::string::npos) << history.out;
  const std::string lonely = PlantRun(d, 1.0, 200, 7);
  Result not_scheduled = Cli({"compare", lonely, "--history", "--host", d.address()});
  EXPECT_EQ(not_scheduled.code, kExitUsage);
  EXPECT_NE(not_scheduled.err.find("not from a schedule"), std::string::npos);

  // Earlier runs there were, but every one contended: it says so rather than
  // "no earlier run".
  for (uint32_t night = 0; night < 3; ++night) {
    PlantRun(d, 1.0, 200, night, "sbusy", v1::VERDICT_UNSPECIFIED, 4 - night,
             /*contended=*/true);
  }
  const std::string after_busy = PlantRun(d, 1.0, 200, 50, "sbusy");
  Result busy = Cli({"compare", after_busy, "--history", "--host", d.address()});
  EXPECT_EQ(busy.code, kExitJobFailed) << busy.err << busy.out;
  EXPECT_NE(busy.err.find("schedule sbusy has 3 earlier runs of "), std::string::npos) << busy.err;
  EXPECT_NE(busy.err.find("all left out as contended or throttled"), std::string::npos)
      << busy.err;
  EXPECT_EQ(busy.err.find("no earlier run"), std::string::npos) << busy.err;

  // The nightly rule found what moved in the two runs' profiles too.
  {
    auto store = storage::Store::Open({d.data_dir() + "/gpubench.db"});
    ASSERT_TRUE(store.ok());
    auto run = (*store)->runs().Get(last, false);
    ASSERT_TRUE(run.ok());
    v1::HistoryComparison h = run->history();
    v1::OperatorChange* change = h.add_operator_changes();
    change->set_name("aten::addmm");
    change->set_delta_us_per_sample(42.73);
    change->set_share(0.785);
    ASSERT_TRUE((*store)->runs().SetHistory(last, h).ok());
  }
  Result flagged = Cli({"regressions", "--since", "12h", "--host", d.address(), "--host",
                        quiet.address()});
  EXPECT_EQ(flagged.code, kExitRegression) << flagged.err;
  EXPECT_NE(flagged.out.find(last), std::string::npos) << flagged.out;
  EXPECT_NE(flagged.out.find("regressed"), std::string::npos) << flagged.out;
  EXPECT_NE(flagged.out.find("biggest change: aten::addmm +42.73 us a sample, 78.5% of the "
                             "profiled difference"),
            std::string::npos)
      << flagged.out;
  Result none = Cli({"regressions", "--host", quiet.address()});
  EXPECT_EQ(none.code, kExitOk) << none.err;
}

// A nightly schedule's history, planted: 02:00 UTC every night for two
// weeks, 10% slower from six nights ago on with the power limit cut, one
// night without a job and one whose job failed. regressions names the
// change point (when, before and after, the first run after, what the
// environment changed), lists the missed nights and a host that did not
// answer, and exits 6 (missing data beats the regression's 4).
TEST(CliDaemon, RegressionsNameChangePointsAndMissingNights) {
  Daemon d(FreshDir("cli_changes"));
  ASSERT_TRUE(d.serving());
  auto store = storage::Store::Open({d.data_dir() + "/gpubench.db"});
  ASSERT_TRUE(store.ok()) << store.status();
  const absl::Time now = absl::Now();
  const absl::Time today =
      absl::FromCivil(absl::CivilDay(absl::ToCivilDay(now, absl::UTCTimeZone())),
                      absl::UTCTimeZone()) + absl::Hours(2);
  auto stamp = [](absl::Time t) {
    return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
  };
  v1::Schedule schedule;
  schedule.set_name("nightly-mlp");
  schedule.set_cron("0 2 * * *");
  schedule.set_time_zone("UTC");
  schedule.mutable_spec()->mutable_base()->set_workload("mlp");
  *schedule.mutable_create_time() = stamp(today - absl::Hours(24 * 14));
  *schedule.mutable_next_run_time() = stamp(today + absl::Hours(24));
  const std::string schedule_id = *(*store)->schedules().Insert(schedule);
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 0.005);
  std::string first_slow_run;
  for (int days_ago = 13; days_ago >= 0; --days_ago) {
    const absl::Time due = today - absl::Hours(24 * days_ago);
    if (due > now || days_ago == 3) continue;  // night 3: no job
    v1::Job job;
    job.set_schedule_id(schedule_id);
    job.set_state(days_ago == 2 ? v1::JOB_STATE_FAILED : v1::JOB_STATE_SUCCEEDED);
    *job.mutable_submit_time() = stamp(due + absl::Minutes(1));
    const std::string job_id = *(*store)->jobs().Insert(job);
    if (days_ago == 2) continue;  // failed: no run stored
    v1::Run run;
    run.set_job_id(job_id);
    run.set_state(v1::RUN_STATE_SUCCEEDED);
    run.mutable_config()->set_workload("mlp");
    run.mutable_config()->set_batch_size(1);
    const bool slow = days_ago <= 6;
    run.mutable_result()->set_throughput_samples_per_s((slow ? 900 : 1000) * (1 + noise(rng)));
    run.mutable_fingerprint()->set_power_limit_w(slow ? 500 : 700);
    *run.mutable_start_time() = stamp(due + absl::Minutes(2));
    *run.mutable_end_time() = run.start_time();
    const std::string run_id = *(*store)->runs().Insert(run);
    if (days_ago == 6) first_slow_run = run_id;
  }
  store->reset();

  Result r = Cli({"regressions", "--host", d.address(), "--host", "127.0.0.1:1",
                  "--host-timeout", "3"});
  EXPECT_EQ(r.code, kExitMissing) << r.err << r.out;
  EXPECT_NE(r.out.find(first_slow_run), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nightly-mlp: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("% (worse)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("power limit 700 W \u2192 500 W"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("missed 2 of "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(no job)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" failed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("did not answer"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("change points: 1 in 1 series"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Benjamini-Hochberg q 0.05"), std::string::npos) << r.err;

  Result json = Cli({"regressions", "--host", d.address(), "--output", "json"});
  EXPECT_EQ(json.code, kExitMissing) << json.err;
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &doc).ok()) << json.out;
  const auto& points = doc.fields().at("change_points").struct_value().fields().at("change_points");
  ASSERT_EQ(points.list_value().values_size(), 1) << json.out;
  const auto& cp = points.list_value().values(0).struct_value().fields();
  EXPECT_EQ(cp.at("first_run_after").string_value(), first_slow_run);
  EXPECT_TRUE(cp.at("worse").bool_value());
  EXPECT_NEAR(cp.at("change").number_value(), -0.10, 0.01);
  EXPECT_EQ(doc.fields().at("missing").list_value().values_size(), 1) << json.out;
}

// A name chosen by another user of the daemon must not drive the terminal:
// control characters print as escapes in every text format.
TEST(CliDaemon, ControlCharactersInNamesPrintAsEscapes) {
  Daemon d(FreshDir("cli_escape"));
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string spec = FreshDir("cli_escape_spec") + "/evil.json";
  // JSON's own escapes: raw control characters are not JSON (RFC 8259).
  std::ofstream(spec) << R"({"name": "\u001b[2J\u001b]0;owned\u0007x\ny\u009b31m",
    "base": {"workload": "empty", "device": "cpu"},
    "measurement": {"min_iterations": 3, "max_time_ms": 500}})";
  Result submitted = Cli({"submit", spec, "--host", d.address(), "--wait"});
  ASSERT_EQ(submitted.code, kExitOk) << submitted.err << submitted.out;
  for (const char* format : {"table", "csv", "markdown"}) {
    Result jobs = Cli({"jobs", "--host", d.address(), "--output", format});
    ASSERT_EQ(jobs.code, kExitOk) << jobs.err;
    for (char control : {'\x1b', '\x07'}) {
      EXPECT_EQ(jobs.out.find(control), std::string::npos) << format << ": " << jobs.out;
    }
    EXPECT_EQ(jobs.out.find("\xc2\x9b"), std::string::npos) << format;
    // Markdown escapes the escapes' backslashes and brackets in turn.
    const std::string shown = format == std::string("markdown")
                                  ? R"(\\x1b\[2J\\x1b\]0;owned\\x07x\\ny\\u009b31m)"
                                  : R"(\x1b[2J\x1b]0;owned\x07x\ny\u009b31m)";
    EXPECT_NE(jobs.out.find(shown), std::string::npos) << format << ": " << jobs.out;
  }
}

// A name is data in every format: a spreadsheet opening the CSV does not run
// it as a formula, a Markdown viewer does not render its HTML or links, and
// bidirectional controls do not reorder what the terminal shows.
TEST(CliDaemon, NamesCannotBecomeFormulasHtmlOrReorderedText) {
  Daemon d(FreshDir("cli_inject"));
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string spec = FreshDir("cli_inject_spec") + "/evil.json";
  std::ofstream(spec) << R"({"name": "=HYPERLINK(\"http://x.test\")<img src=x>|[a](b)\u202egpj.exe\u2066",
    "base": {"workload": "empty", "device": "cpu"},
    "measurement": {"min_iterations": 3, "max_time_ms": 500}})";
  Result submitted = Cli({"submit", spec, "--host", d.address(), "--wait"});
  ASSERT_EQ(submitted.code, kExitOk) << submitted.err << submitted.out;
  for (const char* format : {"table", "csv", "markdown"}) {
    Result jobs = Cli({"jobs", "--host", d.address(), "--output", format});
    ASSERT_EQ(jobs.code, kExitOk) << jobs.err;
    EXPECT_EQ(jobs.out.find("\xe2\x80\xae"), std::string::npos) << format;  // U+202E
    EXPECT_EQ(jobs.out.find("\xe2\x81\xa6"), std::string::npos) << format;  // U+2066
    EXPECT_NE(jobs.out.find(format == std::string("markdown") ? R"(\\u202egpj.exe\\u2066)"
                                                             : R"(\u202egpj.exe\u2066)"),
              std::string::npos)
        << format << jobs.out;
  }
  Result csv = Cli({"jobs", "--host", d.address(), "--output", "csv"});
  EXPECT_NE(csv.out.find(R"(,"'=HYPERLINK(""http://x.test"")<img)"), std::string::npos)
      << csv.out;
  EXPECT_EQ(csv.out.find(",=HYPERLINK"), std::string::npos) << csv.out;
  EXPECT_EQ(csv.out.find("\"=HYPERLINK"), std::string::npos) << csv.out;
  Result markdown = Cli({"jobs", "--host", d.address(), "--output", "markdown"});
  EXPECT_NE(markdown.out.find(R"(&lt;img src=x&gt;\|\[a\](b))"), std::string::npos)
      << markdown.out;
  EXPECT_EQ(markdown.out.find("<img"), std::string::npos) << markdown.out;
}

TEST(CliDaemon, ExitCodesSayWhatHappened) {
  const std::string models = FreshDir("cli_exit_models");
  std::ofstream(models + "/bad.pt") << "not a TorchScript archive";
  Daemon d(FreshDir("cli_exit"), {"--model-root", models});
  ASSERT_TRUE(d.serving()) << d.log();
  EXPECT_EQ(Cli({"frobnicate"}).code, kExitUsage);
  EXPECT_EQ(Cli({"show"}).code, kExitUsage);
  Result bad = Cli(Tiny({"submit", "--host", d.address(), "--batch", "0"}));
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_NE(bad.err.find("batch"), std::string::npos) << bad.err;

  Result unreachable = Cli({"jobs", "--host", "127.0.0.1:1"});
  EXPECT_EQ(unreachable.code, kExitUnreachable);
  EXPECT_NE(unreachable.err.find("cannot reach"), std::string::npos) << unreachable.err;
  EXPECT_EQ(unreachable.err.find("Exception"), std::string::npos);

  // A job whose only run fails (its model file is not a model).
  const std::string spec = FreshDir("cli_exit_spec") + "/bad.json";
  std::ofstream(spec) << R"({"base": {"workload": "torchscript", "device": "cpu",
    "mode": "MODE_INFER", "params": {"model_path": ")" << models << R"(/bad.pt",
    "inputs": [{"shape": [1, 16], "dtype": "DTYPE_FLOAT32"}]}}})";
  Result failed = Cli({"submit", spec, "--host", d.address(), "--wait"});
  EXPECT_EQ(failed.code, kExitJobFailed) << failed.err << failed.out;

  // Planted jobs of 5 repetitions whose runs vary by 0.3%: 5% slower is
  // found either way round, and two jobs of the same work differ by nothing.
  const std::string fast = PlantJob(d, 1.00, 5, 0.003, 1);
  const std::string slow = PlantJob(d, 1.05, 5, 0.003, 2);
  const std::string same = PlantJob(d, 1.00, 5, 0.003, 3);
  Result slower = Cli({"compare", fast, slow, "--host", d.address()});
  EXPECT_EQ(slower.code, kExitRegression) << slower.err << slower.out;
  EXPECT_NE(slower.out.find("slower"), std::string::npos) << slower.out;
  EXPECT_NE(slower.out.find("5/5"), std::string::npos) << slower.out;  // runs a side
  Result faster = Cli({"compare", slow, fast, "--host", d.address()});
  EXPECT_EQ(faster.code, kExitOk) << faster.err << faster.out;
  EXPECT_NE(faster.out.find("faster"), std::string::npos) << faster.out;
  Result no_diff = Cli({"compare", fast, same, "--host", d.address()});
  EXPECT_EQ(no_diff.code, kExitOk) << no_diff.err << no_diff.out;
  EXPECT_NE(no_diff.out.find("no significant difference"), std::string::npos) << no_diff.out;
  // One run a side: 5% apart, but nothing says how much runs vary.
  const std::string one_fast = PlantRun(d, 1.00, 400, 1);
  const std::string one_slow = PlantRun(d, 1.05, 400, 2);
  Result unsure = Cli({"compare", one_fast, one_slow, "--host", d.address()});
  EXPECT_EQ(unsure.code, kExitOk) << unsure.err << unsure.out;
  EXPECT_NE(unsure.out.find("too noisy to tell"), std::string::npos) << unsure.out;
}

TEST(CliDaemon, HostsSideBySideReportsAnUnreachableHostAndShowsTheOthers) {
  Daemon d(FreshDir("cli_hosts"));
  ASSERT_TRUE(d.serving()) << d.log();
  // A fleet file names the live host; --host picks it by name.
  const std::string fleet = FreshDir("cli_hosts_fleet") + "/fleet.json";
  std::ofstream(fleet) << R"({"hosts": [{"name": "alpha", "address": ")" << d.address()
                       << R"("}, {"name": "gone", "address": "127.0.0.1:1"}]})";
  setenv("GPUBENCH_FLEET", fleet.c_str(), 1);
  unsetenv("GPUBENCH_HOST");
  Result all = Cli({"hosts"});
  Result one = Cli({"jobs", "--host", "alpha"});
  unsetenv("GPUBENCH_FLEET");
  EXPECT_EQ(all.code, kExitUnreachable);
  std::vector<std::string> lines = SplitLines(all.out);
  ASSERT_GE(lines.size(), 5u) << all.out;
  EXPECT_NE(lines[0].find("alpha"), std::string::npos);
  EXPECT_NE(lines[0].find("gone"), std::string::npos);
  EXPECT_NE(all.out.find("unreachable"), std::string::npos);
  EXPECT_NE(all.out.find("torch"), std::string::npos);
  EXPECT_NE(all.err.find("gone"), std::string::npos) << all.err;
  EXPECT_EQ(one.code, kExitOk) << one.err;
  // NAME=ADDRESS names a host the fleet file lacks.
  Result named = Cli({"hosts", "--host", "beta=" + d.address()});
  EXPECT_EQ(named.code, kExitOk) << named.err;
  EXPECT_NE(SplitLines(named.out).at(0).find("beta"), std::string::npos) << named.out;
}

// A verdict is about one piece of work done two ways: two jobs of different
// workloads get no verdict (and no exit 4), however far apart they are.
TEST(CliDaemon, CompareOfDifferentWorkGivesNoVerdict) {
  Daemon d(FreshDir("cli_compare_work"));
  ASSERT_TRUE(d.serving()) << d.log();
  // 5 runs a side, 5% apart, little noise: the same workload would be "slower".
  const std::string matmul = PlantJob(d, 1.00, 5, 0.003, 1, "matmul");
  const std::string mlp = PlantJob(d, 1.05, 5, 0.003, 2, "mlp");
  Result planted = Cli({"compare", matmul, mlp, "--host", d.address()});
  EXPECT_EQ(planted.code, kExitUsage) << planted.err << planted.out;
  EXPECT_NE(planted.out.find("not comparable: different work: workload \"matmul\" vs \"mlp\""),
            std::string::npos)
      << planted.out;
  EXPECT_EQ(planted.out.find("slower"), std::string::npos) << planted.out;
  EXPECT_NE(planted.err.find("not comparable"), std::string::npos) << planted.err;

  // Real jobs: mlp against the empty workload, and train against infer.
  auto submit = [&](std::vector<std::string> flags) {
    std::vector<std::string> args = {"submit", "--host", d.address(), "--wait", "--output",
                                     "json", "--device", "cpu", "--warmup", "2",
                                     "--min-iterations", "10", "--min-time-ms", "50",
                                     "--max-time-ms", "1500"};
    args.insert(args.end(), flags.begin(), flags.end());
    Result r = Cli(args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    const std::string key = "\"job_id\": \"";
    const size_t at = r.out.find(key) + key.size();
    return r.out.substr(at, r.out.find('"', at) - at);
  };
  const std::string infer = submit({"--workload", "mlp", "--mode", "infer", "--batch", "8"});
  const std::string train = submit({"--workload", "mlp", "--mode", "train", "--batch", "8"});
  const std::string empty = submit({"--workload", "empty", "--mode", "infer", "--batch", "8"});
  Result workloads = Cli({"compare", infer, empty, "--host", d.address(), "--output", "json"});
  EXPECT_EQ(workloads.code, kExitUsage) << workloads.err << workloads.out;
  EXPECT_NE(workloads.out.find("not comparable: different work: workload \\\"mlp\\\" vs "
                               "\\\"empty\\\""),
            std::string::npos)
      << workloads.out;
  Result modes = Cli({"compare", infer, train, "--host", d.address()});
  EXPECT_EQ(modes.code, kExitUsage) << modes.err << modes.out;
  EXPECT_NE(modes.out.find("mode MODE_INFER vs MODE_TRAIN"), std::string::npos) << modes.out;
  // Sides of several configs each, none shared (mlp against empty at two
  // batches): no row at all, and the same exit as a row of other work.
  const std::string mlp_two = submit({"--workload", "mlp", "--mode", "infer", "--batch", "4,8"});
  const std::string empty_two =
      submit({"--workload", "empty", "--mode", "infer", "--batch", "4,8"});
  Result none = Cli({"compare", mlp_two, empty_two, "--host", d.address()});
  EXPECT_EQ(none.code, kExitUsage) << none.err << none.out;
  EXPECT_NE(none.err.find("not comparable: no run of one side"), std::string::npos) << none.err;
  // --repeat refuses before it measures anything.
  const std::string jobs_before = Cli({"jobs", "--host", d.address()}).out;
  Result repeat = Cli({"compare", infer, empty, "--repeat", "2", "--host", d.address()});
  EXPECT_EQ(repeat.code, kExitUsage) << repeat.err << repeat.out;
  EXPECT_NE(repeat.err.find("A and B do different work (workload"), std::string::npos)
      << repeat.err;
  EXPECT_EQ(Cli({"jobs", "--host", d.address()}).out, jobs_before);
  // The same work run another way (batch 16 against 8) is what compare is
  // for: it gets a verdict row.
  const std::string b16 = submit({"--workload", "mlp", "--mode", "infer", "--batch", "16"});
  Result batches = Cli({"compare", infer, b16, "--host", d.address()});
  EXPECT_EQ(batches.code, kExitOk) << batches.err << batches.out;
  EXPECT_NE(batches.out.find("too noisy to tell"), std::string::npos) << batches.out;
  EXPECT_EQ(batches.out.find("not comparable"), std::string::npos) << batches.out;
}

// `run` names the store only when it holds the job's results; a failure says
// what failed instead.
TEST(Cli, RunThatFailsSaysWhatFailedAndNotWhereItsStored) {
  const std::string dir = FreshDir("cli_run_fails");
  std::ofstream(dir + "/bad.pt") << "not a TorchScript archive";
  const std::string spec = dir + "/bad.json";
  std::ofstream(spec) << R"({"base": {"workload": "torchscript", "device": "cpu",
    "mode": "MODE_INFER", "params": {"model_path": ")" << dir << R"(/bad.pt",
    "inputs": [{"shape": [1, 16], "dtype": "DTYPE_FLOAT32"}]}}})";
  Result r = Cli({"run", spec, "--data-dir", dir + "/data", "--worker", GPUBENCH_WORKER_PATH,
                  "--daemon", GPUBENCH_DAEMON_PATH});
  EXPECT_EQ(r.code, kExitJobFailed) << r.err << r.out;
  EXPECT_EQ(r.out.find("stored in"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("torchscript"), std::string::npos) << r.err;  // which run
}

// A daemon that refuses the caller answered: `hosts` says why, not
// "unreachable", and exits 5. Each host's worker confinement is a row.
TEST(CliDaemon, HostsSaysRefusedOnAnAuthFailureAndShowsWorkerConfinement) {
  const std::string dir = FreshDir("cli_hosts_auth_files");
  std::ofstream(dir + "/token") << "s3cret-token\n";
  Daemon open(FreshDir("cli_hosts_open")), locked(FreshDir("cli_hosts_locked"),
                                                  {"--token-file", dir + "/token"});
  ASSERT_TRUE(open.serving()) << open.log();
  ASSERT_TRUE(locked.serving()) << locked.log();
  // A host that takes the connection and never answers: named unreachable
  // once --host-timeout passes, the others' answers standing.
  const int slow = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t at_size = sizeof(at);
  ASSERT_EQ(bind(slow, reinterpret_cast<sockaddr*>(&at), sizeof(at)), 0);
  ASSERT_EQ(listen(slow, 16), 0);
  ASSERT_EQ(getsockname(slow, reinterpret_cast<sockaddr*>(&at), &at_size), 0);
  const std::string fleet = dir + "/fleet.json";
  std::ofstream(fleet) << R"({"hosts": [{"name": "open", "address": ")" << open.address()
                       << R"("}, {"name": "locked", "address": ")" << locked.address()
                       << R"("}, {"name": "gone", "address": "127.0.0.1:1"}, {"name": "slow", )"
                       << R"("address": "127.0.0.1:)" << ntohs(at.sin_port) << R"("}]})";
  setenv("GPUBENCH_FLEET", fleet.c_str(), 1);
  unsetenv("GPUBENCH_HOST");
  Result table = Cli({"hosts", "--host-timeout", "2"});
  Result json = Cli({"hosts", "--output", "json", "--host-timeout", "2"});
  unsetenv("GPUBENCH_FLEET");
  close(slow);
  EXPECT_NE(table.err.find("1 of 4 hosts answered; 2 unreachable (gone, slow); 1 refused the "
                           "caller (locked)"),
            std::string::npos)
      << table.err;
  EXPECT_EQ(table.code, kExitAuth) << table.err;
  std::vector<std::string> lines = SplitLines(table.out);
  ASSERT_GE(lines.size(), 3u) << table.out;
  EXPECT_EQ(lines[1].rfind("hostname", 0), 0u) << table.out;
  EXPECT_NE(lines[1].find("refused: "), std::string::npos) << table.out;
  EXPECT_NE(lines[1].find("unreachable"), std::string::npos) << table.out;  // gone, slow
  EXPECT_NE(lines[1].find("unreachable"), lines[1].rfind("unreachable")) << table.out;
  const auto confinement =
      std::find_if(lines.begin(), lines.end(),
                   [](const std::string& l) { return l.rfind("worker confinement", 0) == 0; });
  ASSERT_NE(confinement, lines.end()) << table.out;
  EXPECT_EQ(json.code, kExitAuth) << json.err;
  google::protobuf::ListValue hosts;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &hosts).ok()) << json.out;
  ASSERT_EQ(hosts.values_size(), 4);
  const auto& locked_json = hosts.values(1).struct_value().fields();
  EXPECT_TRUE(locked_json.at("reachable").bool_value()) << json.out;
  EXPECT_FALSE(locked_json.at("refused").string_value().empty()) << json.out;
  EXPECT_FALSE(hosts.values(2).struct_value().fields().at("reachable").bool_value());
  // The open daemon's confinement, as the table shows it, is in its JSON.
  const auto& open_host = hosts.values(0).struct_value().fields().at("host").struct_value();
  const auto field = open_host.fields().find("worker_confinement");
  if (field != open_host.fields().end()) {
    EXPECT_NE(confinement->find(field->second.string_value()), std::string::npos)
        << *confinement;
  } else {
    EXPECT_NE(confinement->find("-"), std::string::npos) << *confinement;
  }
}

TEST(CliDaemon, TraceScheduleModelAndReport) {
  Daemon d(FreshDir("cli_misc"));
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string dir = FreshDir("cli_misc_files");
  Result done = Cli(Tiny({"submit", "--host", d.address(), "--batch", "4,8", "--wait"}));
  ASSERT_EQ(done.code, kExitOk) << done.err;
  const std::string job_id = done.out.substr(4, done.out.find(' ', 4) - 4);

  // trace: what the store holds arrives byte for byte.
  const std::string trace = R"({"traceEvents":[{"name":"aten::mm","ph":"X","ts":1,"dur":2}]})";
  std::string run_id;
  {
    auto store = storage::Store::Open({d.data_dir() + "/gpubench.db"});
    ASSERT_TRUE(store.ok());
    run_id = (*(*store)->runs().List(job_id, false))[0].run_id();
    ASSERT_TRUE((*store)->runs().PutTrace(run_id, "chrome", trace).ok());
  }
  Result got = Cli({"trace", run_id, "-o", dir + "/trace.json", "--host", d.address()});
  ASSERT_EQ(got.code, kExitOk) << got.err;
  std::ifstream in(dir + "/trace.json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), trace);

  // schedule add / list / rm.
  Result added = Cli(Tiny({"schedule", "add", "--cron", "0 3 * * *", "--tz", "UTC",
                           "--host", d.address()}));
  ASSERT_EQ(added.code, kExitOk) << added.err;
  const std::string schedule_id = added.out.substr(0, added.out.find(' '));
  Result listed = Cli({"schedule", "list", "--host", d.address()});
  EXPECT_NE(listed.out.find(schedule_id), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("0 3 * * *"), std::string::npos) << listed.out;
  // A due job the daemon could not submit would show here, counted, with why.
  EXPECT_NE(listed.out.find("failures"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("last error"), std::string::npos) << listed.out;
  Result bad_cron = Cli(Tiny({"schedule", "add", "--cron", "0 25 * * *", "--host", d.address()}));
  EXPECT_EQ(bad_cron.code, kExitUsage);
  EXPECT_NE(bad_cron.err.find("hour"), std::string::npos) << bad_cron.err;
  EXPECT_EQ(Cli({"schedule", "rm", schedule_id, "--host", d.address()}).code, kExitOk);
  EXPECT_EQ(Cli({"schedule", "list", "--host", d.address()}).out.find(schedule_id),
            std::string::npos);
  // A schedule's times print in its own zone, with the offset said: 02:00
  // in Paris, whatever zone the client is in.
  Result paris = Cli(Tiny({"schedule", "add", "--cron", "0 2 * * *", "--tz", "Europe/Paris",
                           "--host", d.address()}));
  ASSERT_EQ(paris.code, kExitOk) << paris.err;
  EXPECT_NE(paris.out.find(" 02:00 +0"), std::string::npos) << paris.out;
  Result paris_listed = Cli({"schedule", "list", "--host", d.address()});
  EXPECT_NE(paris_listed.out.find("Europe/Paris"), std::string::npos) << paris_listed.out;
  EXPECT_NE(paris_listed.out.find(" 02:00 +0"), std::string::npos) << paris_listed.out;

  // model upload: the printed hash is the file's.
  const std::string model = dir + "/model.pt";
  std::ofstream(model, std::ios::binary) << std::string(3 << 20, 'm');
  Result uploaded = Cli({"model", "upload", model, "--host", d.address()});
  ASSERT_EQ(uploaded.code, kExitOk) << uploaded.err;
  EXPECT_EQ(uploaded.out.substr(0, 64), Sha256Hex(std::string(3 << 20, 'm')));
  // model rm deletes it (the loopback daemon without tokens: every caller is admin).
  Result removed = Cli({"model", "rm", uploaded.out.substr(0, 64), "--host", d.address()});
  EXPECT_EQ(removed.code, kExitOk) << removed.err;
  EXPECT_NE(removed.out.find("deleted " + uploaded.out.substr(0, 64)), std::string::npos);
  Result again = Cli({"model", "rm", uploaded.out.substr(0, 64), "--host", d.address()});
  EXPECT_EQ(again.code, kExitJobFailed) << again.err;  // NOT_FOUND
  EXPECT_NE(again.err.find("no such model"), std::string::npos) << again.err;

  // report: one HTML file with plots.
  Result report = Cli({"report", job_id, "-o", dir + "/report.html", "--host", d.address()});
  ASSERT_EQ(report.code, kExitOk) << report.err;
  std::ifstream html_in(dir + "/report.html");
  const std::string html(std::istreambuf_iterator<char>(html_in), {});
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find(job_id), std::string::npos);
}

TEST(CliDaemon, FleetFileTlsAndTokenReachASecuredDaemon) {
  const std::string dir = FreshDir("cli_tls_files");
  // A self-signed certificate for 127.0.0.1 (openssl is in Debian's base).
  const std::string cert = dir + "/cert.pem", key = dir + "/key.pem";
  ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1"
                         " -addext subjectAltName=IP:127.0.0.1 -keyout '" + key + "' -out '" +
                         cert + "' 2>/dev/null")
                            .c_str()),
            0);
  std::ofstream(dir + "/token") << "s3cret-token\n";
  Daemon d(FreshDir("cli_tls"), {"--tls-cert", cert, "--tls-key", key, "--token-file",
                                 dir + "/token"});
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string fleet = dir + "/fleet.json";
  std::ofstream(fleet) << R"({"hosts": [
    {"name": "secure", "address": ")" << d.address() << R"(", "tls": true,
     "ca_file": ")" << cert << R"(", "token_file": ")" << dir << R"(/token"},
    {"name": "no-token", "address": ")" << d.address() << R"(", "tls": true,
     "ca_file": ")" << cert << R"("},
    {"name": "plain", "address": ")" << d.address() << R"("}]})";
  setenv("GPUBENCH_FLEET", fleet.c_str(), 1);
  Result ok = Cli({"jobs", "--host", "secure"});
  Result no_token = Cli({"jobs", "--host", "no-token"});
  Result plain = Cli({"jobs", "--host", "plain"});
  Result bad_fleet_host = Cli({"jobs", "--host", "nobody"});
  unsetenv("GPUBENCH_FLEET");
  EXPECT_EQ(ok.code, kExitOk) << ok.err;
  EXPECT_EQ(no_token.code, kExitAuth);
  EXPECT_NE(no_token.err.find("token"), std::string::npos) << no_token.err;
  EXPECT_EQ(plain.code, kExitUnreachable) << plain.err;
  EXPECT_EQ(bad_fleet_host.code, kExitUsage);
  EXPECT_NE(bad_fleet_host.err.find("nobody"), std::string::npos) << bad_fleet_host.err;

  // A CA file that cannot be read is an error, not a quiet fall back to the
  // system roots; a token never goes in plaintext to another machine.
  std::ofstream(fleet) << R"({"hosts": [{"name": "x", "address": ")" << d.address()
                       << R"(", "tls": true, "ca_file": "/nonexistent/ca.pem"}]})";
  setenv("GPUBENCH_FLEET", fleet.c_str(), 1);
  Result no_ca = Cli({"jobs", "--host", "x"});
  std::ofstream(fleet) << R"({"hosts": [{"name": "far", "address": "10.1.2.3:50051",
                              "token": "s3cret-token"}]})";
  Result plaintext = Cli({"jobs", "--host", "far"});
  unsetenv("GPUBENCH_FLEET");
  EXPECT_EQ(no_ca.code, kExitUsage) << no_ca.err;
  EXPECT_NE(no_ca.err.find("hosts[0].ca_file: cannot read /nonexistent/ca.pem"),
            std::string::npos)
      << no_ca.err;
  EXPECT_EQ(plaintext.code, kExitUsage) << plaintext.err;
  EXPECT_NE(plaintext.err.find("plaintext"), std::string::npos) << plaintext.err;
}

// ---- The statistics behind the verdicts ----

}  // namespace
}  // namespace gpubench::client
