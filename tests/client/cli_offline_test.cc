// The CLI without a daemon: flags, help, completion, `spec`, output
// escaping and the comparison's statistics. Built with the CLI alone
// (GPUBENCH_BUILD_SERVER=OFF and no worker) as in every other build.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/compare.h"
#include "client/gbench.h"
#include "client/json_writer.h"
#include "client/output.h"
#include "common/stats.h"
#include "google/protobuf/struct.pb.h"
#include "gpubench/v1/spec.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/support/command.h"

namespace gpubench::client {
namespace {

// The CLI has no LibTorch of its own, and says where a daemon's is.
TEST(Cli, VersionFlagAndCommandSayTheSame) {
  std::ostringstream out, err, out2, err2;
  EXPECT_EQ(RunCli({"--version"}, out, err), kExitOk) << err.str();
  EXPECT_EQ(out.str().rfind("gpubench 0.1.0\n", 0), 0u) << out.str();
  EXPECT_NE(out.str().find("LibTorch: none in the CLI"), std::string::npos) << out.str();
  EXPECT_EQ(RunCli({"version"}, out2, err2), kExitOk);
  EXPECT_EQ(out2.str(), out.str());
}

// What bash offers after `gpubench WORDS<TAB>` with the generated script.
std::string Complete(const std::string& script, const std::string& words) {
  const std::string path = ::testing::TempDir() + "/gpubench_completion.bash";
  std::ofstream(path) << script;
  return testing_support::RunCommand("bash -c 'source " + path + "; COMP_WORDS=(gpubench " +
                                      words +
                                      "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _gpubench; "
                                      "echo \"${COMPREPLY[*]}\"'")
      .output;
}

// The script comes from the command table: commands, the options every
// command has, and the spec flags only where a command takes them.
TEST(Cli, CompletionOffersCommandsOptionsAndSpecFlagsWhereTheyApply) {
  std::ostringstream bash, err;
  ASSERT_EQ(RunCli({"completion", "bash"}, bash, err), kExitOk) << err.str();
  EXPECT_EQ(Complete(bash.str(), "sub"), "submit\n");
  EXPECT_EQ(Complete(bash.str(), "re"), "reference regressions report results\n");
  EXPECT_EQ(Complete(bash.str(), "submit --wor"), "--worker --workload --world-size\n");
  EXPECT_EQ(Complete(bash.str(), "hosts --wor"), "--worker\n");  // hosts takes no spec
  EXPECT_EQ(Complete(bash.str(), "jobs --hos"), "--host --host-id --host-timeout --hosts\n");
  std::ostringstream zsh, usage, usage_err;
  ASSERT_EQ(RunCli({"completion", "zsh"}, zsh, err), kExitOk);
  EXPECT_EQ(zsh.str().rfind("autoload -U +X bashcompinit && bashcompinit\n", 0), 0u);
  EXPECT_EQ(RunCli({"completion", "fish"}, usage, usage_err), kExitUsage);
  // zsh takes the script (through its bashcompinit) and registers it.
  const std::string path = ::testing::TempDir() + "/gpubench_completion.zsh";
  std::ofstream(path) << zsh.str();
  EXPECT_EQ(std::system(("zsh -c 'autoload -U +X compinit && compinit -u && source " + path +
                         " && (( $+functions[_gpubench] ))'")
                            .c_str()),
            0)
      << "zsh (Debian's zsh package) did not load the script";
}

TEST(Cli, BadFlagIsAUsageErrorNamingIt) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"run", "--precision", "fp17"}, out, err), kExitUsage);
  EXPECT_NE(err.str().find("--precision"), std::string::npos) << err.str();
  std::ostringstream out2, err2;
  EXPECT_EQ(RunCli({"run", "--batch", "0"}, out2, err2), kExitUsage);
  EXPECT_NE(err2.str().find("--batch"), std::string::npos) << err2.str();
}

// qualify --pairs: a daemon named twice would pair with itself.
TEST(Cli, QualifyPairsRefusesOneDaemonNamedTwice) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"qualify", "--pairs", "--host", "127.0.0.1:1", "--host", "x=127.0.0.1:1"},
                   out, err),
            kExitUsage);
  EXPECT_NE(err.str().find("--pairs: 127.0.0.1:1 is named twice"), std::string::npos)
      << err.str();
}

