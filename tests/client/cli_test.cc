#include "client/cli.h"

#include <gtest/gtest.h>
#include <sys/utsname.h>

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
#include "storage/store.h"
#include "tests/support/command.h"
#include "tests/client/cli_test_util.h"
#include "tests/support/daemon_process.h"

namespace gpubench::client {
namespace {

TEST(Cli, RunPrintsATableAndStoresTheJob) {
  std::ostringstream out, err;
  const std::string dir = ::testing::TempDir() + "/cli_run";
  std::system(("rm -rf '" + dir + "'").c_str());
  int code = RunCli({"run", "--workload", "mlp", "--device", "cpu", "--batch", "8,16",
                     "--min-time-ms", "50", "--max-time-ms", "1000", "--data-dir", dir,
                     "--worker", GPUBENCH_WORKER_PATH, "--daemon", GPUBENCH_DAEMON_PATH},
                    out, err);
  ASSERT_EQ(code, kExitOk) << err.str();
  EXPECT_NE(out.str().find("succeeded"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(dir + "/gpubench.db"), std::string::npos);
  // It went through a daemon of its own (progress from its event stream),
  // stopped afterwards: the directory is free again, and the job is stored.
  EXPECT_NE(err.str().find("run 2/2: mlp"), std::string::npos) << err.str();
  EXPECT_TRUE(absl::IsNotFound(AddressOfDaemonServing(dir).status()));
  auto store = storage::Store::Open({dir + "/gpubench.db"});
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->jobs().List({}, 10, "");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->items.size(), 1u);
  EXPECT_EQ(jobs->items[0].state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(jobs->items[0].run_count(), 2);
}

TEST(Cli, RunSaysWhyItsDaemonDidNotStart) {
  const std::string dir = ::testing::TempDir() + "/cli_run_damaged";
  std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str());
  std::ofstream(dir + "/gpubench.db") << std::string(8192, 'x');  // not a database
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"run", "--workload", "empty", "--device", "cpu", "--data-dir", dir,
                    "--worker", GPUBENCH_WORKER_PATH, "--daemon", GPUBENCH_DAEMON_PATH},
                   out, err),
            kExitJobFailed);
  EXPECT_NE(err.str().find("exited before serving"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("gpubench.db"), std::string::npos) << err.str();
}

using testing_support::Daemon;
using testing_support::FreshDir;

TEST(CliDaemon, SubmitWatchShowRoundTrip) {
  Daemon d(FreshDir("cli_round_trip"));
  ASSERT_TRUE(d.serving()) << d.log();
  Result submitted = Cli(Tiny({"submit", "--host", d.address(), "--batch", "4,8"}));
  ASSERT_EQ(submitted.code, kExitOk) << submitted.err;
  const std::string id = SplitLines(submitted.out).at(0);
  ASSERT_EQ(id[0], 'j') << submitted.out;

  Result watched = Cli({"watch", id, "--host", d.address()});
  ASSERT_EQ(watched.code, kExitOk) << watched.err;
  EXPECT_NE(watched.err.find("succeeded"), std::string::npos) << watched.err;  // progress
  EXPECT_NE(watched.out.find("mlp infer b4"), std::string::npos) << watched.out;
  EXPECT_NE(watched.out.find("mlp infer b8"), std::string::npos) << watched.out;
  // Each run's environment, as its worker read it: LibTorch (and the NCCL
  // it loaded, where it has one), this kernel.
  struct utsname host;
  ASSERT_EQ(uname(&host), 0);
  const size_t environment = watched.out.find("environment (run 0): ");
  ASSERT_NE(environment, std::string::npos) << watched.out;
  EXPECT_NE(watched.out.find("LibTorch ", environment), std::string::npos) << watched.out;
  EXPECT_NE(watched.out.find(std::string("kernel ") + host.release), std::string::npos)
      << watched.out;

  // JSON: {"job": Job, "runs": [Run]} in the protobuf JSON mapping.
  Result shown = Cli({"show", id, "--host", d.address(), "--output", "json"});
  ASSERT_EQ(shown.code, kExitOk) << shown.err;
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(shown.out, &doc).ok()) << shown.out;
  std::string job_json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(doc.fields().at("job"), &job_json).ok());
  v1::Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(job_json, &job).ok()) << job_json;
  EXPECT_EQ(job.job_id(), id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(doc.fields().at("runs").list_value().values_size(), 2);

  // --wait prints the results table itself.
  Result waited = Cli(Tiny({"submit", "--host", d.address(), "--wait"}));
  ASSERT_EQ(waited.code, kExitOk) << waited.err;
  EXPECT_NE(waited.out.find("succeeded"), std::string::npos) << waited.out;
  Result jobs = Cli({"jobs", "--host", d.address(), "--state", "succeeded"});
  ASSERT_EQ(jobs.code, kExitOk) << jobs.err;
  EXPECT_EQ(SplitLines(jobs.out).size(), 3u) << jobs.out;  // header + 2 jobs
}

