// store_bench's history: the workloads, hosts and sweeps it stores, and the
// filler that writes a plausible history of them through the Store API
// (jobs over 90 days, every fifth from a nightly schedule), leaving
// landmarks for the queries. Only store_bench.cc includes it.
#ifndef GPUBENCH_BENCH_STORE_HISTORY_H_
#define GPUBENCH_BENCH_STORE_HISTORY_H_

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/util/time_util.h"
#include "gpubench/v1/job.pb.h"
#include "gpubench/v1/result.pb.h"
#include "gpubench/v1/spec.pb.h"
#include "storage/store.h"

namespace gpubench::bench {

using google::protobuf::util::TimeUtil;
using Clock = std::chrono::steady_clock;

inline constexpr int kRunsPerJob = 20;  // 5 batch sizes x 4 precisions
inline constexpr int kSchedules = 25;
inline constexpr int kSamplesPerRun = 200;
inline constexpr int64_t kNsPerSecond = 1000000000;
inline constexpr int64_t kNsPerDay = 86400 * kNsPerSecond;
inline constexpr int64_t kHistoryDays = 90;

inline constexpr const char* kWorkloads[] = {"mlp",    "simple_cnn", "resnet18",
                                      "resnet50", "unet",     "bilstm",
                                      "transformer", "matmul"};
// Samples per second at batch 32, fp32, on the fastest host; the other
// points scale from it, so throughput differs the way real sweeps do.
inline constexpr double kBaseThroughput[] = {450000, 90000, 5200, 1900,
                                      610,    14000, 2300, 38};
inline constexpr int64_t kParameterCount[] = {410000,   620000,   11700000, 25600000,
                                       31000000, 3500000,  44000000, 0};
inline constexpr int kBatchSizes[] = {8, 16, 32, 64, 128};
inline constexpr v1::Precision kPrecisions[] = {v1::PRECISION_FP32, v1::PRECISION_TF32,
                                         v1::PRECISION_FP16, v1::PRECISION_BF16};
inline constexpr double kPrecisionSpeedup[] = {1.0, 1.6, 2.4, 2.3};
inline constexpr const char* kHosts[] = {"gpu-h100-a.3f9c1e20", "gpu-h100-b.77d2a04b",
                                  "gpu-a100-c.0b41f5d9"};
inline constexpr double kHostSpeed[] = {1.0, 0.97, 0.55};
inline constexpr int kWorkloadCount = sizeof(kWorkloads) / sizeof(kWorkloads[0]);
inline constexpr int kHostCount = sizeof(kHosts) / sizeof(kHosts[0]);

struct BenchOptions {
  int64_t runs = 100000;  // runs stored; rounded up to whole jobs
  int reps = 9;           // timed repetitions per query
  uint64_t seed = 1;      // seed of the generated history
  std::string db_path = "/tmp/gpubench-store-bench/store.db";
};

inline double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

inline google::protobuf::Timestamp Ts(int64_t ns) {
  return TimeUtil::NanosecondsToTimestamp(ns);
}

// What the fill leaves behind for the queries to look up.
struct Landmarks {
  std::string job_id;       // a job from the middle of the history
  std::string run_id;       // one of its runs
  std::string schedule_id;  // the first schedule
  v1::RunConfig schedule_config;  // a config that schedule runs every time
  std::string schedule_last_job_id;  // its newest job, left out of history
  int64_t now_ns = 0;       // the end of the generated history
};

// Generates a plausible history: jobs evenly spread over kHistoryDays, each a
// 5x4 batch-size x precision sweep on one host; every fifth job comes from a
// schedule that repeats one workload nightly, so ScheduleHistory has matches.
class HistoryFiller {
 public:
  HistoryFiller(storage::Store* store, const BenchOptions& options)
      : store_(store), options_(options), rng_(options.seed) {}