TEST(Cli, EveryCommandHasHelpWithItsUsage) {
  std::ostringstream top, top_err;
  ASSERT_EQ(RunCli({"--help"}, top, top_err), kExitOk);
  ASSERT_GE(Commands().size(), 20u);
  for (const Command& c : Commands()) {
    const std::string command = c.name;
    // Listed in gpubench --help, and its own help starts with its usage.
    EXPECT_NE(top.str().find(std::string("\n  ") + command + " "), std::string::npos)
        << command;
    std::ostringstream out, err;
    EXPECT_EQ(RunCli({command, "--help"}, out, err), kExitOk) << command;
    EXPECT_EQ(out.str().rfind(std::string("usage: gpubench ") + command, 0), 0u)
        << command << ":\n" << out.str();
    EXPECT_NE(out.str().find("example"), std::string::npos) << command << ":\n" << out.str();
  }
}

// Options and spec flags take "--name=value" and "--name value"; the
// options are Abseil flags, which belong to the process, so one call's must
// not carry over into the next.
// `gpubench workloads` lists what a spec may name, with the defaults a run
// of it gets and what applies.
TEST(Cli, WorkloadsListsEachWorkloadWithItsDefaults) {
  std::ostringstream out, err;
  ASSERT_EQ(RunCli({"workloads"}, out, err), kExitOk) << err.str();
  EXPECT_EQ(out.str().rfind("mlp:", 0), 0u);
  for (const char* name : {"resnet50:", "transformer:", "matmul:", "torchscript:",
                           "collective:", "ddp:"}) {
    EXPECT_NE(out.str().find(std::string("\n") + name), std::string::npos) << name;
  }
  std::ostringstream one, one_err;
  ASSERT_EQ(RunCli({"workloads", "transformer"}, one, one_err), kExitOk);
  EXPECT_NE(one.str().find("sequence_length=512 num_layers=6 hidden_size=512 num_heads=8"),
            std::string::npos)
      << one.str();
  EXPECT_EQ(one.str().find("mlp:"), std::string::npos);
  std::ostringstream ddp, ddp_err;
  ASSERT_EQ(RunCli({"workloads", "ddp"}, ddp, ddp_err), kExitOk);
  EXPECT_NE(ddp.str().find("applies: train; eager; cpu, cuda; world_size ranks"),
            std::string::npos)
      << ddp.str();
  std::ostringstream bad, bad_err;
  EXPECT_EQ(RunCli({"workloads", "resnet1000"}, bad, bad_err), kExitUsage);
  EXPECT_NE(bad_err.str().find("unknown workload \"resnet1000\""), std::string::npos);
}