// spec --dry-run answers with the daemon's plan, queueing nothing, and the
// submit of the same spec runs exactly those configs; what the host cannot
// run (cuda:all without GPUs) is refused at the dry run as at the submit.
TEST(CliDaemon, ADryRunAnswersWithTheConfigsTheSubmitRuns) {
  Daemon d(FreshDir("cli_dry_run"));
  ASSERT_TRUE(d.serving()) << d.log();
  Result planned =
      Cli(Tiny({"spec", "--dry-run", "--host", d.address(), "--batch", "4,8", "--output", "json"}));
  ASSERT_EQ(planned.code, kExitOk) << planned.err;
  v1::SubmitJobResponse plan;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(planned.out, &plan).ok())
      << planned.out;
  ASSERT_EQ(plan.runs_size(), 2);
  EXPECT_TRUE(plan.job().job_id().empty());
  // The whole plan: what the spec left out is there with the value the
  // worker will use.
  EXPECT_EQ(plan.job().spec().measurement().warmup_iterations(), 2);
  EXPECT_EQ(plan.job().spec().measurement().window_iterations(), 10);
  EXPECT_DOUBLE_EQ(plan.job().spec().measurement().cv_threshold(), 0.02);
  EXPECT_EQ(plan.job().spec().telemetry().interval_ms(), 100);
  Result none = Cli({"jobs", "--host", d.address()});
  EXPECT_EQ(SplitLines(none.out).size(), 1u) << none.out;  // the header: nothing queued
  Result table = Cli(Tiny({"spec", "--dry-run", "--host", d.address(), "--batch", "4,8",
                           "--cudnn-benchmark"}));
  EXPECT_NE(table.out.find("2 runs"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("settings: measurement: warmup_iterations 2, warmup_ms 0, "
                           "min_iterations 10, min_time_ms 50, max_time_ms 1500, "
                           "window_iterations 10, cv_threshold 0.02, trials 1"),
            std::string::npos)
      << table.out;
  // A setting that means nothing on the CPU is taken, and said.
  EXPECT_NE(table.err.find("note: cudnn_benchmark means nothing on the CPU"), std::string::npos)
      << table.err;
  EXPECT_NE(table.out.find("mlp infer b8"), std::string::npos) << table.out;

  Result waited = Cli(Tiny({"submit", "--host", d.address(), "--batch", "4,8", "--wait",
                            "--output", "json"}));
  ASSERT_EQ(waited.code, kExitOk) << waited.err;
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(waited.out, &doc).ok()) << waited.out;
  const auto& runs = doc.fields().at("runs").list_value();
  ASSERT_EQ(runs.values_size(), 2);
  for (int i = 0; i < 2; ++i) {
    std::string config_json;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(
                    runs.values(i).struct_value().fields().at("config"), &config_json)
                    .ok());
    v1::RunConfig ran;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(config_json, &ran).ok());
    EXPECT_EQ(ran.SerializeAsString(), plan.runs(i).SerializeAsString())
        << ran.ShortDebugString() << "\n" << plan.runs(i).ShortDebugString();
  }

  Result every_gpu = Cli({"spec", "--dry-run", "--host", d.address(), "--workload", "mlp",
                          "--device", "cuda:all"});
  EXPECT_NE(every_gpu.code, kExitOk);
  EXPECT_NE(every_gpu.err.find("spec.base.device"), std::string::npos) << every_gpu.err;
}

