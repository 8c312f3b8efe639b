#include "client/cli.h"

#include <gtest/gtest.h>

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

// ---- Through real daemons on loopback ----

using testing_support::Daemon;
using testing_support::FreshDir;

struct Result {
  int code;
  std::string out, err;
};

Result Cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = RunCli(args, out, err);
  return {code, out.str(), err.str()};
}

// A quick CPU job's spec flags.
std::vector<std::string> Tiny(std::vector<std::string> args) {
  for (const char* a : {"--workload", "mlp", "--device", "cpu", "--mode", "infer",
                        "--warmup", "2", "--min-iterations", "10", "--min-time-ms", "50",
                        "--max-time-ms", "1500"}) {
    args.push_back(a);
  }
  return args;
}

std::vector<std::string> SplitLines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

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

#ifdef GPUBENCH_TEST_GLOO
// A collective and ddp on one and two CPU ranks (Gloo): show prints
// nccl-tests' figures and the scaling efficiency, and its JSON carries them.
TEST(CliDaemon, ShowGivesCollectiveBandwidthAndDdpScaling) {
  Daemon d(FreshDir("cli_distributed"));
  ASSERT_TRUE(d.serving()) << d.log();
  Result submitted = Cli({"submit", "--host", d.address(), "--workload", "collective,ddp",
                          "--ddp-model", "mlp", "--world-size", "1,2", "--device", "cpu",
                          "--collective-bytes", "65536", "--batch", "16", "--warmup", "2",
                          "--min-iterations", "10", "--min-time-ms", "50", "--max-time-ms",
                          "1000"});
  ASSERT_EQ(submitted.code, kExitOk) << submitted.err;
  const std::string id = SplitLines(submitted.out).at(0);
  Result watched = Cli({"watch", id, "--host", d.address()});
  ASSERT_EQ(watched.code, kExitOk) << watched.err << watched.out;
  Result text = Cli({"show", "--host", d.address(), id});
  ASSERT_EQ(text.code, kExitOk) << text.err;
  EXPECT_NE(text.out.find("collectives (rank 0's time per operation"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("data-parallel training (samples/s of all ranks"), std::string::npos)
      << text.out;
  Result json = Cli({"show", "--host", d.address(), id, "--output", "json"});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &parsed).ok()) << json.out;
  const auto& rows = parsed.fields().at("distributed").list_value().values();
  ASSERT_EQ(rows.size(), 4);
  std::map<std::pair<std::string, int>, const google::protobuf::Struct*> by;
  for (const auto& row : rows) {
    const auto& f = row.struct_value().fields();
    by[{f.at("workload").string_value(), static_cast<int>(f.at("world_size").number_value())}] =
        &row.struct_value();
  }
  const auto& two = by.at({"collective", 2})->fields();
  EXPECT_EQ(two.at("bytes").number_value(), 65536);
  EXPECT_GT(two.at("time_us").number_value(), 0);
  // all-reduce on 2 ranks: busbw = algbw x 2(K-1)/K = algbw.
  EXPECT_NEAR(two.at("bus_bandwidth_gb_per_s").number_value(),
              two.at("algorithm_bandwidth_gb_per_s").number_value(), 1e-9);
  // One rank moves nothing: a note, no bandwidth (bytes over a near-empty
  // call read as TB/s).
  const auto& one = by.at({"collective", 1})->fields();
  EXPECT_EQ(one.at("note").string_value(), "one rank: nothing moved");
  EXPECT_EQ(one.count("algorithm_bandwidth_gb_per_s"), 0u);
  EXPECT_EQ(one.count("bus_bandwidth_gb_per_s"), 0u);
  EXPECT_NE(text.out.find("one rank: nothing moved between devices"), std::string::npos)
      << text.out;
  const double t1 = by.at({"ddp", 1})->fields().at("throughput_samples_per_s").number_value();
  const auto& ddp2 = by.at({"ddp", 2})->fields();
  EXPECT_NEAR(ddp2.at("scaling_efficiency").number_value(),
              ddp2.at("throughput_samples_per_s").number_value() / (2 * t1), 1e-9);
  EXPECT_EQ(by.at({"ddp", 1})->fields().at("scaling_efficiency").number_value(), 1);
}
#endif  // GPUBENCH_TEST_GLOO

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
    EXPECT_NE(p.at("why").string_value().find("beat this host's measured peaks"),
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
  const auto tput = std::find(header.begin(), header.end(), "samples/s") - header.begin();
  ASSERT_LT(static_cast<size_t>(tput), header.size()) << lines[0];
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> cells = absl::StrSplit(lines[i], ',');
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
  EXPECT_EQ(markdown.out.rfind("| job | # | config", 0), 0u) << markdown.out;
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
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(all.out, &doc).ok()) << all.out;
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