  absl::Status Fill(Landmarks* landmarks) {
    const int64_t jobs = (options_.runs + kRunsPerJob - 1) / kRunsPerJob;
    landmarks->now_ns = absl::ToUnixNanos(absl::Now());
    const int64_t first_ns = landmarks->now_ns - kHistoryDays * kNsPerDay;
    const int64_t spacing_ns = kHistoryDays * kNsPerDay / jobs;

    if (auto s = InsertSchedules(first_ns); !s.ok()) return s;
    landmarks->schedule_id = schedule_ids_[0];

    insert_ms_.reserve(options_.runs);
    int64_t runs_left = options_.runs;
    const Clock::time_point start = Clock::now();
    for (int64_t j = 0; j < jobs; ++j) {
      // Every fifth job is scheduled; schedules take turns.
      const bool scheduled = j % 5 == 0;
      const int schedule = static_cast<int>((j / 5) % kSchedules);
      const int workload = scheduled ? schedule % kWorkloadCount
                                     : static_cast<int>(rng_() % kWorkloadCount);
      const bool train = scheduled ? schedule % 3 == 0 : Uniform() < 0.7;
      const int host = scheduled ? schedule % kHostCount
                                 : static_cast<int>(rng_() % kHostCount);
      const int64_t submit_ns =
          first_ns + j * spacing_ns + static_cast<int64_t>(Uniform() * spacing_ns / 2);
      const int runs = static_cast<int>(std::min<int64_t>(kRunsPerJob, runs_left));
      runs_left -= runs;

      v1::Job job;
      *job.mutable_spec() = Spec(workload, train);
      job.set_state(JobStateFor(j, jobs));
      *job.mutable_submit_time() = Ts(submit_ns);
      const int64_t job_start_ns = submit_ns + static_cast<int64_t>(Uniform() * 60) * kNsPerSecond;
      *job.mutable_start_time() = Ts(job_start_ns);
      job.set_host_id(kHosts[host]);
      job.set_run_count(runs);
      job.set_attempt(1);
      if (scheduled) job.set_schedule_id(schedule_ids_[schedule]);
      if (job.state() == v1::JOB_STATE_FAILED) {
        job.set_error("worker ended early: signal 9");
        job.set_worker_exit("signal 9");
      }

      std::vector<v1::Run> run_records;
      int64_t run_start_ns = job_start_ns;
      for (int r = 0; r < runs; ++r) {
        run_records.push_back(MakeRun(job, workload, train, host, r, run_start_ns, scheduled));
        run_start_ns = TimeUtil::TimestampToNanoseconds(run_records.back().end_time()) +
                       kNsPerSecond;
      }
      job.set_runs_done(runs);
      if (job.state() != v1::JOB_STATE_RUNNING) *job.mutable_end_time() = Ts(run_start_ns);
      (*job.mutable_max_batch_size_fits())[kWorkloads[workload]] = MaxFit(workload);

      auto job_id = store_->jobs().Insert(job);
      if (!job_id.ok()) return job_id.status();
      for (v1::Run& run : run_records) {
        run.set_job_id(*job_id);
        const Clock::time_point t = Clock::now();
        auto run_id = store_->runs().Insert(run);
        insert_ms_.push_back(MsSince(t));
        if (!run_id.ok()) return run_id.status();
        if (j == jobs / 2 && run.index() == 7) {
          landmarks->job_id = *job_id;
          landmarks->run_id = *run_id;
        }
        if (scheduled && schedule == 0 && run.index() == 7) {
          landmarks->schedule_config = run.config();
          landmarks->schedule_last_job_id = *job_id;
        }
      }
      const int64_t done = options_.runs - runs_left;
      if (done % 10000 < runs && done > 0) {
        const double s = MsSince(start) / 1000;
        std::cout << absl::StrFormat("  %7d runs  %7.1f s  %7.0f runs/s\n", done, s,
                                     done / s)
                  << std::flush;
      }
    }
    fill_ms_ = MsSince(start);
    return absl::OkStatus();
  }

  double fill_ms() const { return fill_ms_; }
  const std::vector<double>& insert_ms() const { return insert_ms_; }

 private:
  absl::Status InsertSchedules(int64_t first_ns) {
    for (int i = 0; i < kSchedules; ++i) {
      v1::Schedule schedule;
      schedule.set_name(absl::StrCat("nightly-", kWorkloads[i % kWorkloadCount], "-", i));
      schedule.set_cron("0 2 * * *");
      *schedule.mutable_spec() = Spec(i % kWorkloadCount, i % 3 == 0);
      schedule.set_history_window(7);
      schedule.set_regression_threshold(0.05);
      *schedule.mutable_create_time() = Ts(first_ns);
      auto id = store_->schedules().Insert(schedule);
      if (!id.ok()) return id.status();
      schedule_ids_.push_back(*id);
    }
    return absl::OkStatus();
  }