// A model is not a black box: its layers in a line, its parameters and its
// forward FLOPs (torchvision's ResNet-18: 11.7M and 1.81 GMACs at 224 px);
// each of mlp's sizes; nothing of the kind for a kernel.
TEST(Cli, WorkloadsDescribeEachModelAndWhatItCosts) {
  std::ostringstream out, err;
  ASSERT_EQ(RunCli({"workloads", "resnet18"}, out, err), kExitOk) << err.str();
  EXPECT_NE(out.str().find("  model:   7x7 conv stem and max pool, 4 stages of 2 basic blocks"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("  cost:    11.7M parameters, 3.63 GFLOP forward a sample (at the "
                           "defaults)"),
            std::string::npos)
      << out.str();
  std::ostringstream mlp, mlp_err;
  ASSERT_EQ(RunCli({"workloads", "mlp"}, mlp, mlp_err), kExitOk);
  EXPECT_NE(mlp.str().find("small 0.03M parameters"), std::string::npos) << mlp.str();
  EXPECT_NE(mlp.str().find("large 6.7M parameters"), std::string::npos) << mlp.str();
  // A language model's named sizes, each its own shape.
  std::ostringstream gpt, gpt_err;
  ASSERT_EQ(RunCli({"workloads", "gpt"}, gpt, gpt_err), kExitOk);
  EXPECT_NE(gpt.str().find("124m 124M parameters"), std::string::npos) << gpt.str();
  EXPECT_NE(gpt.str().find("350m 355M parameters"), std::string::npos) << gpt.str();
  EXPECT_EQ(gpt.str().find("small"), std::string::npos) << gpt.str();
  std::ostringstream matmul, matmul_err;
  ASSERT_EQ(RunCli({"workloads", "matmul"}, matmul, matmul_err), kExitOk);
  EXPECT_EQ(matmul.str().find("cost:"), std::string::npos) << matmul.str();
}

// `spec` says what each run will cost before anything runs: ResNet-50
// training at batch 32 is 3 x 32 x 8.2 GFLOP a step, and its fp32 weights,
// gradients and SGD momentum weigh 12 bytes a parameter; a matmul's step is
// 2MNK; JSON stays the spec alone.
TEST(Cli, SpecEstimatesEachRunsCost) {
  std::ostringstream out, err;
  ASSERT_EQ(RunCli({"spec", "--workload", "resnet50", "--mode", "train", "--batch", "32"}, out, err),
            kExitOk)
      << err.str();
  const std::string text = out.str();
  const size_t table = text.find("estimated from the architectures");
  ASSERT_NE(table, std::string::npos) << text;
  const std::string rows = text.substr(table);
  EXPECT_NE(rows.find("25.6M"), std::string::npos) << rows;
  EXPECT_NE(rows.find("8.18 GFLOP"), std::string::npos) << rows;
  // 32 x (3 x 8.18 GFLOP less the stem's input gradient: the images need none).
  EXPECT_NE(rows.find("777.57 GFLOP"), std::string::npos) << rows;
  EXPECT_NE(rows.find("292.5 MiB"), std::string::npos) << rows;  // 25,557,032 x 12 bytes
  std::ostringstream matmul, matmul_err;
  ASSERT_EQ(RunCli({"spec", "--workload", "matmul", "--matmul-size", "1024"}, matmul, matmul_err),
            kExitOk)
      << matmul_err.str();
  EXPECT_NE(matmul.str().find("2.15 GFLOP"), std::string::npos) << matmul.str();  // 2 x 1024^3
  std::ostringstream json, json_err;
  ASSERT_EQ(RunCli({"spec", "--workload", "resnet50", "--output", "json"}, json, json_err),
            kExitOk);
  EXPECT_EQ(json.str().find("estimated"), std::string::npos);
}

TEST(Cli, FlagsTakeEitherSpellingAndDoNotCarryOverToTheNextCall) {
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"version", "--output=yaml"},
        std::vector<std::string>{"version", "--output", "yaml"}}) {
    std::ostringstream out, err;
    EXPECT_EQ(RunCli(argv, out, err), kExitUsage) << argv[1];
    EXPECT_NE(err.str().find("--output: \"yaml\""), std::string::npos) << err.str();
  }
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"version"}, out, err), kExitOk) << err.str();
  std::ostringstream spec_out, spec_err;
  EXPECT_EQ(RunCli({"spec", "--workload=resnet50", "--batch", "32,64", "--precision=fp32,bf16"},
                   spec_out, spec_err),
            kExitOk)
      << spec_err.str();
  EXPECT_NE(spec_out.str().find("4 runs"), std::string::npos) << spec_out.str();
  std::ostringstream missing_out, missing_err;
  EXPECT_EQ(RunCli({"jobs", "--since"}, missing_out, missing_err), kExitUsage);
  EXPECT_NE(missing_err.str().find("--since needs a value"), std::string::npos)
      << missing_err.str();
}

