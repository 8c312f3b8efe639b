#include "report/report.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/spec.h"
#include "report/format.h"
#include "report/roofline.h"
#include "report/speedup.h"
#include "tests/report/report_fixtures.h"

namespace gpubench::report {
namespace {

using fixtures::Count;
using fixtures::DeviceSweepJob;
using fixtures::PipelineJob;
using fixtures::RooflineJob;
using fixtures::SucceededRun;
using fixtures::SweepJob;

// ---------------------------------------------------------------- HTML text

TEST(Report, HoldsEveryPlotTheDataSupports) {
  const std::string html = RenderReport({SweepJob(), PipelineJob()}, "nightly");
  // Sweep: throughput, latency, memory, device speedup, optimised speedup.
  // Pipeline: throughput and data wait against loader threads, one operator
  // chart. Nothing else is an <svg>.
  EXPECT_EQ(Count(html, "<svg"), 8);
  for (const char* title :
       {"Throughput vs batch size (bars: 95% interval)", "Latency (p50, p95) vs batch size",
        "Peak memory allocated vs batch size", "Speedup by device",
        "Optimised vs baseline", "Throughput vs loader threads",
        "Data-wait share vs loader threads", "Top operators"}) {
    EXPECT_NE(html.find(title), std::string::npos) << title;
  }
  // The legend names the precisions, the device bar names both devices, the
  // optimised bars name what changed.
  EXPECT_NE(html.find(">cuda:0, fp16<"), std::string::npos);
  EXPECT_NE(html.find("cuda:0 vs cpu"), std::string::npos);
  EXPECT_NE(html.find("fp16 \u00b7 cuda:0, batch 256"), std::string::npos);
  // fp16 runs 1.9x as fast as fp32 at every batch size.
  EXPECT_NE(html.find("1.90\u00d7"), std::string::npos);
}

// A sweep over workloads whose throughputs are 30x and more apart: on a
// linear axis the slow one reads as zero, so the chart goes logarithmic.
TEST(Report, ThroughputOfWorkloadsFarApartIsOnALogAxis) {
  ReportJob job = SweepJob();
  job.runs.clear();
  int index = 0;
  for (const char* workload : {"mlp", "resnet50"}) {
    v1::RunConfig c;
    c.set_workload(workload);
    c.set_mode(v1::MODE_TRAIN);
    c.set_device("cuda:0");
    for (int batch = 16; batch <= 256; batch *= 2) {
      c.set_batch_size(batch);
      const double rate = std::string(workload) == "mlp" ? 120000.0 : 900.0;
      job.runs.push_back(SucceededRun(index++, c, rate * batch / (batch + 20.0)));
    }
  }
  const std::string html = RenderReport({job}, "workloads");
  const size_t chart = html.find("Throughput vs batch size");
  ASSERT_NE(chart, std::string::npos);
  const std::string svg = html.substr(chart, html.find("</svg>", chart) - chart);
  EXPECT_NE(svg.find("samples/s (log scale)"), std::string::npos) << svg;
  // The same chart of one workload keeps its linear axis.
  ReportJob one = job;
  one.runs.resize(5);
  const std::string linear = RenderReport({one}, "one workload");
  EXPECT_EQ(linear.find("samples/s (log scale)"), std::string::npos);
  EXPECT_NE(linear.find("Throughput vs batch size"), std::string::npos);
}

// A distributed job: all-reduce on 2 ranks over three sizes, and ddp on 1
// and 2 ranks. The report draws nccl-tests' bus bandwidth curve (log bytes),
// the time per operation, and ddp's throughput beside the ideal 2 x T_1.
TEST(Report, DistributedRunsGetBusBandwidthAndScalingCharts) {
  ReportJob job = SweepJob();
  job.runs.clear();
  int index = 0;
  v1::RunConfig c;
  c.set_workload("collective");
  c.set_device("cuda");
  c.set_world_size(2);
  c.mutable_params()->set_collective_op(v1::COLLECTIVE_OP_ALL_REDUCE);
  for (int64_t bytes : {int64_t{1} << 10, int64_t{1} << 20, int64_t{1} << 30}) {
    c.mutable_params()->set_collective_bytes(bytes);
    v1::Run run = SucceededRun(index++, c, 1e9 / (20e3 + bytes / 100.0));  // ops/s
    run.mutable_result()->set_algorithm_bandwidth_gb_per_s(
        bytes * run.result().throughput_samples_per_s() / 1e9);
    run.mutable_result()->set_bus_bandwidth_gb_per_s(run.result().algorithm_bandwidth_gb_per_s());
    job.runs.push_back(run);
  }
  v1::RunConfig d;
  d.set_workload("ddp");
  d.set_device("cuda");
  d.set_mode(v1::MODE_TRAIN);
  d.set_batch_size(256);
  d.mutable_params()->set_ddp_model("resnet50");
  for (int k : {1, 2}) {
    d.set_world_size(k);
    job.runs.push_back(SucceededRun(index++, d, k == 1 ? 4000 : 7600));
  }
  const std::string html = RenderReport({job}, "distributed");
  const size_t bus = html.find("Bus bandwidth vs message size");
  ASSERT_NE(bus, std::string::npos) << html;
  const std::string svg = html.substr(bus, html.find("</svg>", bus) - bus);
  EXPECT_NE(svg.find("collective all_reduce"), std::string::npos) << svg;
  EXPECT_NE(html.find("Time per operation vs message size"), std::string::npos);
  const size_t scaling = html.find("Data-parallel throughput vs ranks");
  ASSERT_NE(scaling, std::string::npos);
  const std::string ddp = html.substr(scaling, html.find("</svg>", scaling) - scaling);
  EXPECT_NE(ddp.find("ideal"), std::string::npos) << ddp;
  EXPECT_NE(ddp.find("resnet50"), std::string::npos) << ddp;
}

// One rank moves nothing between devices: its collective gets the time per
// operation and no bandwidth chart (the probe saw 289 TB/s for 4 GiB).
TEST(Report, AOneRankCollectiveHasNoBandwidth) {
  ReportJob job = SweepJob();
  job.runs.clear();
  v1::RunConfig c;
  c.set_workload("collective");
  c.set_device("cuda");
  c.set_world_size(1);
  c.mutable_params()->set_collective_op(v1::COLLECTIVE_OP_ALL_REDUCE);
  int index = 0;
  for (int64_t bytes : {int64_t{1} << 20, int64_t{4} << 30}) {
    c.mutable_params()->set_collective_bytes(bytes);
    v1::Run run = SucceededRun(index++, c, 1e5);
    run.mutable_result()->set_algorithm_bandwidth_gb_per_s(bytes * 1e5 / 1e9);
    job.runs.push_back(run);
  }
  const std::string html = RenderReport({job}, "one rank");
  EXPECT_EQ(html.find("Bus bandwidth vs message size"), std::string::npos) << html;
  EXPECT_NE(html.find("Time per operation vs message size"), std::string::npos) << html;
}


TEST(Report, DeviceSweepGivesTheSpeedupWithItsIntervalAndCategories) {
  const ReportJob job = DeviceSweepJob();
  std::vector<const v1::Run*> runs;
  for (const v1::Run& r : job.runs) runs.push_back(&r);
  const auto views = DeviceSpeedups(runs, job.job.spec().profiling().iterations());
  ASSERT_EQ(views.size(), 1u);
  const DeviceSpeedup& v = views[0];
  EXPECT_EQ(v.config, "unet train b16");
  ASSERT_EQ(v.sides.size(), 2u);
  EXPECT_EQ(v.sides[0].device, "cpu");
  EXPECT_EQ(v.sides[1].device, "cuda:0");
  EXPECT_DOUBLE_EQ(v.sides[1].speedup, 20);
  // One run a side: compare's rule tells nothing and gives no interval,
  // however large the ratio.
  EXPECT_EQ(v.sides[1].vs_baseline.verdict, verdict::Verdict::kTooNoisy);
  EXPECT_EQ(v.sides[1].speedup_low, 0);
  EXPECT_EQ(v.sides[1].speedup_high, 0);
  // 4 profiled steps of 16 samples: convolution 6250 us a sample on the
  // CPU against 125 on the GPU (50x), elementwise 625 against 62.5 (10x).
  ASSERT_EQ(v.categories.size(), 2u);
  EXPECT_EQ(v.categories[0].category, "convolution");
  EXPECT_DOUBLE_EQ(v.categories[0].us_per_sample[0], 6250);
  EXPECT_DOUBLE_EQ(v.categories[0].us_per_sample[1], 125);
  EXPECT_DOUBLE_EQ(v.categories[1].us_per_sample[1], 62.5);

  const std::string html = RenderReport({job}, "device sweep");
  EXPECT_NE(html.find("unet train b16 \u00b7 cuda:0 vs cpu"), std::string::npos);
  EXPECT_NE(html.find("20.00\u00d7"), std::string::npos);
  EXPECT_NE(html.find("1 vs 1 run: too noisy to tell (one run on a side"), std::string::npos)
      << html;
  EXPECT_NE(html.find("self time per sample by operator category"), std::string::npos);
  EXPECT_NE(html.find("50.00\u00d7"), std::string::npos);
  EXPECT_NE(html.find("10.00\u00d7"), std::string::npos);
  // One device alone is no comparison.
  std::vector<const v1::Run*> one = {runs[0]};
  EXPECT_TRUE(DeviceSpeedups(one, 4).empty());
}


TEST(Report, RooflinePlacesProfiledRunsAgainstTheHostsPeaks) {
  const ReportJob job = RooflineJob();
  const std::vector<const v1::Run*> runs = RunPointers(job.runs);
  const auto points = Roofline(runs, PeaksOf(runs, job.peak_runs));
  ASSERT_EQ(points.size(), 2u);
  EXPECT_DOUBLE_EQ(points[0].flops_per_s, 6e13);
  EXPECT_DOUBLE_EQ(points[0].bytes_per_s, 1e12);
  EXPECT_DOUBLE_EQ(points[0].intensity, 60);
  EXPECT_DOUBLE_EQ(points[0].peak_flops_per_s, 2e15);
  EXPECT_DOUBLE_EQ(points[0].peak_bytes_per_s, 3e12);
  EXPECT_EQ(points[0].verdict, "memory-bound");
  EXPECT_DOUBLE_EQ(points[0].roof_share, 6e13 / (60 * 3e12));
  EXPECT_EQ(points[1].verdict, "launch/host-bound");
  // Without the host's peaks: figures, and no verdict from a ridge.
  EXPECT_EQ(Roofline(runs, PeaksOf(runs, {}))[0].verdict, "");

  const std::string html = RenderReport({job}, "roofline");
  EXPECT_NE(html.find("Roofline"), std::string::npos);
  EXPECT_NE(html.find("cuda:0 peak 2000.0 TFLOP/s, 3.00 TB/s"), std::string::npos) << html;
  EXPECT_NE(html.find("<b>memory-bound</b>, 60.0 FLOP/B below the ridge at 666.7"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<b>launch/host-bound</b>, the GPU ran kernels 20% of each iteration"),
            std::string::npos);
}

// A GPU's datasheet peak, as its runs recorded it, is a second compute roof
// on the measured bandwidth, at the placed runs' precision only.
TEST(Report, RooflineDrawsTheDatasheetRoofOfTheRunsPrecision) {
  ReportJob job = RooflineJob();
  job.peak_runs[0].mutable_result()->set_datasheet_peak_tflops(989.4);  // fp16, H100 SXM
  v1::Run fp8 = job.peak_runs[0];
  fp8.mutable_config()->set_precision(v1::PRECISION_FP8);
  fp8.mutable_result()->set_datasheet_peak_tflops(1978.9);
  job.peak_runs.push_back(fp8);
  const std::vector<const v1::Run*> runs = RunPointers(job.runs);
  const auto points = Roofline(runs, PeaksOf(runs, job.peak_runs));
  ASSERT_EQ(points.size(), 2u);
  EXPECT_DOUBLE_EQ(points[0].datasheet_flops_per_s, 989.4e12);
  const std::string html = RenderReport({job}, "roofline");
  EXPECT_NE(html.find("cuda:0 datasheet 989.4 TFLOP/s"), std::string::npos) << html;
  EXPECT_EQ(html.find("cuda:0 datasheet 1978.9 TFLOP/s"), std::string::npos);
  // No datasheet recorded: no such roof.
  EXPECT_EQ(RenderReport({RooflineJob()}, "roofline").find("datasheet"), std::string::npos);
}

// A CPU's roof in the units it is in (12.6 GB/s, not "0.01 TB/s"), and a
// run above the best matmul measured gets no verdict from it, but how to
// measure the peak.
TEST(Report, ACpuRoofReadsInGigabytesAndARunAboveItGetsNoVerdict) {
  ReportJob job = RooflineJob();
  for (v1::Run* r : {&job.runs[0], &job.runs[1], &job.peak_runs[0], &job.peak_runs[1]}) {
    r->mutable_config()->set_device("cpu");
    r->mutable_result()->set_resolved_device("cpu");
    r->mutable_result()->set_device_kernel_share(0);
  }
  job.peak_runs[0].mutable_result()->set_achieved_tflops(0.0048);  // 4.8 GFLOP/s
  job.peak_runs[1].mutable_result()->set_bandwidth_gb_per_s(6.3);  // 12.6 GB/s of traffic
  const std::string html = RenderReport({job}, "cpu roofline");
  EXPECT_NE(html.find("cpu peak 4.8 GFLOP/s, 12.6 GB/s"), std::string::npos) << html;
  EXPECT_NE(html.find("the run beat this host&#39;s best measured matmul and copy (4.8 GFLOP/s, "
                      "12.6 GB/s), which are then not its peaks: measure matmul in the run&#39;s "
                      "precision at several sizes"),
            std::string::npos)
      << html;
}

TEST(Report, TableShowsVaryingColumnsFiguresAndFlags) {
  const std::string html = RenderReport({SweepJob()}, "nightly");
  EXPECT_NE(html.find("<th>precision</th>"), std::string::npos);
  EXPECT_NE(html.find("<th>device</th>"), std::string::npos);
  // Constant across the job: a fixed-config line, not a column.
  EXPECT_EQ(html.find("<th>workload</th>"), std::string::npos);
  EXPECT_NE(html.find("workload <b>resnet50</b>"), std::string::npos);
  EXPECT_NE(html.find("out_of_memory"), std::string::npos);
  EXPECT_NE(html.find("unstable"), std::string::npos);
  EXPECT_NE(html.find("throttled: sw_thermal"), std::string::npos);
  EXPECT_NE(html.find("6.91 &gt; 6.42"), std::string::npos);
  // Max batch that fit, of the configs that ran out of memory only: on the
  // CPU every batch asked fit, so its largest is no limit.
  EXPECT_NE(html.find("cuda:0, fp32: <b>256</b>"), std::string::npos) << html;
  EXPECT_EQ(html.find("cpu, fp32: <b>"), std::string::npos) << html;
}

TEST(Report, EscapesTextAndIsSelfContained) {
  const std::string html =
      RenderReport({SweepJob(), PipelineJob()}, "GPU <script>x</script>");
  EXPECT_NE(html.find("resnet50 &lt;b&gt;&amp; sweep"), std::string::npos);
  EXPECT_EQ(html.find("<b>&"), std::string::npos);
  EXPECT_NE(html.find("GPU &lt;script&gt;x&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  const std::regex external(
      R"re((src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?\s*(https?:)?//)re",
      std::regex::icase);
  EXPECT_FALSE(std::regex_search(html, external));
}

// A bar is green or red only where compare's rule (common/verdict.h), on
// the repetitions of each config, calls it faster or slower: one run a side
// is grey whatever its ratio, as compare says "too noisy to tell" of it.
TEST(Report, ColoursASpeedupOnlyWhereCompareWould) {
  ReportJob job;
  job.job.set_job_id("job-0005");
  v1::RunConfig c;
  c.set_workload("resnet50");
  c.set_mode(v1::MODE_INFER);
  c.set_device("cuda:0");
  c.set_batch_size(32);
  int index = 0;
  // Five repetitions of each config, +-0.4% apart (the baseline, bf16 and
  // channels_last), and one fp16 run: one run against five is judged by the
  // five's prediction interval, as compare judges it.
  const double spread[] = {1.0, 1.004, 0.996, 1.002, 0.998};
  auto add = [&](const v1::RunConfig& config, double rate, int repeats) {
    for (int i = 0; i < repeats; ++i) job.runs.push_back(SucceededRun(index++, config, rate * spread[i]));
  };
  add(c, 1000, 5);
  c.set_precision(v1::PRECISION_FP16);
  add(c, 1500, 1);
  c.set_precision(v1::PRECISION_BF16);
  add(c, 600, 5);
  c.set_precision(v1::PRECISION_FP32);
  c.set_channels_last(true);
  add(c, 1500, 5);
  // One run a side (batch 64): grey, however far apart.
  c.set_batch_size(64);
  c.set_channels_last(false);
  add(c, 2000, 1);
  c.set_channels_last(true);
  add(c, 3000, 1);
  const std::string html = RenderReport({job}, "verdicts");
  auto fill_of = [&](const std::string& tooltip) {
    const size_t at = html.find("<title>" + tooltip);
    if (at == std::string::npos) return std::string("not drawn");
    const size_t fill = html.rfind("fill=\"", at);
    return html.substr(fill + 6, 7);
  };
  EXPECT_EQ(fill_of("1500 vs 1000 samples/s; 1 vs 5 runs: faster"), "#4e9a5a") << html;
  EXPECT_EQ(fill_of("3000 vs 2000 samples/s; 1 vs 1 run: too noisy to tell (one run on a side"),
            "#b8bec6")
      << html;
  EXPECT_EQ(fill_of("600.0 vs 1000 samples/s; 5 vs 5 runs: slower"), "#d1495b") << html;
  EXPECT_EQ(fill_of("1500 vs 1000 samples/s; 5 vs 5 runs: faster"), "#4e9a5a") << html;
  // Each config is one bar, however many repetitions it has.
  size_t bars = 0;
  for (size_t at = html.find("<title>1500 vs 1000 samples/s; 5 vs 5"); at != std::string::npos;
       at = html.find("<title>1500 vs 1000 samples/s; 5 vs 5", at + 1)) {
    ++bars;
  }
  EXPECT_EQ(bars, 1u);
  // What compare says of the same runs is what the chart drew.
  std::vector<const v1::Run*> base, fp16, base64, channels_last64;
  for (const v1::Run& r : job.runs) {
    const bool b32 = r.config().batch_size() == 32;
    const bool fp32 = r.config().precision() == v1::PRECISION_UNSPECIFIED ||
                      r.config().precision() == v1::PRECISION_FP32;
    const bool plain = fp32 && !r.config().channels_last();
    if (b32 && plain) base.push_back(&r);
    if (b32 && r.config().precision() == v1::PRECISION_FP16) fp16.push_back(&r);
    if (!b32) (plain ? base64 : channels_last64).push_back(&r);
  }
  EXPECT_EQ(verdict::CompareRuns(base, fp16, {}).verdict, verdict::Verdict::kFaster);
  EXPECT_EQ(verdict::CompareRuns(base64, channels_last64, {}).verdict, verdict::Verdict::kTooNoisy);
}

// Each warning the table shows is explained under it, once; a table
// without warnings has no legend.
TEST(Report, ExplainsEachWarningItsTableShows) {
  ReportJob job = SweepJob();  // unstable at batch 8, throttled at fp16 batch 256
  job.runs[1].mutable_result()->mutable_contention()->set_contended(true);
  job.runs[2].mutable_result()->set_stopped_at_max_time(true);
  const std::string html = RenderReport({job}, "warnings");
  ASSERT_EQ(Count(html, "<dl class=\"legend\">"), 1);
  const std::string legend = html.substr(html.find("<dl class=\"legend\">"));
  for (const char* w : {"unstable", "throttled", "contended", "stopped at max-time"}) {
    EXPECT_NE(legend.find(absl::StrCat(">", w, "</span></dt><dd>", WarningMeaning(w).substr(0, 12))),
              std::string::npos)
        << w;
  }
  EXPECT_NE(legend.find("shared the host"), std::string::npos);
  EXPECT_EQ(Count(RenderReport({PipelineJob()}, "calm"), "<dl class=\"legend\">"), 0);
}

// mlp at three sizes: throughput and memory against the parameter count.
TEST(Report, AModelSizeSweepIsPlottedAgainstParameters) {
  ReportJob job;
  job.job.set_job_id("job-0006");
  v1::RunConfig c;
  c.set_workload("mlp");
  c.set_mode(v1::MODE_TRAIN);
  c.set_device("cuda:0");
  c.set_batch_size(256);
  const char* sizes[] = {"small", "medium", "large"};
  const int64_t params[] = {1600000, 13000000, 105000000};
  for (int i = 0; i < 3; ++i) {
    c.mutable_params()->set_model_size(sizes[i]);
    v1::Run r = SucceededRun(i, c, 90000.0 / (i + 1));
    r.mutable_result()->set_parameter_count(params[i]);
    r.mutable_result()->mutable_memory()->set_peak_device_allocated_bytes(params[i] * 16);
    job.runs.push_back(r);
  }
  const std::string html = RenderReport({job}, "model size");
  EXPECT_NE(html.find("Throughput vs model size (millions of parameters)"), std::string::npos);
  EXPECT_NE(html.find("Peak memory allocated vs model size"), std::string::npos);
  EXPECT_NE(html.find("model size (millions of parameters) 105, 30000"), std::string::npos)
      << html;
  EXPECT_EQ(html.find("Throughput vs batch size"), std::string::npos);
}

// Profiled runs: where each one's time went as a stacked bar (HTA's shares
// from its trace; its operator categories), and each one's diff against
// the first; the job's repro command in its summary.
TEST(Report, ProfiledRunsGetTheirBreakdownAndTheirDiffAgainstTheFirst) {
  ReportJob job;
  job.job.set_job_id("job-0009");
  job.job.set_state(v1::JOB_STATE_SUCCEEDED);
  job.repro = "gpubench submit --workload resnet50 --batch 8 --profile";
  v1::RunConfig c;
  c.set_workload("resnet50");
  c.set_device("cuda:0");
  c.set_batch_size(8);
  for (int i = 0; i < 3; ++i) {
    // 8000 samples/s of 8 a step: 8 samples a step, 5 steps profiled.
    c.set_device(i == 2 ? "cpu" : "cuda:0");
    v1::Run run = SucceededRun(i, c, 8000);
    v1::RunResult& r = *run.mutable_result();
    r.set_iterations(100);
    r.set_measured_ms(100);
    r.set_profiled_iterations(5);
    v1::ProfileSummary& p = *r.mutable_profile();
    p.set_device_times(i < 2);
    p.set_has_trace(i < 2);
    v1::OperatorStat& op = *p.add_top_operators();
    op.set_name("aten::mm");
    op.set_count(5);
    op.set_self_time_us(250);
    op.set_share(1);
    for (const auto& [category, share] : {std::pair{"matmul", 0.7}, std::pair{"elementwise", 0.3}}) {
      v1::CategoryShare& s = *p.add_categories();
      s.set_category(category);
      s.set_share(share);
      s.set_self_time_us(1000 * share);
    }
    job.runs.push_back(run);
  }
  Breakdown b;
  b.span_us = 1000;
  b.idle_us = 600;
  b.compute_us = 300;
  b.communication_us = 50;
  b.memory_us = 50;
  b.top = {{"gemm", 5, 250}, {"Memcpy DtoD", 5, 50}};
  job.breakdowns["run-0"] = b;
  b.top.push_back({"slow_kernel", 5, 500});
  job.breakdowns["run-1"] = b;
  const std::string html = RenderReport({job}, "profiled");
  EXPECT_NE(html.find("<dt>reproduce</dt><dd><code>gpubench submit --workload resnet50 --batch 8 "
                      "--profile</code></dd>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("temporal breakdown of each profiled span"), std::string::npos) << html;
  EXPECT_NE(html.find("<title>compute: 300 us, 30.0% of the span</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>idle: 600 us, 60.0% of the span</title>"), std::string::npos);
  EXPECT_NE(html.find("60% of the span is idle"), std::string::npos);
  EXPECT_NE(html.find("Where the profiled time went, by operator category"), std::string::npos);
  EXPECT_NE(html.find("<title>matmul: 700 us self, 70.0%</title>"), std::string::npos);
  // run 1 against run 0: slow_kernel's 500 us over 5 steps of 8 samples.
  const size_t diff = html.find("What changed against run #0");
  ASSERT_NE(diff, std::string::npos) << html;
  const size_t row = html.find("<tr>", html.find("</tr>", diff));
  EXPECT_EQ(html.substr(row, html.find("</tr>", row) - row),
            "<tr><td class=\"num\">run #1 \u00b7 cuda:0 (20.00 against 7.50 us a sample in all)"
            "</td><td class=\"num\">slow_kernel</td><td class=\"num\">0</td><td "
            "class=\"num\">0.00</td><td class=\"num\">1</td><td class=\"num\">100.00</td><td "
            "class=\"num\">+12.50</td><td class=\"num\">100.0%</td>");
  // The CPU run's operator times do not compare with the device's.
  EXPECT_NE(html.find("1 more profiled runs not diffed"), std::string::npos) << html;
}

TEST(Report, DrawsNoPlotFromTooLittleData) {
  ReportJob one = SweepJob();
  one.runs.resize(1);
  const std::string html = RenderReport({one}, "one run");
  EXPECT_EQ(Count(html, "<svg"), 0);
  EXPECT_NE(html.find("job-0001"), std::string::npos);
  const std::string empty = RenderReport({}, "nothing");
  EXPECT_NE(empty.find("No jobs."), std::string::npos);
  EXPECT_EQ(Count(empty, "<svg"), 0);
}

}  // namespace
}  // namespace gpubench::report