  double Uniform() { return std::uniform_real_distribution<double>(0, 1)(rng_); }
  double Normal(double mean, double stddev) {
    return std::normal_distribution<double>(mean, stddev)(rng_);
  }

  // Mostly finished jobs, as in a daemon that has been up for months; the
  // newest one is still running.
  v1::JobState JobStateFor(int64_t j, int64_t jobs) {
    if (j == jobs - 1) return v1::JOB_STATE_RUNNING;
    const double u = Uniform();
    if (u < 0.04) return v1::JOB_STATE_FAILED;
    if (u < 0.06) return v1::JOB_STATE_CANCELLED;
    if (u < 0.08) return v1::JOB_STATE_INTERRUPTED;
    return v1::JOB_STATE_SUCCEEDED;
  }

  static int MaxFit(int workload) { return workload == 3 || workload == 4 ? 64 : 128; }

  v1::JobSpec Spec(int workload, bool train) {
    v1::JobSpec spec;
    spec.set_name(absl::StrCat(kWorkloads[workload], train ? "-train" : "-infer",
                               "-sweep"));
    v1::RunConfig* base = spec.mutable_base();
    base->set_workload(kWorkloads[workload]);
    base->set_mode(train ? v1::MODE_TRAIN : v1::MODE_INFER);
    base->set_device("cuda:0");
    base->set_execution(v1::EXECUTION_EAGER);
    base->set_input_source(v1::INPUT_SOURCE_DEVICE);
    if (train) base->set_optimizer(v1::OPTIMIZER_ADAMW);
    if (workload == 0) base->mutable_params()->set_model_size("medium");
    if (workload == 3) base->set_channels_last(true);
    for (int b : kBatchSizes) spec.mutable_sweep()->add_batch_size(b);
    for (v1::Precision p : kPrecisions) spec.mutable_sweep()->add_precision(p);
    spec.mutable_measurement()->set_min_iterations(kSamplesPerRun);
    (*spec.mutable_labels())["team"] = workload < 4 ? "vision" : "nlp";
    return spec;
  }

