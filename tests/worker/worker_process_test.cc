// Real gpubench-worker processes running real LibTorch models on the CPU.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "common/spec.h"
#include "launcher/process.h"

namespace gpubench::worker {
namespace {

std::vector<v1::Run> RunJob(const v1::JobSpec& spec, ExitInfo* exit,
                            const std::vector<std::string>& model_roots = {}) {
  v1::WorkerRequest request;
  request.set_job_id("test");
  *request.mutable_spec() = spec;
  // The daemon's part: the plan's runs, each with its index.
  auto configs = ExpandSweep(spec);
  EXPECT_TRUE(configs.ok()) << configs.status();
  for (size_t i = 0; configs.ok() && i < configs->size(); ++i) {
    v1::PlannedRun* run = request.add_runs();
    run->set_index(static_cast<int>(i));
    *run->mutable_config() = (*configs)[i];
  }
  request.set_job_run_count(request.runs_size());
  for (const auto& root : model_roots) request.add_model_roots(root);
  auto process = WorkerProcess::Start(GPUBENCH_WORKER_PATH, request);
  EXPECT_TRUE(process.ok()) << process.status();
  std::vector<v1::Run> runs;
  v1::WorkerEvent event;
  while (true) {
    auto got = (*process)->Next(&event);
    if (!got.ok() || !*got) break;
    if (event.has_run_finished()) runs.push_back(event.run_finished().run());
  }
  *exit = (*process)->Wait();
  return runs;
}

v1::JobSpec SmallSpec() {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("mlp");
  spec.mutable_base()->set_device("cpu");
  spec.mutable_base()->set_batch_size(16);
  spec.mutable_measurement()->set_warmup_iterations(3);
  spec.mutable_measurement()->set_min_iterations(30);
  spec.mutable_measurement()->set_min_time_ms(100);
  // Only a bound: a worker whose LibTorch pages come from disk (the first
  // after a cold page cache: 19 s seen for the wheel's) still measures its
  // 30 iterations.
  spec.mutable_measurement()->set_max_time_ms(60000);
  return spec;
}

TEST(WorkerProcess, TrainAndInferGiveSaneFigures) {
  v1::JobSpec spec = SmallSpec();
  spec.mutable_sweep()->add_mode(v1::MODE_TRAIN);
  spec.mutable_sweep()->add_mode(v1::MODE_INFER);
  spec.mutable_base()->set_optimizer(v1::OPTIMIZER_ADAMW);
  spec.mutable_base()->set_learning_rate(0.003);
  ExitInfo exit;
  auto runs = RunJob(spec, &exit);
  ASSERT_TRUE(exit.ok()) << exit.Describe() << exit.stderr_tail;
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& run : runs) {
    ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
    const auto& r = run.result();
    EXPECT_GT(r.throughput_samples_per_s(), 0);
    EXPECT_LE(r.latency().min_ms(), r.latency().p50_ms());
    EXPECT_LE(r.latency().p50_ms(), r.latency().p90_ms());
    EXPECT_LE(r.latency().p90_ms(), r.latency().p95_ms());
    EXPECT_LE(r.latency().p95_ms(), r.latency().p99_ms());
    EXPECT_LE(r.latency().p99_ms(), r.latency().max_ms());
    EXPECT_GE(r.iterations(), 30);
    EXPECT_EQ(run.samples().device_ms_size(), r.iterations());
    EXPECT_EQ(r.resolved_device(), "cpu");
    EXPECT_NEAR(r.parameter_count(), 30840, 100);
    EXPECT_LE(r.throughput_ci_low(), r.throughput_samples_per_s());
    EXPECT_GE(r.throughput_ci_high(), r.throughput_samples_per_s());
  }
  EXPECT_LT(runs[0].result().last_loss(), runs[0].result().first_loss());
}

TEST(WorkerProcess, OutOfMemorySkipsLargerBatches) {
  v1::JobSpec spec = SmallSpec();
  spec.mutable_base()->set_mode(v1::MODE_INFER);
  for (int b : {8, 64, 128}) spec.mutable_sweep()->add_batch_size(b);
  // 3x32x32 fp32 is 12288 bytes a sample: 8 fit, 64 do not.
  setenv("GPUBENCH_INJECT_OOM_ABOVE_BYTES", "200000", 1);
  ExitInfo exit;
  auto runs = RunJob(spec, &exit);
  unsetenv("GPUBENCH_INJECT_OOM_ABOVE_BYTES");
  ASSERT_TRUE(exit.ok()) << exit.stderr_tail;
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(runs[1].state(), v1::RUN_STATE_OUT_OF_MEMORY);
  EXPECT_NE(runs[1].error().find("out of memory"), std::string::npos);
  EXPECT_EQ(runs[2].state(), v1::RUN_STATE_SKIPPED_AFTER_OOM);
}

TEST(WorkerProcess, ModelErrorFailsTheRunNotTheProcess) {
  v1::JobSpec spec = SmallSpec();
  spec.mutable_base()->set_workload("torchscript");
  spec.mutable_base()->mutable_params()->set_model_path("/nonexistent/model.pt");
  auto* in = spec.mutable_base()->mutable_params()->add_inputs();
  in->add_shape(1);
  in->add_shape(8);
  ExitInfo exit;
  auto runs = RunJob(spec, &exit);
  ASSERT_TRUE(exit.ok()) << exit.stderr_tail;
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_FAILED);
  EXPECT_FALSE(runs[0].error().empty());
}

