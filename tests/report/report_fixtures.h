// The report tests' jobs: sweeps, pipelines, device sweeps and profiled
// runs built in memory, as a daemon would store them.
#ifndef GPUBENCH_TESTS_REPORT_REPORT_FIXTURES_H_
#define GPUBENCH_TESTS_REPORT_REPORT_FIXTURES_H_

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
namespace fixtures {

// ---------------------------------------------------------------- fixtures

inline v1::Run SucceededRun(int index, const v1::RunConfig& config,
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

// The host's peaks on cuda:0: a matmul at precision reaching tflops, and a
// device-to-device copy of gb_per_s (twice that in traffic).
inline std::vector<v1::Run> PeakRuns(v1::Precision precision, double tflops, double gb_per_s) {
  v1::RunConfig m;
  m.set_workload("matmul");
  m.set_device("cuda:0");
  m.set_precision(precision);
  v1::Run matmul = SucceededRun(90, m, 10);
  matmul.mutable_result()->set_achieved_tflops(tflops);
  m.set_workload("copy");
  m.clear_precision();
  m.mutable_params()->set_copy_direction(v1::COPY_DIRECTION_DEVICE_TO_DEVICE);
  v1::Run copy = SucceededRun(91, m, 10);
  copy.mutable_result()->set_bandwidth_gb_per_s(gb_per_s);
  return {matmul, copy};
}

// A resnet50 training sweep: batch 8..256 in fp32 and fp16 on cuda:0, one
// fp32 batch-512 run that ran out of memory, and the fp32 batch-32 point on
// the CPU.
inline ReportJob SweepJob() {
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
inline ReportJob PipelineJob() {
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

inline int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}


// A unet training job swept over --device cuda:0,cpu with profiles: the CPU
// is the baseline whatever the order, the speedup's interval holds both
// runs' intervals, and each operator category's time per sample shows which
// gained most.
inline ReportJob DeviceSweepJob() {
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

// Profiled runs on a roofline whose peaks come from the host's matmul and
// copy runs (given beside the job): resnet50 at 60 FLOP/B lies below the
// ridge of 2000 TFLOP/s over 3 TB/s (667 FLOP/B), so memory-bound; mlp's
// kernels kept the GPU busy 20% of each step, so launch/host-bound.
inline ReportJob RooflineJob() {
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
  job.peak_runs = PeakRuns(v1::PRECISION_FP16, 2000, 1500);  // 3 TB/s of traffic
  return job;
}

}  // namespace fixtures
}  // namespace gpubench::report

#endif  // GPUBENCH_TESTS_REPORT_REPORT_FIXTURES_H_