// --check-numerics: each run's output (in training also its loss and first
// gradient) against fp64 on the CPU, in the table's notes and in JSON.
TEST(CliDaemon, CheckNumericsShowsAgreementWithFp64) {
  Daemon d(FreshDir("cli_numerics"));
  ASSERT_TRUE(d.serving()) << d.log();
  Result done = Cli({"submit", "--host", d.address(), "--workload", "mlp", "--device", "cpu",
                     "--mode", "train,infer", "--batch", "4", "--warmup", "2",
                     "--min-iterations", "10", "--min-time-ms", "50", "--max-time-ms", "1500",
                     "--check-numerics", "true", "--wait"});
  ASSERT_EQ(done.code, kExitOk) << done.err;
  const size_t first = done.out.find("numerics ok: output ");  // one in each run's notes
  ASSERT_NE(first, std::string::npos) << done.out;
  EXPECT_NE(done.out.find("numerics ok: output ", first + 1), std::string::npos) << done.out;
  EXPECT_NE(done.out.find(", gradient of "), std::string::npos) << done.out;
  EXPECT_NE(done.out.find("(tolerance 1e-04 on the output)"), std::string::npos) << done.out;
  EXPECT_NE(done.out.find("(tolerance 1e-04 on the loss)"), std::string::npos) << done.out;
  Result json = Cli({"runs", "--host", d.address(), "--output", "json"});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  v1::QueryRunsResponse runs;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &runs).ok()) << json.out;
  ASSERT_EQ(runs.runs_size(), 2);
  for (const auto& r : runs.runs()) {
    const v1::NumericsCheck& n = r.result().numerics();
    EXPECT_TRUE(n.checked()) << n.error();
    EXPECT_TRUE(n.passed());
    EXPECT_LT(n.output_rel_error(), 1e-4);
    EXPECT_EQ(n.batch_size(), 4);
  }
}