TEST(WorkerProcess, HostPipelineMoreLoadersWaitLess) {
  v1::JobSpec spec = SmallSpec();
  spec.mutable_base()->set_input_source(v1::INPUT_SOURCE_HOST);
  spec.mutable_base()->set_mode(v1::MODE_INFER);
  // A step with real compute (about 0.8 GFLOP) fed by a loader that costs
  // 32 ms a batch: inline loading waits most of each step, while 4 loaders
  // keep a queue ready even when they share two busy cores with the step.
  spec.mutable_base()->mutable_params()->set_model_size("large");
  spec.mutable_base()->mutable_params()->set_image_size(64);
  spec.mutable_base()->mutable_pipeline()->set_extra_cost_us_per_sample(2000);
  spec.mutable_base()->mutable_pipeline()->set_prefetch_depth(4);
  spec.mutable_sweep()->add_loader_threads(0);
  spec.mutable_sweep()->add_loader_threads(4);
  ExitInfo exit;
  auto runs = RunJob(spec, &exit);
  ASSERT_TRUE(exit.ok()) << exit.stderr_tail;
  ASSERT_EQ(runs.size(), 2u);
  ASSERT_EQ(runs[0].state(), v1::RUN_STATE_SUCCEEDED) << runs[0].error();
  ASSERT_EQ(runs[1].state(), v1::RUN_STATE_SUCCEEDED) << runs[1].error();
  const v1::RunResult& inline_loading = runs[0].result();
  const v1::RunResult& loaders = runs[1].result();
  EXPECT_GT(inline_loading.data_wait_share(), 0.3);
  EXPECT_LT(loaders.data_wait_share(), inline_loading.data_wait_share());
  // What the user sees: more samples a second.
  EXPECT_GT(loaders.throughput_samples_per_s(), inline_loading.throughput_samples_per_s())
      << "wait share inline " << inline_loading.data_wait_share() << ", 4 loaders "
      << loaders.data_wait_share();
}

// The worker checks a model path against its roots itself, right before the
// load: a request that skipped the daemon's check still cannot read outside.
TEST(WorkerProcess, ModelPathOutsideTheRootsFailsTheRunUnread) {
  const std::string root = ::testing::TempDir() + "/gpubench_worker_root";
  std::system(("rm -rf '" + root + "' && mkdir -p '" + root + "'").c_str());
  std::ofstream(root + "/garbage.pt") << "not a model";
  ASSERT_EQ(symlink("/etc/passwd", (root + "/escape.pt").c_str()), 0);
  v1::JobSpec spec = SmallSpec();
  spec.mutable_base()->set_workload("torchscript");
  auto* in = spec.mutable_base()->mutable_params()->add_inputs();
  in->add_shape(1);
  in->add_shape(8);
  for (const std::string& path : {root + "/escape.pt", root + "/../gpubench_worker_root/x",
                                  std::string("/etc/passwd")}) {
    spec.mutable_base()->mutable_params()->set_model_path(path);
    ExitInfo exit;
    auto runs = RunJob(spec, &exit, {root});
    ASSERT_TRUE(exit.ok()) << exit.stderr_tail;
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].state(), v1::RUN_STATE_FAILED);
    EXPECT_NE(runs[0].error().find("not a model file under an allowed model root"),
              std::string::npos)
        << path << ": " << runs[0].error();
  }
  // Inside the root the file reaches the loader, which rejects it.
  spec.mutable_base()->mutable_params()->set_model_path(root + "/garbage.pt");
  ExitInfo exit;
  auto runs = RunJob(spec, &exit, {root});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(runs[0].error().find("model root"), std::string::npos) << runs[0].error();
}

// The memory a worker is held to includes what its children hold (the
// compiler that execution aot runs): a stand-in worker whose child holds
// 256 MiB is seen at that size.
TEST(WorkerProcess, ResidentMemoryCountsTheWorkersChildren) {
  const std::string script = ::testing::TempDir() + "/worker_with_child.sh";
  // The child lets go of the worker's pipes and ends on its own soon after.
  std::ofstream(script) << "#!/bin/sh\n"
                           "python3 -c 'import time; b = b\"x\" * (256 << 20); "
                           "time.sleep(8)' </dev/null >/dev/null 2>&1 &\n"
                           "wait\n";
  ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  auto process = WorkerProcess::Start(script, v1::WorkerRequest());
  ASSERT_TRUE(process.ok()) << process.status();
  int64_t rss = 0;
  for (int i = 0; i < 100 && rss < (int64_t{256} << 20); ++i) {
    usleep(100 * 1000);
    rss = (*process)->RssBytes();
  }
  EXPECT_GE(rss, int64_t{256} << 20);
  (*process)->Kill();
  (*process)->Wait();
}

}  // namespace
}  // namespace gpubench::worker
