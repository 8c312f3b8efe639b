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

#include "common/spec.h"
#include "report/format.h"
#include "report/roofline.h"
#include "report/speedup.h"

namespace gpubench::report {
namespace {

// ---------------------------------------------------------------- fixtures

v1::Run SucceededRun(int index, const v1::RunConfig& config,
                     double samples_per_s) {
  v1::Run run;
  run.set_run_id("run-" + std::to_string(index));
  run.set_index(index);
  *run.mutable_config() = config;
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  v1::RunResult& r = *run.mutable_result();
  r.set_resolved_device(config.device());
  r.set_throughput_samples_per_s(samples_per_s);
  r.set_throughput_ci_low(samples_per_s * 0.98);
  r.set_throughput_ci_high(samples_per_s * 1.02);
  const double step_ms = 1000.0 * config.batch_size() / samples_per_s;
  r.mutable_latency()->set_p50_ms(step_ms);
  r.mutable_latency()->set_p95_ms(step_ms * 1.08);
  r.mutable_latency()->set_p99_ms(step_ms * 1.15);
  r.set_first_loss(6.91);
  r.set_last_loss(6.42);
  r.set_stable(true);
  return run;
}

// A resnet50 training sweep: batch 8..256 in fp32 and fp16 on cuda:0, one
// fp32 batch-512 run that ran out of memory, and the fp32 batch-32 point on
// the CPU.
ReportJob SweepJob() {
  ReportJob job;
  job.host = "gpu-box:50051";
  v1::Job& j = job.job;
  j.set_job_id("job-0001");
  j.mutable_spec()->set_name("resnet50 <b>& sweep");
  j.set_state(v1::JOB_STATE_SUCCEEDED);
  j.set_host_id("gpu-box-4f2a");
  j.mutable_submit_time()->set_seconds(1767225600);
  j.mutable_start_time()->set_seconds(1767225605);
  j.mutable_end_time()->set_seconds(1767225905);
  v1::RunConfig base;
  base.set_workload("resnet50");
  base.set_mode(v1::MODE_TRAIN);
  base.set_device("cuda:0");
  int index = 0;
  for (v1::Precision precision : {v1::PRECISION_FP32, v1::PRECISION_FP16}) {
    const double speed = precision == v1::PRECISION_FP16 ? 1.9 : 1.0;
    for (int batch = 8; batch <= 256; batch *= 2) {
      v1::RunConfig c = base;
      c.set_precision(precision);
      c.set_batch_size(batch);
      v1::Run run =
          SucceededRun(index++, c, speed * 1400.0 * batch / (batch + 20.0));
      run.mutable_result()->mutable_memory()->set_peak_device_allocated_bytes(
          static_cast<int64_t>((400 + batch * 95 / speed) * (1 << 20)));
      run.mutable_result()->mutable_memory()->set_peak_host_rss_bytes(int64_t{3}
                                                                      << 30);
      if (batch == 8) run.mutable_result()->set_stable(false);
      if (batch == 256 && speed > 1) {
        run.mutable_result()->mutable_telemetry()->set_throttled(true);
        run.mutable_result()->mutable_telemetry()->add_throttle_reasons(
            "sw_thermal");
      }
      job.runs.push_back(run);
    }
  }
  v1::RunConfig oom = base;
  oom.set_precision(v1::PRECISION_FP32);
  oom.set_batch_size(512);
  v1::Run oom_run;
  oom_run.set_index(index++);
  *oom_run.mutable_config() = oom;
  oom_run.set_state(v1::RUN_STATE_OUT_OF_MEMORY);
  oom_run.set_error("CUDA out of memory. Tried to allocate 3.06 GiB");
  oom_run.mutable_result()->mutable_memory()->set_peak_device_allocated_bytes(
      int64_t{78} << 30);
  job.runs.push_back(oom_run);

  v1::RunConfig cpu = base;
  cpu.set_device("cpu");
  cpu.set_precision(v1::PRECISION_FP32);
  cpu.set_batch_size(32);
  v1::Run cpu_run = SucceededRun(index++, cpu, 41.5);
  cpu_run.mutable_result()->mutable_memory()->set_peak_host_rss_bytes(int64_t{5}
                                                                      << 30);
  job.runs.push_back(cpu_run);

  j.set_run_count(static_cast<int>(job.runs.size()));
  for (const v1::Run& run : job.runs) CountFinishedRun(run, &j);
  return job;
}

// Host-input runs at 0/2/4/8 loader threads; the 4-thread run was profiled.
ReportJob PipelineJob() {
  ReportJob job;
  job.host = "gpu-box:50051";
  v1::Job& j = job.job;
  j.set_job_id("job-0002");
  j.mutable_spec()->set_name("input pipeline");
  j.set_state(v1::JOB_STATE_SUCCEEDED);
  j.set_host_id("gpu-box-4f2a");
  v1::RunConfig c;
  c.set_workload("resnet18");
  c.set_mode(v1::MODE_TRAIN);
  c.set_device("cuda:0");
  c.set_batch_size(64);
  c.set_input_source(v1::INPUT_SOURCE_HOST);
  c.mutable_pipeline()->set_pinned_memory(true);
  const int threads[] = {0, 2, 4, 8};
  const double wait[] = {0.71, 0.38, 0.12, 0.02};
  for (int i = 0; i < 4; ++i) {
    c.mutable_pipeline()->set_loader_threads(threads[i]);
    v1::Run run = SucceededRun(i, c, 2900 * (1 - wait[i]));
    run.mutable_result()->set_data_wait_share(wait[i]);
    run.mutable_result()->mutable_memory()->set_peak_device_allocated_bytes(
        int64_t{3} << 30);
    if (threads[i] == 4) {
      v1::ProfileSummary& p = *run.mutable_result()->mutable_profile();
      p.set_device_times(true);
      struct Op {
        const char* name;
        double share;
        const char* category;
      };
      for (const Op& op :
           {Op{"aten::cudnn_convolution", 0.31, "convolution"},
            Op{"aten::convolution_backward", 0.24, "convolution"},
            Op{"aten::native_batch_norm", 0.11, "normalization"},
            Op{"aten::native_batch_norm_backward", 0.08, "normalization"},
            Op{"aten::addmm", 0.05, "matmul"},
            Op{"aten::threshold_backward", 0.05, "elementwise"},
            Op{"aten::clamp_min_", 0.04, "elementwise"},
            Op{"Memcpy HtoD (Pinned -> Device)", 0.04, "memcpy_h2d"},
            Op{"aten::_foreach_add_", 0.03, "optimizer"},
            Op{"aten::max_pool2d_with_indices", 0.02, "pooling"}}) {
        v1::OperatorStat* s = p.add_top_operators();
        s->set_name(op.name);
        s->set_share(op.share);
        s->set_category(op.category);
        s->set_count(120);
        s->set_self_time_us(op.share * 1e6);
      }
    }
    job.runs.push_back(run);
  }
  j.set_run_count(4);
  for (const v1::Run& run : job.runs) CountFinishedRun(run, &j);
  return job;
}

int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

// ---------------------------------------------------------------- HTML text

TEST(Report, HoldsEveryPlotTheDataSupports) {
  const std::string html = RenderReport({SweepJob(), PipelineJob()}, "nightly");
  // Sweep: throughput, latency, memory, device speedup, optimised speedup.
  // Pipeline: data wait, one operator chart. Nothing else is an <svg>.
  EXPECT_EQ(Count(html, "<svg"), 7);
  for (const char* title :
       {"Throughput vs batch size", "Latency (p50, p95) vs batch size",
        "Peak device memory vs batch size", "Speedup by device",
        "Optimised vs baseline", "Data-wait share vs loader threads",
        "Top operators"}) {
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

// A unet training job swept over --device cuda:0,cpu with profiles: the CPU
// is the baseline whatever the order, the speedup's interval holds both
// runs' intervals, and each operator category's time per sample shows which
// gained most.
ReportJob DeviceSweepJob() {
  ReportJob job = SweepJob();
  job.runs.clear();
  job.job.mutable_spec()->mutable_profiling()->set_iterations(4);
  v1::RunConfig c;
  c.set_workload("unet");
  c.set_mode(v1::MODE_TRAIN);
  c.set_batch_size(16);
  int index = 0;
  struct Side {
    const char* device;
    double rate, conv_us, elementwise_us;  // self time in the 4 profiled steps
  };
  for (const Side& side : {Side{"cuda:0", 2000, 8000, 4000}, Side{"cpu", 100, 400000, 40000}}) {
    c.set_device(side.device);
    v1::Run run = SucceededRun(index++, c, side.rate);
    v1::ProfileSummary& p = *run.mutable_result()->mutable_profile();
    for (auto [name, us] : {std::pair<const char*, double>{"convolution", side.conv_us},
                            {"elementwise", side.elementwise_us}}) {
      v1::CategoryShare* share = p.add_categories();
      share->set_category(name);
      share->set_self_time_us(us);
    }
    job.runs.push_back(run);
  }
  return job;
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
  // Each side's interval is +-2%: 1960/102 .. 2040/98.
  EXPECT_NEAR(v.sides[1].speedup_low, 1960.0 / 102, 1e-9);
  EXPECT_NEAR(v.sides[1].speedup_high, 2040.0 / 98, 1e-9);
  // 4 profiled steps of 16 samples: convolution 6250 us a sample on the
  // CPU against 125 on the GPU (50x), elementwise 625 against 62.5 (10x).
  ASSERT_EQ(v.categories.size(), 2u);
  EXPECT_EQ(v.categories[0].category, "convolution");
  EXPECT_DOUBLE_EQ(v.categories[0].us_per_sample[0], 6250);
  EXPECT_DOUBLE_EQ(v.categories[0].us_per_sample[1], 125);
  EXPECT_DOUBLE_EQ(v.categories[1].us_per_sample[1], 62.5);

  const std::string html = RenderReport({job}, "device sweep");
  EXPECT_NE(html.find("cuda:0 vs cpu \u00b7 unet train b16"), std::string::npos);
  EXPECT_NE(html.find("20.00\u00d7"), std::string::npos);
  EXPECT_NE(html.find("95% interval 19.22-20.82\u00d7"), std::string::npos) << html;
  EXPECT_NE(html.find("self time per sample by operator category"), std::string::npos);
  EXPECT_NE(html.find("50.00\u00d7"), std::string::npos);
  EXPECT_NE(html.find("10.00\u00d7"), std::string::npos);
  // One device alone is no comparison.
  std::vector<const v1::Run*> one = {runs[0]};
  EXPECT_TRUE(DeviceSpeedups(one, 4).empty());
}

// Profiled runs on a roofline whose peaks come from the host's matmul and
// copy runs (given beside the job): resnet50 at 60 FLOP/B lies below the
// ridge of 2000 TFLOP/s over 3 TB/s (667 FLOP/B), so memory-bound; mlp's
// kernels kept the GPU busy 20% of each step, so launch/host-bound.
ReportJob RooflineJob() {
  ReportJob job = SweepJob();
  job.runs.clear();
  v1::RunConfig c;
  c.set_device("cuda:0");
  c.set_mode(v1::MODE_INFER);
  c.set_precision(v1::PRECISION_FP16);
  c.set_batch_size(100);
  c.set_workload("resnet50");
  v1::Run r50 = SucceededRun(0, c, 10000);  // 100 iterations a second
  r50.mutable_result()->set_flops_per_iteration(6e13 / 100);   // 60 TFLOP/s achieved
  r50.mutable_result()->set_memory_bytes_per_iteration(1e10);  // 1 TB/s, 60 FLOP/B
  r50.mutable_result()->set_device_kernel_share(0.97);
  c.set_workload("mlp");
  v1::Run mlp = SucceededRun(1, c, 100000);
  mlp.mutable_result()->set_flops_per_iteration(1e8);
  mlp.mutable_result()->set_memory_bytes_per_iteration(1e7);
  mlp.mutable_result()->set_device_kernel_share(0.2);
  job.runs = {r50, mlp};
  v1::RunConfig m;
  m.set_workload("matmul");
  m.set_device("cuda:0");
  m.set_precision(v1::PRECISION_FP16);
  v1::Run matmul = SucceededRun(7, m, 10);
  matmul.mutable_result()->set_achieved_tflops(2000);
  m.set_workload("copy");
  m.mutable_params()->set_copy_direction(v1::COPY_DIRECTION_DEVICE_TO_DEVICE);
  v1::Run copy = SucceededRun(8, m, 10);
  copy.mutable_result()->set_bandwidth_gb_per_s(1500);  // 3 TB/s of traffic
  job.peak_runs = {matmul, copy};
  return job;
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
  EXPECT_NE(html.find("6.910 &gt; 6.420"), std::string::npos);
  // Max batch that fit, per precision and device.
  EXPECT_NE(html.find("cuda:0, fp32: <b>256</b>"), std::string::npos) << html;
  EXPECT_NE(html.find("cpu, fp32: <b>32</b>"), std::string::npos);
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

// ---------------------------------------------------------------- PNG

struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint32_t> pixels;  // RGBA, one word each, row-major
};

uint32_t Be32(const unsigned char* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 |
         p[3];
}

constexpr char kPngSignature[] = "\x89PNG\r\n\x1a\n";

// Decodes an 8-bit RGB or RGBA non-interlaced PNG, which is what Chromium's
// screenshots are. Returns an error text, empty on success.
std::string DecodePng(const std::string& file, Image* image) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(file.data());
  if (file.size() < 8 || std::memcmp(bytes, kPngSignature, 8) != 0)
    return "not a PNG";
  int depth = 0, colour = 0, interlace = 0;
  std::string idat;
  bool ended = false;
  for (size_t pos = 8; pos + 12 <= file.size() && !ended;) {
    const uint32_t length = Be32(bytes + pos);
    if (pos + 12 + length > file.size()) return "truncated chunk";
    const std::string type(file, pos + 4, 4);
    const unsigned char* data = bytes + pos + 8;
    const uLong crc = crc32(crc32(0, nullptr, 0), bytes + pos + 4, length + 4);
    if (crc != Be32(data + length)) return "bad CRC in " + type;
    if (type == "IHDR") {
      if (length != 13) return "bad IHDR";
      image->width = static_cast<int>(Be32(data));
      image->height = static_cast<int>(Be32(data + 4));
      depth = data[8];
      colour = data[9];
      if (data[10] != 0 || data[11] != 0)
        return "unknown compression or filter method";
      interlace = data[12];
    } else if (type == "IDAT") {
      idat.append(reinterpret_cast<const char*>(data), length);
    } else if (type == "IEND") {
      ended = true;
    }
    pos += 12 + length;
  }
  if (!ended) return "no IEND";
  if (depth != 8 || (colour != 2 && colour != 6) || interlace != 0) {
    return "unsupported: depth " + std::to_string(depth) + ", colour type " +
           std::to_string(colour) + ", interlace " + std::to_string(interlace);
  }
  const size_t channels = colour == 6 ? 4 : 3;
  const size_t stride = image->width * channels;
  std::vector<unsigned char> raw(image->height * (stride + 1));
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size,
                 reinterpret_cast<const Bytef*>(idat.data()),
                 idat.size()) != Z_OK ||
      raw_size != raw.size()) {
    return "IDAT does not inflate to the image size";
  }
  std::vector<unsigned char> prev(stride, 0), cur(stride);
  image->pixels.resize(size_t(image->width) * image->height);
  for (int y = 0; y < image->height; ++y) {
    const unsigned char* line = raw.data() + y * (stride + 1);
    const int filter = line[0];
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= channels ? cur[x - channels] : 0;
      const int b = prev[x];
      const int c = x >= channels ? prev[x - channels] : 0;
      int predictor = 0;
      switch (filter) {
        case 0:
          predictor = 0;
          break;
        case 1:
          predictor = a;
          break;
        case 2:
          predictor = b;
          break;
        case 3:
          predictor = (a + b) / 2;
          break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b),
                    pc = std::abs(p - c);
          predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default:
          return "bad filter type " + std::to_string(filter);
      }
      cur[x] = static_cast<unsigned char>(line[1 + x] + predictor);
    }
    for (int x = 0; x < image->width; ++x) {
      const unsigned char* p = cur.data() + x * channels;
      image->pixels[size_t(y) * image->width + x] =
          uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 |
          (channels == 4 ? p[3] : 0xFF);
    }
    std::swap(prev, cur);
  }
  return "";
}