// A tiny gpt decoding at two prompt lengths beside a device copy: show's
// language-model table gives TTFT, ITL and the share of the copy peak, and
// the report draws ITL against the prompt length.
TEST(CliDaemon, ShowAndReportGiveALanguageModelsLatencies) {
  Daemon d(FreshDir("cli_lm"));
  ASSERT_TRUE(d.serving()) << d.log();
  const std::vector<std::string> timing = {"--device", "cpu", "--warmup", "1",
                                           "--min-iterations", "3", "--min-time-ms", "50",
                                           "--max-time-ms", "3000", "--wait"};
  std::vector<std::string> copy = {"submit", "--host", d.address(), "--workload", "copy",
                                   "--copy-direction", "device_to_device", "--copy-bytes",
                                   "16777216"};
  copy.insert(copy.end(), timing.begin(), timing.end());
  ASSERT_EQ(Cli(copy).code, kExitOk);
  std::vector<std::string> lm = {"submit", "--host", d.address(), "--workload", "gpt",
                                 "--model-size", "custom", "--num-layers", "2",
                                 "--hidden-size", "32", "--num-heads", "2", "--vocab-size",
                                 "128", "--seq-len", "64", "--mode", "infer", "--batch", "2",
                                 "--prompt-len", "8,40", "--new-tokens", "8"};
  lm.insert(lm.end(), timing.begin(), timing.end());
  Result done = Cli(lm);
  ASSERT_EQ(done.code, kExitOk) << done.err << done.out;
  const size_t table = done.out.find("\nlanguage models (");
  ASSERT_NE(table, std::string::npos) << done.out;
  const std::vector<std::string> lines = SplitLines(done.out.substr(table + 1));
  ASSERT_GE(lines.size(), 4u) << done.out;
  EXPECT_NE(lines[1].find("TTFT p50 ms"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("of copy peak"), std::string::npos) << lines[1];
  // Both prompt lengths, each with a share of the copy's traffic (the only
  // percentage on a CPU: no datasheet, no matmul measured).
  for (int row : {2, 3}) EXPECT_NE(lines[row].find('%'), std::string::npos) << lines[row];

  const std::string queued = SplitLines(done.err).at(0);  // "job ID queued on HOST (2 runs)"
  const std::string id = queued.substr(4, queued.find(" queued") - 4);
  const std::string html = ::testing::TempDir() + "/cli_lm_report.html";
  Result report = Cli({"report", id, "-o", html, "--host", d.address()});
  ASSERT_EQ(report.code, kExitOk) << report.err;
  std::stringstream page;
  page << std::ifstream(html).rdbuf();
  EXPECT_NE(page.str().find("Inter-token latency (p50, p99) vs prompt length"),
            std::string::npos);
  EXPECT_NE(page.str().find("Decoding&#39;s weight and KV-cache reads"), std::string::npos);
}

// The roofline of profiled runs on this CPU, against the peaks that this
// host's own matmul and device-to-device copy runs measured: before there
// are any, a run has its figures and no verdict; after, each figure follows
// from the stored runs, and the verdict from the intensity against the ridge.
TEST(CliDaemon, ShowPlacesProfiledRunsOnTheHostsRoofline) {
  Daemon d(FreshDir("cli_roofline"));
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string spec = ::testing::TempDir() + "/cli_roofline_profiled.json";
  std::ofstream(spec) << R"({"profiling": {"enabled": true, "iterations": 3}})";
  const std::vector<std::string> model = {
      "submit", spec, "--host", d.address(), "--workload", "mlp", "--device", "cpu",
      "--mode", "infer", "--batch", "32", "--warmup", "2", "--min-iterations", "10",
      "--min-time-ms", "100", "--max-time-ms", "1500", "--wait"};
  Result before = Cli(model);
  ASSERT_EQ(before.code, kExitOk) << before.err;
  EXPECT_NE(before.out.find("roofline"), std::string::npos) << before.out;
  EXPECT_NE(before.out.find("no peaks measured"), std::string::npos) << before.out;

  for (std::vector<std::string> peak :
       {std::vector<std::string>{"--workload", "matmul", "--matmul-size", "1024"},
        std::vector<std::string>{"--workload", "copy", "--copy-direction", "device_to_device",
                                 "--copy-bytes", "67108864"}}) {
    std::vector<std::string> args = {"submit", "--host", d.address(), "--device", "cpu",
                                     "--warmup", "2", "--min-iterations", "10",
                                     "--min-time-ms", "100", "--max-time-ms", "1500", "--wait"};
    args.insert(args.end(), peak.begin(), peak.end());
    Result r = Cli(args);
    ASSERT_EQ(r.code, kExitOk) << r.err;
  }
  Result after = Cli(model);
  ASSERT_EQ(after.code, kExitOk) << after.err;
  const std::string queued = SplitLines(after.err).at(0);  // "job ID queued on HOST (1 runs)"
  const std::string id = queued.substr(4, queued.find(" queued") - 4);
  Result json = Cli({"show", id, "--host", d.address(), "--output", "json"});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &doc).ok()) << json.out;
  const auto& points = doc.fields().at("roofline").list_value().values();
  ASSERT_EQ(points.size(), 1) << json.out;
  const auto& p = points[0].struct_value().fields();

  Result runs = Cli({"runs", "--host", d.address(), "--output", "json"});
  v1::QueryRunsResponse all;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(runs.out, &all).ok()) << runs.out;
  double matmul_flops = 0, copy_bytes = 0;
  const v1::Run* run = nullptr;
  for (const v1::Run& r : all.runs()) {
    if (r.config().workload() == "matmul") matmul_flops = r.result().achieved_tflops() * 1e12;
    if (r.config().workload() == "copy") copy_bytes = 2 * r.result().bandwidth_gb_per_s() * 1e9;
    if (r.job_id() == id) run = &r;
  }
  ASSERT_NE(run, nullptr);
  ASSERT_GT(run->result().memory_bytes_per_iteration(), 0);
  EXPECT_DOUBLE_EQ(p.at("peak_flops_per_s").number_value(), matmul_flops);
  EXPECT_DOUBLE_EQ(p.at("peak_bytes_per_s").number_value(), copy_bytes);
  const double intensity =
      run->result().flops_per_iteration() / run->result().memory_bytes_per_iteration();
  EXPECT_NEAR(p.at("intensity_flop_per_byte").number_value(), intensity, 1e-9 * intensity);
  EXPECT_NEAR(p.at("flops_per_s").number_value(), run->result().achieved_tflops() * 1e12,
              1e-6 * p.at("flops_per_s").number_value());
  const double roof = std::min(matmul_flops, intensity * copy_bytes);
  EXPECT_NEAR(p.at("roof_share").number_value(), p.at("flops_per_s").number_value() / roof,
              1e-9);
  if (p.at("roof_share").number_value() > 1.05) {
    // This CPU's matmul and copy did not reach what the model did: no verdict.
    EXPECT_EQ(p.at("verdict").string_value(), "");
    EXPECT_NE(p.at("why").string_value().find(
                  "beat this host's best measured matmul and copy"),
              std::string::npos);
  } else {
    const bool below_ridge = intensity < matmul_flops / copy_bytes;
    EXPECT_EQ(p.at("verdict").string_value(), below_ridge ? "memory-bound" : "compute-bound");
  }
}