// A job's name is text: its commas are kept, not read as a list. The
// numbers that are not integers parse as numbers, and a bad one names its
// flag.
TEST(Cli, ANameKeepsItsCommasAndRealFlagsTakeNumbers) {
  std::ostringstream out, err;
  ASSERT_EQ(RunCli({"spec", "--workload", "mlp", "--name", "lab 4: fp16, a fed GPU",
                    "--learning-rate", "0.05", "--cv-threshold", "0.03"},
                   out, err),
            kExitOk)
      << err.str();
  EXPECT_NE(out.str().find("\"name\": \"lab 4: fp16, a fed GPU\""), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("\"learning_rate\": 0.05"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("\"cv_threshold\": 0.03"), std::string::npos) << out.str();
  std::ostringstream bad_out, bad_err;
  EXPECT_EQ(RunCli({"spec", "--workload", "mlp", "--learning-rate", "fast"}, bad_out, bad_err),
            kExitUsage);
  EXPECT_NE(bad_err.str().find("--learning-rate: not a number: \"fast\""), std::string::npos)
      << bad_err.str();
}

// --ddp-bucket-mb 0 (one message after backward) is kept as given, and a
// value out of range is refused as typed, naming the flag.
TEST(Cli, DdpBucketMbKeepsZeroAndRefusesWhatIsOutOfRange) {
  std::ostringstream zero_out, zero_err;
  ASSERT_EQ(RunCli({"spec", "--workload", "ddp", "--ddp-bucket-mb", "0", "--output", "json"},
                   zero_out, zero_err),
            kExitOk)
      << zero_err.str();
  EXPECT_NE(zero_out.str().find("\"ddp_bucket_mb\": 0"), std::string::npos) << zero_out.str();
  for (const char* bad : {"99999999999", "-5", "4097"}) {
    std::ostringstream bad_out, bad_err;
    EXPECT_EQ(RunCli({"spec", "--workload", "ddp", "--ddp-bucket-mb", bad}, bad_out, bad_err),
              kExitUsage)
        << bad;
    EXPECT_NE(bad_err.str().find(std::string("--ddp-bucket-mb: must be in [0, 4096], got ") + bad),
              std::string::npos)
        << bad_err.str();
  }
}

// nccl-tests' -b 8 -e 1K -f 2: "MIN:MAX" sweeps every power of two between.
TEST(Cli, CollectiveBytesRangeSweepsPowersOfTwo) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"spec", "--workload", "collective", "--collective-bytes", "8:1024",
                    "--collective-op", "all_reduce,broadcast", "--output", "json"},
                   out, err),
            kExitOk)
      << err.str();
  EXPECT_NE(err.str().find("16 runs"), std::string::npos) << err.str();  // 8 sizes x 2 ops
  std::ostringstream bad_out, bad_err;
  EXPECT_NE(RunCli({"spec", "--workload", "collective", "--collective-bytes", "64:8"}, bad_out,
                   bad_err),
            kExitOk);
  EXPECT_NE(bad_err.str().find("--collective-bytes: range 64:8"), std::string::npos)
      << bad_err.str();
}

// A switch works bare without swallowing the next argument, and still
// sweeps with on,off.
TEST(Cli, SwitchesWorkBareAndSweepWithOnOff) {
  std::ostringstream out, err;
  ASSERT_EQ(RunCli({"spec", "--check-numerics", "--channels-last", "--workload", "resnet18",
                    "--output", "json"},
                   out, err),
            kExitOk)
      << err.str();
  v1::JobSpec spec;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out.str(), &spec).ok()) << out.str();
  EXPECT_TRUE(spec.check_numerics());
  EXPECT_TRUE(spec.base().channels_last());
  EXPECT_EQ(spec.base().workload(), "resnet18");
  std::ostringstream swept, swept_err;
  ASSERT_EQ(RunCli({"spec", "--channels-last", "off,on", "--workload", "mlp"}, swept, swept_err),
            kExitOk)
      << swept_err.str();
  EXPECT_NE(swept.str().find("2 runs"), std::string::npos) << swept.str();
}