struct Ink {
  double non_background_share = 0;  // pixels unlike the commonest colour
  size_t distinct_colours = 0;
};

Ink MeasureInk(const Image& image) {
  std::unordered_map<uint32_t, size_t> counts;
  for (uint32_t p : image.pixels) ++counts[p];
  size_t background = 0;
  for (const auto& [colour, n] : counts) background = std::max(background, n);
  Ink ink;
  ink.distinct_colours = counts.size();
  if (!image.pixels.empty()) {
    ink.non_background_share = 1.0 - double(background) / image.pixels.size();
  }
  return ink;
}

// Text and plots put ink on much of the page, anti-aliased in many shades.
bool LooksDrawn(const Ink& ink) {
  return ink.non_background_share > 0.01 && ink.distinct_colours > 20;
}

// A PNG with one row per filter type, so the decoder meets all five.
TEST(Png, DecodesEveryFilterType) {
  constexpr int kWidth = 7, kHeight = 5, kChannels = 3;
  std::vector<std::vector<unsigned char>> rows(
      kHeight, std::vector<unsigned char>(kWidth * 3));
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth * kChannels; ++x)
      rows[y][x] = (y * 53 + x * 31 + x * x) & 0xFF;
  }
  std::string raw;
  for (int y = 0; y < kHeight; ++y) {
    raw += static_cast<char>(y);
    for (int x = 0; x < kWidth * kChannels; ++x) {
      const int a = x >= kChannels ? rows[y][x - kChannels] : 0;
      const int b = y > 0 ? rows[y - 1][x] : 0;
      const int c = x >= kChannels && y > 0 ? rows[y - 1][x - kChannels] : 0;
      const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b),
                pc = std::abs(p - c);
      const int predictor[] = {0, a, b, (a + b) / 2,
                               pa <= pb && pa <= pc ? a
                               : pb <= pc           ? b
                                                    : c};
      raw += static_cast<char>((rows[y][x] - predictor[y]) & 0xFF);
    }
  }
  std::vector<unsigned char> z(compressBound(raw.size()));
  uLongf z_size = z.size();
  ASSERT_EQ(compress(z.data(), &z_size,
                     reinterpret_cast<const Bytef*>(raw.data()), raw.size()),
            Z_OK);
  auto chunk = [](const std::string& type, const std::string& data) {
    auto be32 = [](uint32_t v) {
      std::string out;
      for (int shift = 24; shift >= 0; shift -= 8)
        out += static_cast<char>(v >> shift);
      return out;
    };
    const std::string body = type + data;
    return be32(data.size()) + body +
           be32(crc32(0, reinterpret_cast<const Bytef*>(body.data()),
                      body.size()));
  };
  const std::string ihdr({0, 0, 0, kWidth, 0, 0, 0, kHeight, 8, 2, 0, 0, 0});
  const std::string png =
      std::string(kPngSignature, 8) + chunk("IHDR", ihdr) +
      chunk("IDAT", std::string(reinterpret_cast<char*>(z.data()), z_size)) +
      chunk("IEND", "");
  Image image;
  ASSERT_EQ(DecodePng(png, &image), "");
  ASSERT_EQ(image.width, kWidth);
  ASSERT_EQ(image.height, kHeight);
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) {
      const unsigned char* p = rows[y].data() + x * kChannels;
      EXPECT_EQ(image.pixels[y * kWidth + x], uint32_t{p[0]} << 24 |
                                                  uint32_t{p[1]} << 16 |
                                                  uint32_t{p[2]} << 8 | 0xFF)
          << "filter " << y << " pixel " << x;
    }
  }
}