// `gpubench run` hands its job to the daemon that serves the data directory
// (it never starts a second one there), and a second gpubenchd on that
// directory refuses to start, naming the first.
TEST(CliDaemon, RunUsesTheDaemonServingItsDataDirectory) {
  Daemon d(FreshDir("cli_run_served"));
  ASSERT_TRUE(d.serving()) << d.log();
  Result run = Cli(Tiny({"run", "--data-dir", d.data_dir(), "--batch", "4", "--daemon",
                         "/nonexistent/gpubenchd"}));
  ASSERT_EQ(run.code, kExitOk) << run.err;
  EXPECT_NE(run.err.find("(" + d.address() + ") takes the job"), std::string::npos) << run.err;
  Result jobs = Cli({"jobs", "--host", d.address(), "--state", "succeeded"});
  EXPECT_EQ(SplitLines(jobs.out).size(), 2u) << jobs.out;  // header + the run's job

  Daemon second(d.data_dir());
  EXPECT_FALSE(second.serving());
  EXPECT_NE(second.log().find("another gpubenchd serves " + d.data_dir() + " on " +
                              d.address()),
            std::string::npos)
      << second.log();
  Result still = Cli({"jobs", "--host", d.address()});
  EXPECT_EQ(still.code, kExitOk) << still.err;
}