  v1::Run MakeRun(const v1::Job& job, int workload, bool train, int host, int index,
                  int64_t start_ns, bool scheduled) {
    // Sweep order: the last declared axis (batch_size) varies fastest.
    const int precision = index / 5, batch = kBatchSizes[index % 5];
    v1::Run run;
    run.set_index(index);
    *run.mutable_config() = job.spec().base();
    run.mutable_config()->set_batch_size(batch);
    run.mutable_config()->set_precision(kPrecisions[precision]);
    run.set_host_id(kHosts[host]);
    *run.mutable_start_time() = Ts(start_ns);

    const bool oom = batch > MaxFit(workload) && precision < 2;
    const bool failed = job.state() == v1::JOB_STATE_FAILED && index >= 12;
    v1::RunResult* result = run.mutable_result();
    double duration_s;
    if (failed) {
      run.set_state(v1::RUN_STATE_FAILED);
      run.set_error("worker ended early: signal 9");
      duration_s = 2 + Uniform() * 5;
    } else if (oom) {
      run.set_state(v1::RUN_STATE_OUT_OF_MEMORY);
      run.set_error("CUDA out of memory. Tried to allocate 2.00 GiB");
      result->mutable_memory()->set_peak_device_allocated_bytes(79LL << 30);
      duration_s = 3 + Uniform() * 3;
    } else {
      run.set_state(v1::RUN_STATE_SUCCEEDED);
      const double throughput = kBaseThroughput[workload] * kHostSpeed[host] *
                                kPrecisionSpeedup[precision] *
                                std::pow(batch / 32.0, 0.35) * (train ? 1 : 2.7) *
                                std::max(0.5, Normal(1, 0.02));
      const double step_ms = 1000.0 * batch / throughput;
      result->set_throughput_samples_per_s(throughput);
      result->set_throughput_ci_low(throughput * 0.99);
      result->set_throughput_ci_high(throughput * 1.01);
      v1::LatencyStats* latency = result->mutable_latency();
      latency->set_mean_ms(step_ms);
      latency->set_stddev_ms(step_ms * 0.02);
      latency->set_p50_ms(step_ms);
      latency->set_p90_ms(step_ms * 1.03);
      latency->set_p95_ms(step_ms * 1.05);
      latency->set_p99_ms(step_ms * 1.1);
      latency->set_max_ms(step_ms * 1.4);
      latency->set_min_ms(step_ms * 0.97);
      *result->mutable_host_latency() = *latency;
      result->set_device_busy_share(0.93);
      result->set_cold_start_ms(step_ms * 40 + 300);
      result->mutable_memory()->set_peak_device_allocated_bytes(
          static_cast<int64_t>(batch) * (workload + 1) * (48LL << 20));
      result->mutable_memory()->set_peak_device_reserved_bytes(
          static_cast<int64_t>(batch) * (workload + 1) * (52LL << 20));
      result->mutable_memory()->set_peak_host_rss_bytes(3LL << 30);
      result->set_parameter_count(kParameterCount[workload]);
      result->set_iterations(kSamplesPerRun);
      result->set_measured_ms(step_ms * kSamplesPerRun);
      result->set_stable(Uniform() < 0.95);
      result->set_window_cv(0.004 + Uniform() * 0.02);
      result->set_resolved_device("cuda:0");
      if (train) {
        result->set_first_loss(6.9);
        result->set_last_loss(6.9 - Uniform());
      }
      FillTelemetry(throughput, step_ms, result->mutable_telemetry());

      v1::IterationSamples* samples = run.mutable_samples();
      samples->mutable_device_ms()->Reserve(kSamplesPerRun);
      for (int k = 0; k < kSamplesPerRun; ++k) {
        samples->add_device_ms(static_cast<float>(step_ms * std::max(0.5, Normal(1, 0.02))));
      }
      duration_s = 5 + step_ms * kSamplesPerRun / 1000 + Uniform() * 20;

      if (scheduled) FillHistory(throughput, run.mutable_history());
    }
    *run.mutable_end_time() = Ts(start_ns + static_cast<int64_t>(duration_s * kNsPerSecond));
    return run;
  }

  void FillTelemetry(double throughput, double step_ms, v1::TelemetrySummary* telemetry) {
    telemetry->set_available(true);
    telemetry->set_sample_count(static_cast<int>(step_ms * kSamplesPerRun / 100) + 1);
    telemetry->mutable_gpu_utilization_pct()->set_mean(90 + Uniform() * 9);
    telemetry->mutable_gpu_utilization_pct()->set_max(100);
    telemetry->mutable_power_w()->set_mean(350 + Uniform() * 300);
    telemetry->mutable_power_w()->set_max(700);
    telemetry->mutable_temperature_c()->set_mean(55 + Uniform() * 20);
    telemetry->mutable_temperature_c()->set_max(80);
    telemetry->mutable_sm_clock_mhz()->set_mean(1980);
    telemetry->mutable_sm_clock_mhz()->set_max(1980);
    telemetry->set_energy_j(telemetry->power_w().mean() * step_ms * kSamplesPerRun / 1000);
    telemetry->set_samples_per_joule(throughput / telemetry->power_w().mean());
  }

  // A few flagged runs, so ListFlaggedRuns has something to return.
  void FillHistory(double throughput, v1::HistoryComparison* history) {
    const double u = Uniform();
    history->set_verdict(u < 0.03   ? v1::VERDICT_REGRESSED
                         : u < 0.05 ? v1::VERDICT_IMPROVED
                                    : v1::VERDICT_NO_CHANGE);
    history->set_baseline_median_samples_per_s(throughput);
    history->set_value_samples_per_s(throughput);
    history->set_ratio(1.0);
    history->set_history_count(7);
    history->set_history_spread(0.01);
  }

  storage::Store* const store_;
  const BenchOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::string> schedule_ids_;
  std::vector<double> insert_ms_;
  double fill_ms_ = 0;
};

}  // namespace gpubench::bench

#endif  // GPUBENCH_BENCH_STORE_HISTORY_H_