// ---------------------------------------------------------------- Chromium

constexpr int kShotWidth = 1280, kShotHeight = 2400;

std::string FindBrowser() {
  const char* path = std::getenv("PATH");
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    std::stringstream dirs(path == nullptr ? "/usr/bin" : path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      const std::string candidate = dir + "/" + name;
      if (!dir.empty() && access(candidate.c_str(), X_OK) == 0)
        return candidate;
    }
  }
  return "";
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Screenshots html (written to a file named after `name`) with headless
// Chromium and decodes it. Fails the test, rather than skipping, without a
// browser: the report's promise is what a browser shows.
void Render(const std::string& name, const std::string& html, Image* image) {
  const std::string browser = FindBrowser();
  ASSERT_FALSE(browser.empty())
      << "no chromium, chromium-browser or google-chrome on PATH; "
         "deploy/build.sh installs "
         "the Debian package chromium (apt-get install chromium)";
  const std::string dir = ::testing::TempDir() + "/" + name;
  ASSERT_EQ(
      std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()),
      0);
  const std::string html_path = dir + "/report.html";
  const std::string png_path = dir + "/report.png";
  WriteFile(html_path, html);
  // A profile per test, so tests run in parallel do not share one.
  const std::string command = "timeout 60 '" + browser +
                              "' --headless --no-sandbox --disable-gpu "
                              "--hide-scrollbars --no-first-run "
                              "--disable-dev-shm-usage --user-data-dir='" +
                              dir + "/profile' --screenshot='" + png_path +
                              "' --window-size=" + std::to_string(kShotWidth) +
                              "," + std::to_string(kShotHeight) + " 'file://" +
                              html_path + "' >'" + dir + "/chromium.log' 2>&1";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(command.c_str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_EQ(status, 0) << command << "\n" << ReadFile(dir + "/chromium.log");
  std::cout << "chromium rendered " << html_path << " to " << png_path << " in "
            << seconds << " s\n";
  const std::string error = DecodePng(ReadFile(png_path), image);
  ASSERT_EQ(error, "") << png_path;
}