// `gpubench rm` deletes ended jobs with their runs, a line each; a queued or
// running job is refused saying to cancel it first, and the other ids of
// the same call are still deleted.
TEST(CliDaemon, RmDeletesEndedJobsAndRefusesOneThatIsNot) {
  Daemon d(FreshDir("cli_rm"));
  ASSERT_TRUE(d.serving()) << d.log();
  std::vector<std::string> ids;
  for (const char* batch : {"4", "4,8", "8"}) {
    Result submitted = Cli(Tiny({"submit", "--host", d.address(), "--batch", batch}));
    ASSERT_EQ(submitted.code, kExitOk) << submitted.err;
    ids.push_back(SplitLines(submitted.out).at(0));
    ASSERT_EQ(Cli({"watch", ids.back(), "--host", d.address()}).code, kExitOk);
  }
  Result removed = Cli({"rm", ids[0], ids[1], "--host", d.address()});
  ASSERT_EQ(removed.code, kExitOk) << removed.err;
  const std::vector<std::string> lines = SplitLines(removed.out);
  ASSERT_EQ(lines.size(), 2u) << removed.out;
  EXPECT_EQ(lines[0].rfind(ids[0] + " deleted: 1 run, ", 0), 0u) << removed.out;
  EXPECT_EQ(lines[1].rfind(ids[1] + " deleted: 2 runs, ", 0), 0u) << removed.out;
  EXPECT_NE(lines[1].find(" freed"), std::string::npos) << removed.out;
  Result shown = Cli({"show", ids[0], "--host", d.address()});
  EXPECT_EQ(shown.code, kExitJobFailed);
  EXPECT_NE(shown.err.find("no such job: " + ids[0]), std::string::npos) << shown.err;
  Result runs = Cli({"runs", "--job", ids[1], "--host", d.address()});
  EXPECT_EQ(runs.code, kExitOk) << runs.err;
  EXPECT_EQ(runs.out.find("mlp"), std::string::npos) << runs.out;

  // A job that measures for a minute: queued or running when rm comes.
  const std::string spec = d.data_dir() + "/slow.json";
  std::ofstream(spec) << R"({"base": {"workload": "empty", "device": "cpu"},
    "measurement": {"min_time_ms": 60000, "max_time_ms": 60000, "max_iterations": 100000000}})";
  Result slow = Cli({"submit", spec, "--host", d.address()});
  ASSERT_EQ(slow.code, kExitOk) << slow.err;
  const std::string live = SplitLines(slow.out).at(0);
  Result refused = Cli({"rm", live, "jnosuchjob", ids[2], "--host", d.address()});
  EXPECT_EQ(refused.code, kExitJobFailed) << refused.err;
  EXPECT_NE(refused.err.find("cancel it first (gpubench cancel " + live + ")"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("no such job: jnosuchjob"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.out.rfind(ids[2] + " deleted: 1 run, ", 0), 0u) << refused.out;
  EXPECT_EQ(Cli({"rm", "--host", d.address()}).code, kExitUsage);
  EXPECT_EQ(Cli({"cancel", live, "--host", d.address()}).code, kExitOk);
}

TEST(CliDaemon, CsvAndJsonOutputsParseBack) {
  Daemon d(FreshDir("cli_formats"));
  ASSERT_TRUE(d.serving()) << d.log();
  Result done = Cli(Tiny({"submit", "--host", d.address(), "--batch", "4,8,16", "--wait"}));
  ASSERT_EQ(done.code, kExitOk) << done.err;

  Result csv = Cli({"runs", "--host", d.address(), "--workload", "mlp", "--output", "csv"});
  ASSERT_EQ(csv.code, kExitOk) << csv.err;
  std::vector<std::string> lines = SplitLines(csv.out);
  ASSERT_EQ(lines.size(), 4u) << csv.out;
  std::vector<std::string> header = absl::StrSplit(lines[0], ',');
  // CSV is data: units in the column names, numbers alone in the cells.
  const auto tput =
      std::find(header.begin(), header.end(), "throughput_samples_per_s") - header.begin();
  ASSERT_LT(static_cast<size_t>(tput), header.size()) << lines[0];
  // Cells split as a CSV reader does: a quoted cell keeps its commas (a CPU
  // run's thread count says why, with commas).
  auto split_csv = [](const std::string& line) {
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        cells.emplace_back();
      } else {
        cells.back() += c;
      }
    }
    return cells;
  };
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> cells = split_csv(lines[i]);
    ASSERT_EQ(cells.size(), header.size()) << lines[i];
    EXPECT_GT(std::stod(cells[tput]), 0) << lines[i];
  }
  Result filtered = Cli({"runs", "--host", d.address(), "--config", "batch_size=8",
                         "--output", "csv"});
  EXPECT_EQ(SplitLines(filtered.out).size(), 2u) << filtered.out;

  Result json = Cli({"runs", "--host", d.address(), "--output", "json"});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  v1::QueryRunsResponse runs;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &runs).ok()) << json.out;
  ASSERT_EQ(runs.runs_size(), 3);
  for (const auto& r : runs.runs()) EXPECT_GT(r.result().throughput_samples_per_s(), 0);

  Result markdown = Cli({"runs", "--host", d.address(), "--output", "markdown"});
  EXPECT_EQ(markdown.out.rfind("| job | # | run | config", 0), 0u) << markdown.out;
}