// A spec file may spell enum values as the flags do ("train", "bf16"), and
// `spec --output json` prints JSON alone, which reads back as the same spec.
TEST(Cli, SpecJsonTakesShortEnumNamesAndRoundTrips) {
  const std::string path = ::testing::TempDir() + "/short_enums.json";
  std::ofstream(path) << R"({"base": {"workload": "mlp", "mode": "train", "precision": "bf16"},
                             "sweep": {"precision": ["fp32", "bf16"]}})";
  std::ostringstream out, err;
  ASSERT_EQ(RunCli({"spec", path, "--output", "json"}, out, err), kExitOk) << err.str();
  v1::JobSpec spec;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out.str(), &spec).ok()) << out.str();
  EXPECT_EQ(spec.base().mode(), v1::MODE_TRAIN);
  EXPECT_EQ(spec.base().precision(), v1::PRECISION_BF16);
  ASSERT_EQ(spec.sweep().precision_size(), 2);
  EXPECT_EQ(spec.sweep().precision(0), v1::PRECISION_FP32);
  EXPECT_NE(err.str().find("2 runs"), std::string::npos) << err.str();
  // The printed spec, fed back, is the same spec.
  const std::string again = ::testing::TempDir() + "/short_enums_again.json";
  std::ofstream(again) << out.str();
  std::ostringstream out2, err2;
  ASSERT_EQ(RunCli({"spec", again, "--output", "json"}, out2, err2), kExitOk) << err2.str();
  EXPECT_EQ(out2.str(), out.str());
  // A value that is no enum's is still refused, naming it.
  std::ofstream(path) << R"({"base": {"workload": "mlp", "mode": "walk"}})";
  std::ostringstream bad_out, bad_err;
  EXPECT_EQ(RunCli({"spec", path}, bad_out, bad_err), kExitUsage);
  EXPECT_NE(bad_err.str().find("walk"), std::string::npos) << bad_err.str();
}

// Typos of commands, options and spec flags are named with the likely one.
// A run reporting more FLOP/s than this host's best measured matmul at its
// precision is flagged under show's table, not left as a plain figure
// (issue 44: mlp training at 137 GFLOP/s on a 105 GFLOP/s CPU).
TEST(Show, FlopsAboveTheMeasuredMatmulPeakAreFlagged) {
  auto run = [](int index, const char* workload, double tflops) {
    v1::Run r;
    r.set_index(index);
    r.set_state(v1::RUN_STATE_SUCCEEDED);
    r.mutable_config()->set_workload(workload);
    r.mutable_config()->set_device("cpu");
    r.mutable_result()->set_resolved_device("cpu");
    r.mutable_result()->set_throughput_samples_per_s(100);
    r.mutable_result()->set_achieved_tflops(tflops);
    return r;
  };
  v1::Job job;
  job.set_job_id("job-roof");
  const std::vector<v1::Run> runs = {run(0, "mlp", 0.137), run(1, "mlp", 0.05)};
  const std::vector<v1::Run> peaks = {run(9, "matmul", 0.105)};
  std::ostringstream out;
  PrintJob(job, runs, Format::kTable, out, peaks);
  EXPECT_NE(out.str().find("above the roof: run 0's 137.0 GFLOP/s is more than this host's "
                           "best measured fp32 matmul (105.0 GFLOP/s)"),
            std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find("run 1's"), std::string::npos) << out.str();
  std::ostringstream bare;
  PrintJob(job, runs, Format::kTable, bare, {});
  EXPECT_EQ(bare.str().find("above the roof"), std::string::npos) << bare.str();
}

TEST(Cli, TyposGetADidYouMean) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"sumbit"}, out, err), kExitUsage);
  EXPECT_NE(err.str().find("did you mean \"submit\""), std::string::npos) << err.str();
  std::ostringstream flag_out, flag_err;
  EXPECT_EQ(RunCli({"spec", "--worklaod", "mlp"}, flag_out, flag_err), kExitUsage);
  EXPECT_NE(flag_err.str().find("did you mean \"workload\""), std::string::npos)
      << flag_err.str();
  // A flag that is no option and no spec flag is named as a typo, never
  // taken for a spec flag wanting a value ("--wiat needs a value").
  std::ostringstream wait_out, wait_err;
  EXPECT_EQ(RunCli({"submit", "--workload", "mlp", "--wiat"}, wait_out, wait_err), kExitUsage);
  EXPECT_NE(wait_err.str().find("unknown option --wiat; did you mean \"wait\""),
            std::string::npos)
      << wait_err.str();
  // Two neighbours swapped are one typo: "shwo" is "show".
  std::ostringstream swap_out, swap_err;
  EXPECT_EQ(RunCli({"shwo"}, swap_out, swap_err), kExitUsage);
  EXPECT_NE(swap_err.str().find("did you mean \"show\""), std::string::npos) << swap_err.str();
  std::ostringstream far_out, far_err;
  EXPECT_EQ(RunCli({"frobnicate"}, far_out, far_err), kExitUsage);
  EXPECT_EQ(far_err.str().find("did you mean"), std::string::npos) << far_err.str();
}