#ifdef GPUBENCH_TEST_AOT
// --execution aot on CPU (AOTInductor compiles for CPU too): the first job
// compiles the mlp's Python twin and measures the package; a second job with
// the same config finds it in the cache and compiles nothing.
TEST(CliDaemon, CompiledExecutionCompilesOnceAndTheSecondJobUsesTheCache) {
  // A gpubench_models package planted in the folder the daemon starts in:
  // the compiler imports the project's own by its absolute path, never one
  // from the current folder.
  const std::string planted = FreshDir("cli_aot_cwd");
  ASSERT_EQ(std::system(("mkdir -p " + planted + "/gpubench_models && touch " + planted +
                         "/gpubench_models/__init__.py")
                            .c_str()),
            0);
  std::ofstream(planted + "/gpubench_models/aot.py")
      << "open(" << '"' << planted << "/imported" << '"' << ", 'w').write('x')\n";
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(chdir(planted.c_str()), 0);
  Daemon d(FreshDir("cli_aot"));
  ASSERT_EQ(chdir(cwd), 0);
  ASSERT_TRUE(d.serving()) << d.log();
  std::vector<v1::Run> runs;
  for (int job = 0; job < 2; ++job) {
    Result r = Cli(Tiny({"submit", "--host", d.address(), "--execution", "aot", "--batch", "8",
                         "--wait", "--output", "json"}));
    ASSERT_EQ(r.code, kExitOk) << r.err << r.out;
    google::protobuf::Struct doc;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &doc).ok()) << r.out;
    std::string run_json;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(
                    doc.fields().at("runs").list_value().values(0), &run_json)
                    .ok());
    v1::Run run;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run_json, &run).ok()) << run_json;
    runs.push_back(run);
  }
  for (const v1::Run& run : runs) {
    EXPECT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
    EXPECT_GT(run.result().throughput_samples_per_s(), 0);
    EXPECT_EQ(run.result().parameter_count(), 30840);  // the C++ twin's count
  }
  EXPECT_FALSE(runs[0].result().compile_cached());
  EXPECT_GT(runs[0].result().compile_ms(), 100);
  EXPECT_FALSE(std::ifstream(planted + "/imported").good());
  EXPECT_TRUE(runs[1].result().compile_cached());
  EXPECT_EQ(runs[1].result().compile_ms(), 0);
  Result shown = Cli({"show", runs[1].job_id(), "--host", d.address()});
  EXPECT_NE(shown.out.find("mlp infer b8 aot cpu"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("compiled package cached"), std::string::npos) << shown.out;

  // A model that torch.export cannot trace (bilstm's bidirectional LSTM in
  // torch 2.11) fails its run with that reason, and nothing is cached.
  Result lstm = Cli({"submit", "--host", d.address(), "--workload", "bilstm", "--device", "cpu",
                     "--mode", "infer", "--batch", "2", "--seq-len", "8", "--execution", "aot",
                     "--wait", "--output", "json"});
  EXPECT_EQ(lstm.code, kExitJobFailed) << lstm.err << lstm.out;
  EXPECT_NE(lstm.out.find("execution aot: compiling bilstm failed (exit 2): bilstm does not "
                          "export (torch.export, torch 2.11"),
            std::string::npos)
      << lstm.out;
}
#endif

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
// given history verdict; returns its id.
std::string PlantRun(const Daemon& d, double ms, int n, uint32_t seed,
                     const std::string& schedule_id = "",
                     v1::Verdict verdict = v1::VERDICT_UNSPECIFIED, int days_ago = 0,
                     bool contended = false) {
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
  for (uint32_t night = 0; night < 5; ++night) {
    PlantRun(d, 1.0, 200, night, "snightly", v1::VERDICT_UNSPECIFIED, 6 - night);
  }
  const std::string last = PlantRun(d, 1.1, 200, 99, "snightly", v1::VERDICT_REGRESSED);
  Result history = Cli({"compare", last, "--history", "--host", d.address()});
  EXPECT_EQ(history.code, kExitRegression) << history.err << history.out;
  EXPECT_NE(history.out.find("last 5 runs"), std::string::npos) << history.out;
  EXPECT_NE(history.out.find("slower"), std::string::npos) << history.out;
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

  Result flagged = Cli({"regressions", "--since", "12h", "--host", d.address(), "--host",
                        quiet.address()});
  EXPECT_EQ(flagged.code, kExitRegression) << flagged.err;
  EXPECT_NE(flagged.out.find(last), std::string::npos) << flagged.out;
  EXPECT_NE(flagged.out.find("regressed"), std::string::npos) << flagged.out;
  Result none = Cli({"regressions", "--host", quiet.address()});
  EXPECT_EQ(none.code, kExitOk) << none.err;
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
  const std::string fleet = dir + "/fleet.json";
  std::ofstream(fleet) << R"({"hosts": [{"name": "open", "address": ")" << open.address()
                       << R"("}, {"name": "locked", "address": ")" << locked.address()
                       << R"("}, {"name": "gone", "address": "127.0.0.1:1"}]})";
  setenv("GPUBENCH_FLEET", fleet.c_str(), 1);
  unsetenv("GPUBENCH_HOST");
  Result table = Cli({"hosts"});
  Result json = Cli({"hosts", "--output", "json"});
  unsetenv("GPUBENCH_FLEET");
  EXPECT_EQ(table.code, kExitAuth) << table.err;
  std::vector<std::string> lines = SplitLines(table.out);
  ASSERT_GE(lines.size(), 3u) << table.out;
  EXPECT_EQ(lines[1].rfind("hostname", 0), 0u) << table.out;
  EXPECT_NE(lines[1].find("refused: "), std::string::npos) << table.out;
  EXPECT_NE(lines[1].find("unreachable"), std::string::npos) << table.out;  // gone
  EXPECT_EQ(lines[1].find("unreachable"), lines[1].rfind("unreachable")) << table.out;
  const auto confinement =
      std::find_if(lines.begin(), lines.end(),
                   [](const std::string& l) { return l.rfind("worker confinement", 0) == 0; });
  ASSERT_NE(confinement, lines.end()) << table.out;
  EXPECT_EQ(json.code, kExitAuth) << json.err;
  google::protobuf::ListValue hosts;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &hosts).ok()) << json.out;
  ASSERT_EQ(hosts.values_size(), 3);
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
  EXPECT_NE(again.err.find("model "), std::string::npos) << again.err;

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