// A gbench export of two jobs' runs of the same two configs: each config is
// a benchmark of two repetitions (0 and 1), with our counters.
void ExpectTwoRepetitionsOfTwoConfigs(const std::string& gbench) {
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(gbench, &doc).ok()) << gbench;
  const auto& benchmarks = doc.fields().at("benchmarks").list_value().values();
  ASSERT_EQ(benchmarks.size(), 4);
  std::map<std::string, std::set<int>> reps;
  for (const auto& b : benchmarks) {
    const auto& f = b.struct_value().fields();
    EXPECT_EQ(f.at("repetitions").number_value(), 2);
    reps[f.at("name").string_value()].insert(f.at("repetition_index").number_value());
    EXPECT_GT(f.at("items_per_second").number_value(), 0);
    EXPECT_GT(f.at("p99_ms").number_value(), 0);
    EXPECT_GE(f.at("p99_ms").number_value(), f.at("p50_ms").number_value());
  }
  EXPECT_EQ(reps.size(), 2u);
  for (const auto& [name, indices] : reps) EXPECT_EQ(indices, (std::set<int>{0, 1})) << name;
}

// --output gbench is read by Google Benchmark's own compare.py (Debian's
// libbenchmark-tools): it pairs the two jobs' runs by config and reads our
// time per iteration; runs of one config across jobs are repetitions.
TEST(CliDaemon, GoogleBenchmarksCompareReadsTheGbenchExport) {
  const std::string compare_py = "/usr/share/benchmark/compare.py";
  ASSERT_TRUE(std::ifstream(compare_py).good())
      << compare_py << " is missing: deploy/test.sh installs libbenchmark-tools (and "
         "python3-scipy, which Debian's /usr/bin/python3 runs it with)";
  Daemon d(FreshDir("cli_gbench"));
  ASSERT_TRUE(d.serving()) << d.log();
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    Result r = Cli(Tiny({"submit", "--host", d.address(), "--batch", "4,8"}));
    ASSERT_EQ(r.code, kExitOk) << r.err;
    ids.push_back(SplitLines(r.out).at(0));
    ASSERT_EQ(Cli({"watch", ids.back(), "--host", d.address()}).code, kExitOk);
  }
  const std::string dir = ::testing::TempDir() + "/cli_gbench_files";
  ASSERT_TRUE(MakeDirs(dir).ok());
  std::vector<v1::Run> runs_of[2];
  for (int i = 0; i < 2; ++i) {
    Result g = Cli({"show", ids[i], "--host", d.address(), "--output", "gbench"});
    ASSERT_EQ(g.code, kExitOk) << g.err;
    std::ofstream(dir + "/" + std::to_string(i) + ".json") << g.out;
    Result j = Cli({"runs", "--job", ids[i], "--host", d.address(), "--output", "json"});
    v1::QueryRunsResponse runs;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(j.out, &runs).ok()) << j.out;
    runs_of[i].assign(runs.runs().begin(), runs.runs().end());
    ASSERT_EQ(runs_of[i].size(), 2u);
  }
  auto r = testing_support::RunCommand("/usr/bin/python3 " + compare_py + " -d " + dir +
                                       "/diff.json benchmarks " + dir + "/0.json " + dir +
                                       "/1.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(dir + "/diff.json");
  std::stringstream text;
  text << in.rdbuf();
  google::protobuf::ListValue diff;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(text.str(), &diff).ok()) << text.str();
  // One entry per config (b4, b8), plus compare.py's OVERALL_GEOMEAN.
  int matched = 0;
  for (const auto& entry : diff.values()) {
    const auto& f = entry.struct_value().fields();
    const std::string name = f.at("name").string_value();
    if (name == "OVERALL_GEOMEAN") continue;
    for (const v1::Run& a : runs_of[0]) {
      if (absl::StrReplaceAll(report::DescribeConfig(a.config()), {{" ", "/"}}) != name) continue;
      const v1::Run* b = nullptr;
      for (const v1::Run& other : runs_of[1]) {
        if (other.config().batch_size() == a.config().batch_size()) b = &other;
      }
      ASSERT_NE(b, nullptr);
      const auto& m = f.at("measurements").list_value().values(0).struct_value().fields();
      const double a_us = 1e6 * a.config().batch_size() / a.result().throughput_samples_per_s();
      const double b_us = 1e6 * b->config().batch_size() / b->result().throughput_samples_per_s();
      EXPECT_NEAR(m.at("real_time").number_value(), a_us, 1e-9 * a_us) << name;
      EXPECT_NEAR(m.at("real_time_other").number_value(), b_us, 1e-9 * b_us) << name;
      EXPECT_NEAR(m.at("time").number_value(), (b_us - a_us) / a_us, 1e-9) << name;
      EXPECT_EQ(f.at("time_unit").string_value(), "us");
      ++matched;
    }
  }
  EXPECT_EQ(matched, 2) << text.str();
  EXPECT_NE(r.output.find("mlp/infer/b8"), std::string::npos) << r.output;

  // Across both jobs, each config has two repetitions; the counters are there.
  Result all = Cli({"runs", "--host", d.address(), "--output", "gbench"});
  ASSERT_EQ(all.code, kExitOk) << all.err;
  ASSERT_NO_FATAL_FAILURE(ExpectTwoRepetitionsOfTwoConfigs(all.out));

  // Not a format for commands that print no runs.
  Result jobs = Cli({"jobs", "--host", d.address(), "--output", "gbench"});
  EXPECT_EQ(jobs.code, kExitUsage);
  EXPECT_NE(jobs.err.find("--output gbench"), std::string::npos) << jobs.err;
}

// Compiled execution needs the host's Python with torch: without it the run
// fails saying what to install, and the daemon goes on.
TEST(CliDaemon, CompiledExecutionWithoutPythonSaysWhatToInstall) {
  Daemon d(FreshDir("cli_aot_no_python"), {"--python", "/nonexistent/python3"});
  ASSERT_TRUE(d.serving()) << d.log();
  Result r = Cli(Tiny({"submit", "--host", d.address(), "--execution", "aot", "--wait",
                       "--output", "json"}));
  EXPECT_EQ(r.code, kExitJobFailed) << r.err << r.out;
  EXPECT_NE(r.out.find("cannot run /nonexistent/python3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pip install torch"), std::string::npos) << r.out;
  // Training is not compiled: refused at submit, naming the field.
  Result train = Cli({"submit", "--host", d.address(), "--workload", "mlp", "--device", "cpu",
                      "--mode", "train", "--execution", "aot"});
  EXPECT_EQ(train.code, kExitUsage) << train.err;
  EXPECT_NE(train.err.find(".execution: aot compiles inference only"), std::string::npos)
      << train.err;
}

}  // namespace
}  // namespace gpubench::client