// Which cells a spreadsheet would take for formulas, and which are numbers
// it must still read as numbers.
TEST(Output, CsvCellsThatWouldBeFormulasStartWithAQuote) {
  Table t;
  t.header = {"a"};
  for (const char* cell : {"-1.5", "+3", "-2e-3", "12", "-", "=1+1", "+1+cmd|' /C calc'!A0",
                           "-1+1", "@SUM(A1:A2)", "-inf", "\tx", "\r=1", "a=b"}) {
    t.rows.push_back({cell});
  }
  std::ostringstream out;
  PrintTable(t, Format::kCsv, out);
  EXPECT_EQ(out.str(),
            "a\n-1.5\n+3\n-2e-3\n12\n-\n\"'=1+1\"\n\"'+1+cmd|' /C calc'!A0\"\n\"'-1+1\"\n"
            "\"'@SUM(A1:A2)\"\n\"'-inf\"\n\\tx\n\\x0d=1\na=b\n");
  // A header is not Printable'd first: its own tab is caught too.
  Table h;
  h.header = {"\t=1", "-5"};
  std::ostringstream header;
  PrintTable(h, Format::kCsv, header);
  EXPECT_EQ(header.str(), "\"'\t=1\",-5\n");
}

// A table as JSON keeps its columns in order, and cells that JSON must
// escape (quotes, backslashes, control characters) parse back to what they
// were.
TEST(Output, JsonKeepsColumnOrderAndParsesBackToTheCells) {
  Table t;
  t.header = {"zeta", "alpha", "a \"quoted\" \\ name"};
  t.rows.push_back({"1", "line\nbreak\ttab\x01" "bell", "\x7f \xce\xbcs \xff\xce"});
  t.rows.push_back({"2"});  // a short row: empty cells
  std::ostringstream out;
  PrintTable(t, Format::kJson, out);
  const std::string json = out.str();
  EXPECT_LT(json.find("\"zeta\""), json.find("\"alpha\"")) << json;
  google::protobuf::ListValue rows;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &rows).ok()) << json;
  ASSERT_EQ(rows.values_size(), 2);
  const auto& first = rows.values(0).struct_value().fields();
  EXPECT_EQ(first.at("alpha").string_value(), "line\nbreak\ttab\x01" "bell");
  // UTF-8 (the micro sign) stays; bytes that are not UTF-8 are U+FFFD.
  EXPECT_EQ(first.at("a \"quoted\" \\ name").string_value(),
            "\x7f \xce\xbcs \xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(rows.values(1).struct_value().fields().at("alpha").string_value(), "");
}

// Google Benchmark's JSON, which compare.py reads: a failed run is an
// error, a run whose latency was not measured still gives valid JSON (null,
// never nan), and a name with a quote in it stays one string.
TEST(Output, GbenchIsValidJsonForFailedRunsAndMissingFigures) {
  std::vector<v1::Run> runs(2);
  runs[0].set_run_id("r\"1");
  runs[0].mutable_config()->set_workload("mlp");
  runs[0].mutable_config()->set_batch_size(8);
  runs[0].set_state(v1::RUN_STATE_SUCCEEDED);
  runs[0].mutable_result()->set_throughput_samples_per_s(800);
  runs[0].mutable_result()->set_iterations(10);
  runs[0].mutable_result()->mutable_latency()->set_p50_ms(std::nan(""));
  runs[1] = runs[0];
  runs[1].set_state(v1::RUN_STATE_OUT_OF_MEMORY);
  runs[1].set_error("CUDA out of memory\n");
  std::ostringstream out;
  PrintGbench(runs, "gpubench show j\"x", out);
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out.str(), &doc).ok()) << out.str();
  EXPECT_EQ(doc.fields().at("context").struct_value().fields().at("executable").string_value(),
            "gpubench show j\"x");
  const auto& benchmarks = doc.fields().at("benchmarks").list_value();
  ASSERT_EQ(benchmarks.values_size(), 2);
  const auto& ok = benchmarks.values(0).struct_value().fields();
  EXPECT_EQ(ok.at("gpubench_run_id").string_value(), "r\"1");
  EXPECT_DOUBLE_EQ(ok.at("real_time").number_value(), 1e6 * 8 / 800);  // us per batch
  EXPECT_EQ(ok.at("p50_ms").kind_case(), google::protobuf::Value::kNullValue);
  const auto& failed = benchmarks.values(1).struct_value().fields();
  EXPECT_TRUE(failed.at("error_occurred").bool_value());
  EXPECT_EQ(failed.at("error_message").string_value(), "CUDA out of memory\n");
  EXPECT_EQ(failed.count("real_time"), 0u);
}