TEST(ReportRender, ChromiumDrawsTheReport) {
  Image image;
  ASSERT_NO_FATAL_FAILURE(
      Render("report_render",
             RenderReport({SweepJob(), PipelineJob()}, "nightly"), &image));
  EXPECT_EQ(image.width, kShotWidth);
  EXPECT_EQ(image.height, kShotHeight);
  const Ink ink = MeasureInk(image);
  std::cout << "report: " << ink.non_background_share << " of pixels inked, "
            << ink.distinct_colours << " colours\n";
  EXPECT_TRUE(LooksDrawn(ink))
      << ink.non_background_share << " of pixels inked, "
      << ink.distinct_colours << " colours";
}

TEST(ReportRender, ChromiumDrawsTheRoofline) {
  Image image;
  ASSERT_NO_FATAL_FAILURE(
      Render("report_render_roofline", RenderReport({RooflineJob()}, "roofline"), &image));
  EXPECT_TRUE(LooksDrawn(MeasureInk(image)));
}

// The check above must be able to fail: an empty page does.
TEST(ReportRender, BlankPageIsNotDrawn) {
  Image image;
  ASSERT_NO_FATAL_FAILURE(Render("report_render_blank", "", &image));
  EXPECT_EQ(image.width, kShotWidth);
  const Ink ink = MeasureInk(image);
  EXPECT_FALSE(LooksDrawn(ink))
      << ink.non_background_share << " of pixels inked, "
      << ink.distinct_colours << " colours";
}

}  // namespace
}  // namespace gpubench::report
