// Real gpubench-worker processes running real LibTorch models on the CPU.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/spec.h"
#include "google/protobuf/util/time_util.h"
#include "launcher/cpu_cores.h"
#include "launcher/process.h"

namespace gpubench::worker {
namespace {

// progress, when set, gets the job's progress events.
std::vector<v1::Run> RunJob(const v1::JobSpec& spec, ExitInfo* exit,
                            const std::vector<std::string>& model_roots = {},
                            std::vector<v1::RunProgress>* progress = nullptr) {
  v1::WorkerRequest request;
  request.set_job_id("test");
  *request.mutable_settings() = WorkerSettingsOf(spec);
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
    if (progress != nullptr && event.has_run_progress()) progress->push_back(event.run_progress());
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

// A CPU run takes the cores the host gives the worker: by default LibTorch's
// intra-op threads are the CPUs it may use (its affinity mask, its cgroup's
// quota: this test's, which the worker inherits) less a host-input run's
// loader threads, and spec.cpu_threads overrides them. Each run says how
// many and why, and its fingerprint holds the count.
TEST(WorkerProcess, CpuRunsTakeTheCpusTheWorkerMayUseUnlessTheSpecSays) {
  const cpu_cores::UsableCpus usable = cpu_cores::UsableCpusOfThisProcess();
  v1::JobSpec spec = SmallSpec();
  spec.mutable_base()->set_mode(v1::MODE_INFER);
  spec.mutable_measurement()->set_warmup_iterations(1);
  spec.mutable_measurement()->set_min_iterations(5);
  spec.mutable_measurement()->set_min_time_ms(10);
  spec.mutable_measurement()->set_max_time_ms(3000);
  spec.mutable_measurement()->set_cv_threshold(0.5);
  spec.mutable_base()->mutable_pipeline()->set_loader_threads(1);
  spec.mutable_sweep()->add_input_source(v1::INPUT_SOURCE_DEVICE);
  spec.mutable_sweep()->add_input_source(v1::INPUT_SOURCE_HOST);
  ExitInfo exit;
  auto runs = RunJob(spec, &exit);
  ASSERT_TRUE(exit.ok()) << exit.Describe() << exit.stderr_tail;
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& run : runs) ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
  const v1::RunResult& device_input = runs[0].result();
  EXPECT_EQ(device_input.cpu_threads(), usable.count);
  EXPECT_EQ(device_input.cpu_threads_reason(),
            absl::StrCat(usable.count, ": the CPUs this worker may use (", usable.basis,
                         "), less 0 loader threads"));
  EXPECT_EQ(runs[0].fingerprint().cpu_threads(), usable.count);
  const cpu_cores::CpuThreads host = cpu_cores::CpuThreadsFor(0, 1, 1, usable);
  EXPECT_EQ(runs[1].result().cpu_threads(), host.count);
  EXPECT_EQ(runs[1].result().cpu_threads_reason(), host.reason);

  spec.clear_sweep();
  spec.set_cpu_threads(1);
  runs = RunJob(spec, &exit);
  ASSERT_TRUE(exit.ok()) << exit.Describe() << exit.stderr_tail;
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_EQ(runs[0].state(), v1::RUN_STATE_SUCCEEDED) << runs[0].error();
  EXPECT_EQ(runs[0].result().cpu_threads(), 1);
  EXPECT_EQ(runs[0].result().cpu_threads_reason(), "1: spec.cpu_threads");
  EXPECT_EQ(runs[0].fingerprint().cpu_threads(), 1);
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

// A run whose steps take about batch_size x cost_us_per_sample: the host
// pipeline's per-sample cost, inline (no loader thread), before a small
// model. The bound, not the stability rule, ends it.
v1::JobSpec SlowStepSpec(int cost_us_per_sample, int batch_size, int64_t max_time_ms) {
  v1::JobSpec spec = SmallSpec();
  spec.mutable_base()->set_mode(v1::MODE_INFER);
  spec.mutable_base()->set_batch_size(batch_size);
  spec.mutable_base()->set_input_source(v1::INPUT_SOURCE_HOST);
  spec.mutable_base()->mutable_pipeline()->set_loader_threads(0);
  spec.mutable_base()->mutable_pipeline()->set_extra_cost_us_per_sample(cost_us_per_sample);
  spec.mutable_measurement()->set_warmup_iterations(1);
  spec.mutable_measurement()->set_min_iterations(1000);
  spec.mutable_measurement()->set_min_time_ms(max_time_ms);
  spec.mutable_measurement()->set_max_time_ms(max_time_ms);
  spec.mutable_profiling()->set_enabled(true);
  return spec;
}

// The job's one run (expected to succeed) and its progress events.
v1::Run OneRun(const v1::JobSpec& spec, std::vector<v1::RunProgress>* progress) {
  ExitInfo exit;
  auto runs = RunJob(spec, &exit, {}, progress);
  EXPECT_TRUE(exit.ok()) << exit.Describe() << exit.stderr_tail;
  EXPECT_EQ(runs.size(), 1u);
  if (runs.empty()) return {};
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_SUCCEEDED) << runs[0].error();
  return runs[0];
}

int64_t RunMs(const v1::Run& run) {
  return google::protobuf::util::TimeUtil::DurationToMilliseconds(run.end_time() -
                                                                   run.start_time());
}

// max_time_ms bounds the profiled window too (issue 44: a profiled U-Net
// ran 113 s against 5 s). Steps of about 100 ms against 1.5 s, 50 profiled
// steps asked for (5 s alone): the run ends within the bound and a step,
// the margin for a loaded machine, and says how many profiled steps ran.
TEST(WorkerProcess, ProfiledRunKeepsToMaxTime) {
  v1::JobSpec spec = SlowStepSpec(100'000, 1, 1500);
  spec.mutable_profiling()->set_iterations(50);
  ExitInfo exit;
  auto runs = RunJob(spec, &exit);
  ASSERT_TRUE(exit.ok()) << exit.Describe() << exit.stderr_tail;
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_EQ(runs[0].state(), v1::RUN_STATE_SUCCEEDED) << runs[0].error();
  const v1::RunResult& r = runs[0].result();
  EXPECT_TRUE(r.stopped_at_max_time());
  EXPECT_GE(r.iterations(), 1);
  EXPECT_GE(r.profiled_iterations(), 1);
  EXPECT_LT(r.profiled_iterations(), 50);
  EXPECT_FALSE(r.profile().top_operators().empty());
  EXPECT_LT(RunMs(runs[0]), 1500 + 100 + 1500);
}

// A step of seconds reports progress too: a heartbeat at least every
// second, in each phase. Steps of about 1.5 s against 1 s: the cold start
// and one measured step pass the bound, so no profiled step starts (the
// run says why), and progress comes all along (the loop alone reports
// once, after its one window).
TEST(WorkerProcess, SlowStepsAndTheProfiledWindowReportProgress) {
  v1::JobSpec spec = SlowStepSpec(750'000, 2, 1000);
  spec.mutable_profiling()->set_iterations(5);
  std::vector<v1::RunProgress> progress;
  const std::vector<v1::Run> runs = {OneRun(spec, &progress)};
  ASSERT_EQ(runs[0].state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(runs[0].result().iterations(), 1);
  EXPECT_EQ(runs[0].result().profiled_iterations(), 0);
  EXPECT_NE(runs[0].result().profile().error().find("not profiled: max_time_ms passed"),
            std::string::npos)
      << runs[0].result().profile().error();
  EXPECT_LT(RunMs(runs[0]), 1000 + 2 * 1500 + 1000);  // the cold step, one more, a margin
  EXPECT_GE(progress.size(), 2u);
  std::map<std::string, int> phases;
  for (const v1::RunProgress& p : progress) {
    ++phases[p.phase()];
    EXPECT_GE(p.eta_ms(), 0);
  }
  EXPECT_GE(phases["warmup"] + phases["measure"], 2);
}

// Steps of microseconds (the fleet probe's launch: a 16³ product) end a
// window every few tens of microseconds; their progress comes at most
// about ten times a second all the same, not tens of thousands (which kept
// the daemon and a watching CLI a core busy beside the run).
TEST(WorkerProcess, TinyStepsReportProgressAFewTimesASecond) {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("matmul");
  spec.mutable_base()->set_device("cpu");
  spec.mutable_base()->set_precision(v1::PRECISION_FP32);
  spec.mutable_sweep()->add_matmul_size(16);
  spec.mutable_measurement()->set_warmup_iterations(3);
  spec.mutable_measurement()->set_min_time_ms(1000);
  spec.mutable_measurement()->set_max_time_ms(1000);
  spec.mutable_measurement()->set_max_iterations(100'000'000);
  std::vector<v1::RunProgress> progress;
  const v1::Run run = OneRun(spec, &progress);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_GT(run.result().iterations(), 10'000);  // thousands of windows
  EXPECT_GE(progress.size(), 2u);   // its measuring's, one a 100 ms or so
  EXPECT_LE(progress.size(), 40u);  // 1 s measured, the profiled window, a margin
  EXPECT_EQ(progress.back().phase(), "measure");
}

}  // namespace
}  // namespace gpubench::worker