// Run-level figures of n repetitions around center, lognormal noise of
// sigma (how much whole runs vary).
std::vector<double> Runs(double center, int n, double sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::lognormal_distribution<double> noise(0, sigma);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center * noise(rng));
  return v;
}

// A/A: identical jobs, 5 runs a side, runs varying by 3% (a host-bound
// case). The verdict may claim a difference in at most 5% of pairs; with 3%
// noise most pairs are "too noisy to tell", which is the honest answer.
TEST(CompareStats, IdenticalRunsAreRarelyCalledDifferent) {
  int claimed = 0, too_noisy = 0;
  for (uint32_t seed = 0; seed < 200; ++seed) {
    const Comparison c = CompareRepetitions(Runs(1, 5, 0.03, seed), Runs(1, 5, 0.03, seed + 1000), {});
    claimed += c.verdict == Verdict::kFaster || c.verdict == Verdict::kSlower;
    too_noisy += c.verdict == Verdict::kTooNoisy;
  }
  EXPECT_LE(claimed, 10);  // 5% of 200
  EXPECT_GT(too_noisy, 150);
  // Runs that vary by 0.2% (GPU-bound): the same question has an answer.
  int no_difference = 0;
  for (uint32_t seed = 0; seed < 50; ++seed) {
    const Comparison c = CompareRepetitions(Runs(1, 5, 0.002, seed), Runs(1, 5, 0.002, seed + 1000), {});
    no_difference += c.verdict == Verdict::kNoDifference;
  }
  EXPECT_GE(no_difference, 45);
}

TEST(CompareStats, APlantedSlowdownBeyondTheNoiseIsFound) {
  int found = 0;
  for (uint32_t seed = 0; seed < 50; ++seed) {
    // 3% slower where runs vary by 0.5%, and 10% slower where they vary by 3%.
    const Comparison gpu = CompareRepetitions(Runs(1, 5, 0.005, seed), Runs(1.03, 5, 0.005, seed + 1000), {});
    const Comparison host = CompareRepetitions(Runs(1, 5, 0.03, seed), Runs(1.10, 5, 0.03, seed + 1000), {});
    found += (gpu.verdict == Verdict::kSlower) + (host.verdict == Verdict::kSlower);
    EXPECT_NE(gpu.verdict, Verdict::kFaster);
    EXPECT_NE(host.verdict, Verdict::kFaster);
  }
  EXPECT_GE(found, 90);  // of 100
  const Comparison faster = CompareRepetitions(Runs(1.10, 5, 0.01, 1), Runs(1, 5, 0.01, 2), {});
  EXPECT_EQ(faster.verdict, Verdict::kFaster);
  EXPECT_NEAR(faster.speedup.value, 1.10, 0.03);
  EXPECT_GT(faster.speedup.ci95.low, 1);
  EXPECT_EQ(faster.baseline_runs, 5);
}

TEST(CompareStats, TooLittleEvidenceSaysSoInsteadOfGuessing) {
  // One run a side: however different, how much runs vary is unknown.
  const Comparison single = CompareRepetitions({1.0}, {1.5}, {});
  EXPECT_EQ(single.verdict, Verdict::kTooNoisy);
  EXPECT_NE(single.why.find("--repeat"), std::string::npos) << single.why;
  // Three a side can never reach p < 0.05 (the smallest p is 0.1).
  const Comparison three = CompareRepetitions({1.0, 1.001, 0.999}, {2.0, 2.001, 1.999}, {});
  EXPECT_EQ(three.verdict, Verdict::kTooNoisy);
  EXPECT_NE(three.why.find("can never reach"), std::string::npos) << three.why;
  // Identical values: nothing varies and nothing changed.
  const Comparison same = CompareRepetitions({2, 2, 2, 2, 2}, {2, 2, 2, 2, 2}, {});
  EXPECT_EQ(same.verdict, Verdict::kNoDifference);
  EXPECT_EQ(CompareRepetitions({}, {1, 2}, {}).verdict, Verdict::kNotComparable);
}

