// The CLI against real daemons where the outcome depends on this build's
// LibTorch: compiled execution (AOTInductor, LibTorch 2.6+: the wheel
// flavour) and collectives and ddp on CPU ranks (Gloo: the Debian flavour).
// Both flavours run this file (GPUBENCH_TESTS=flavour); the torch-free CLI
// tests are in cli_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gpubench/v1/service.pb.h"
#include "tests/client/cli_test_util.h"
#include "tests/support/command.h"
#include "tests/support/daemon_process.h"

namespace gpubench::client {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

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

// A language model under aot: its package's prefill and decode step generate
// (TTFT and ITL measured, the attention kernel the compile chose recorded),
// and the package's logits for each token equal the Python twin's full
// forward over the sequence so far.
TEST(CliDaemon, ALanguageModelDecodesThroughItsCompiledPackage) {
  Daemon d(FreshDir("cli_aot_lm"));
  ASSERT_TRUE(d.serving()) << d.log();
  const std::vector<std::string> model = {
      "--workload", "llama", "--model-size", "custom", "--num-layers", "2", "--hidden-size",
      "64", "--num-heads", "4", "--num-kv-heads", "2", "--ffn-size", "96", "--vocab-size", "100",
      "--seq-len", "32", "--batch", "2", "--prompt-len", "6", "--new-tokens", "5"};
  std::vector<std::string> args = {"submit", "--host", d.address(), "--device", "cpu",
                                   "--mode", "infer", "--execution", "aot", "--warmup", "1",
                                   "--min-iterations", "3", "--min-time-ms", "50",
                                   "--max-time-ms", "2000", "--wait", "--output", "json"};
  args.insert(args.end(), model.begin(), model.end());
  Result r = Cli(args);
  ASSERT_EQ(r.code, kExitOk) << r.err << r.out;
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &doc).ok()) << r.out;
  const auto& run = doc.fields().at("runs").list_value().values(0).struct_value().fields();
  const auto& result = run.at("result").struct_value().fields();
  EXPECT_GT(result.at("inter_token_latency").struct_value().fields().at("p50_ms").number_value(),
            0);
  EXPECT_GT(result.at("time_to_first_token").struct_value().fields().at("p50_ms").number_value(),
            0);
  // "compiled math", or "prefill compiled X, decode compiled Y" where they differ.
  EXPECT_NE(result.at("attention_backend").string_value().find("compiled "), std::string::npos)
      << r.out;

  // The cached package against the twin: python3 -m gpubench_models.aot --verify.
  const std::string cache = d.data_dir() + "/aot-cache";
  const auto listing = testing_support::RunCommand("ls '" + cache + "'/*.pt2");
  ASSERT_EQ(listing.exit_code, 0) << listing.output;
  const std::string package = SplitLines(listing.output).at(0);
  const auto verified = testing_support::RunCommand(
      std::string("cd '") + GPUBENCH_SOURCE_DIR +
      "/worker/python' && python3 -m gpubench_models.aot --device cpu "
      "--workload llama --num-layers 2 --hidden-size 64 --num-heads 4 --num-kv-heads 2 "
      "--ffn-size 96 --vocab-size 100 --sequence-length 32 --batch 2 --prompt-length 6 "
      "--new-tokens 5 --precision fp32 --verify '" + package + "'");
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
  EXPECT_NE(verified.output.find("\"ok\": true"), std::string::npos) << verified.output;
}

// A serving run under aot: the package's prefill of whole prompts into
// their slots and its decode step of the rows in use (dynamic shapes: 1 to
// 4 prompts of 3 to 6 tokens, 1 to 4 rows) serve every request, and the
// package's logits for each token of prompts in several slots equal the
// Python twin's full forward (grouped heads: 4 query heads over 2).
TEST(CliDaemon, ALanguageModelServesThroughItsCompiledPackage) {
  Daemon d(FreshDir("cli_aot_serve"));
  ASSERT_TRUE(d.serving()) << d.log();
  Result r = Cli({"submit", "--host", d.address(), "--device", "cpu", "--mode", "serve",
                  "--execution", "aot", "--workload", "llama", "--model-size", "custom",
                  "--num-layers", "2", "--hidden-size", "64", "--num-heads", "4",
                  "--num-kv-heads", "2", "--ffn-size", "96", "--vocab-size", "100", "--seq-len",
                  "32", "--batch", "4", "--concurrency", "4", "--num-requests", "12",
                  "--input-len", "3:6", "--output-len", "5", "--max-time-ms", "60000", "--wait",
                  "--output", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err << r.out;
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &doc).ok()) << r.out;
  const auto& result = doc.fields().at("runs").list_value().values(0).struct_value().fields()
                           .at("result").struct_value().fields();
  const auto& serve = result.at("serve").struct_value().fields();
  EXPECT_EQ(serve.at("requests").number_value(), 12) << r.out;
  EXPECT_GT(serve.at("output_tokens_per_s").number_value(), 0) << r.out;
  EXPECT_NE(result.at("attention_backend").string_value().find("compiled "), std::string::npos)
      << r.out;

  const auto listing = testing_support::RunCommand("ls '" + d.data_dir() + "/aot-cache'/*.pt2");
  ASSERT_EQ(listing.exit_code, 0) << listing.output;
  const auto verified = testing_support::RunCommand(
      std::string("cd '") + GPUBENCH_SOURCE_DIR +
      "/worker/python' && python3 -m gpubench_models.aot --device cpu "
      "--workload llama --num-layers 2 --hidden-size 64 --num-heads 4 --num-kv-heads 2 "
      "--ffn-size 96 --vocab-size 100 --sequence-length 32 --batch 4 --precision fp32 "
      "--serve-input-len 6 --serve-output-len 5 --verify '" + SplitLines(listing.output).at(0) +
      "'");
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
  EXPECT_NE(verified.output.find("\"ok\": true"), std::string::npos) << verified.output;
}
#endif

}  // namespace
}  // namespace gpubench::client