TEST(CompareStats, OneRunAgainstItsHistoryUsesTheHistorysNoise) {
  const std::vector<double> history = {1.000, 1.002, 0.998, 1.001, 0.999, 1.000, 1.0015};
  EXPECT_EQ(CompareRepetitions(history, {1.10}, {}).verdict, Verdict::kSlower);
  EXPECT_EQ(CompareRepetitions(history, {1.003}, {}).verdict, Verdict::kNoDifference);
  const std::vector<double> noisy = {1.0, 0.85, 1.15, 1.0, 0.9, 1.1, 0.95};
  const Comparison unsure = CompareRepetitions(noisy, {1.10}, {});
  EXPECT_EQ(unsure.verdict, Verdict::kTooNoisy);
  EXPECT_NEAR(unsure.noise, 0.104, 0.01);
}

TEST(CompareStats, MannWhitneyMatchesTheTextbook) {
  // Complete separation, 5 a side: U = 0; exactly 2 of the C(10, 5) = 252
  // orderings are as extreme, p = 0.00794 (the normal approximation's z is
  // still reported: -2.507).
  const stats::RankTest t = *stats::MannWhitneyU({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_DOUBLE_EQ(t.u, 0);
  EXPECT_TRUE(t.exact);
  EXPECT_NEAR(t.z, -2.5067, 1e-3);
  EXPECT_NEAR(t.p_value, 2.0 / 252, 1e-9);
  // U = 3 of 9 at 3 a side: P(U <= 3) = 7/20, so p = 0.7.
  EXPECT_NEAR(stats::MannWhitneyU({1, 3, 5}, {2, 4, 6})->p_value, 0.7, 1e-9);
  // Ties share ranks (the normal approximation); all equal means no evidence.
  EXPECT_DOUBLE_EQ(stats::MannWhitneyU({3, 3, 3}, {3, 3, 3})->p_value, 1);
  EXPECT_DOUBLE_EQ(stats::MannWhitneyU({1, 2, 2}, {2, 3, 4})->u, 1.0);
  EXPECT_FALSE(stats::MannWhitneyU({1, 2, 2}, {2, 3, 4})->exact);
  // Student's t: the textbook 95% points.
  EXPECT_NEAR(stats::StudentTwoSidedP(2.776, 4), 0.05, 1e-3);
  EXPECT_NEAR(stats::StudentTwoSidedP(1.96, 1e6), 0.05, 1e-3);
  EXPECT_NEAR(stats::StudentTwoSidedP(0, 7), 1, 1e-12);
}

// Four NaNs in a damaged run once made compare spin at 100% CPU in the tie
// ranking; now the statistics refuse them and the comparison says why.
TEST(CompareStats, NonFiniteFiguresAreRefusedNotRanked) {
  const double nan = std::nan("");
  std::vector<double> damaged = Runs(1, 300, 0.03, 7);
  for (int i : {3, 50, 51, 200}) damaged[i] = nan;
  auto rank = stats::MannWhitneyU(Runs(1, 300, 0.03, 8), damaged);
  EXPECT_EQ(rank.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(rank.status().message().find("candidate samples[3]"), std::string::npos)
      << rank.status();
  EXPECT_FALSE(stats::RatioOfMedians({1, 2, INFINITY}, {1, 2, 3}).ok());
  const Comparison c = CompareRepetitions(Runs(1, 5, 0.03, 8), {1, nan, 1}, {});
  EXPECT_EQ(c.verdict, Verdict::kNotComparable);
  EXPECT_NE(c.why.find("not a finite number"), std::string::npos) << c.why;
}

}  // namespace
}  // namespace gpubench::client
