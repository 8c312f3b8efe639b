// store_bench: fills a fresh SQLite store with a realistic history through
// the Store API, then times the queries the CLI and the daemon make against
// it. A benchmark, not a test: it prints figures and asserts nothing about
// speed.
//
// Usage: store_bench [--runs N] [--reps N] [--seed N] [--db PATH | PATH]
//   --runs N   runs to store, 20 per job (default 100000)
//   --reps N   timed repetitions per query, after one untimed (default 9)
//   --seed N   seed of the generated history (default 1)
//   --db PATH  database file; replaced if present
//              (default /tmp/gpubench-store-bench/store.db)

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/filter.h"
#include "absl/time/time.h"
#include "google/protobuf/util/time_util.h"
#include "gpubench/v1/job.pb.h"
#include "gpubench/v1/result.pb.h"
#include "gpubench/v1/spec.pb.h"
#include "storage/store.h"

namespace gpubench::bench {
namespace {

using google::protobuf::util::TimeUtil;
using Clock = std::chrono::steady_clock;

constexpr int kRunsPerJob = 20;  // 5 batch sizes x 4 precisions
constexpr int kSchedules = 25;
constexpr int kSamplesPerRun = 200;
constexpr int64_t kNsPerSecond = 1000000000;
constexpr int64_t kNsPerDay = 86400 * kNsPerSecond;
constexpr int64_t kHistoryDays = 90;

constexpr const char* kWorkloads[] = {"mlp",    "simple_cnn", "resnet18",
                                      "resnet50", "unet",     "bilstm",
                                      "transformer", "matmul"};
// Samples per second at batch 32, fp32, on the fastest host; the other
// points scale from it, so throughput differs the way real sweeps do.
constexpr double kBaseThroughput[] = {450000, 90000, 5200, 1900,
                                      610,    14000, 2300, 38};
constexpr int64_t kParameterCount[] = {410000,   620000,   11700000, 25600000,
                                       31000000, 3500000,  44000000, 0};
constexpr int kBatchSizes[] = {8, 16, 32, 64, 128};
constexpr v1::Precision kPrecisions[] = {v1::PRECISION_FP32, v1::PRECISION_TF32,
                                         v1::PRECISION_FP16, v1::PRECISION_BF16};
constexpr double kPrecisionSpeedup[] = {1.0, 1.6, 2.4, 2.3};
constexpr const char* kHosts[] = {"gpu-h100-a.3f9c1e20", "gpu-h100-b.77d2a04b",
                                  "gpu-a100-c.0b41f5d9"};
constexpr double kHostSpeed[] = {1.0, 0.97, 0.55};
constexpr int kWorkloadCount = sizeof(kWorkloads) / sizeof(kWorkloads[0]);
constexpr int kHostCount = sizeof(kHosts) / sizeof(kHosts[0]);

struct BenchOptions {
  int64_t runs = 100000;  // runs stored; rounded up to whole jobs
  int reps = 9;           // timed repetitions per query
  uint64_t seed = 1;      // seed of the generated history
  std::string db_path = "/tmp/gpubench-store-bench/store.db";
};

absl::StatusOr<BenchOptions> ParseFlags(int argc, char** argv) {
  BenchOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) -> absl::StatusOr<std::string> {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(absl::StrCat(flag, ": needs a value"));
      }
      return std::string(argv[++i]);
    };
    if (arg == "--runs" || arg == "--reps" || arg == "--seed") {
      auto v = value(arg.c_str());
      if (!v.ok()) return v.status();
      int64_t n;
      if (!absl::SimpleAtoi(*v, &n) || n < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(arg, ": must be a positive integer, got \"", *v, "\""));
      }
      if (arg == "--runs") options.runs = n;
      if (arg == "--reps") options.reps = static_cast<int>(n);
      if (arg == "--seed") options.seed = static_cast<uint64_t>(n);
    } else if (arg == "--db") {
      auto v = value("--db");
      if (!v.ok()) return v.status();
      options.db_path = *v;
    } else if (!arg.empty() && arg[0] != '-') {
      options.db_path = arg;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag \"", arg, "\""));
    }
  }
  return options;
}

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int64_t FileBytes(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

std::string Mib(int64_t bytes) {
  return absl::StrFormat("%.1f MiB", bytes / (1024.0 * 1024.0));
}

void PrintFileSizes(const std::string& path, const char* when) {
  const int64_t db = FileBytes(path), wal = FileBytes(path + "-wal");
  std::cout << absl::StrFormat("database size %s: %s (%d bytes) + WAL %s\n", when,
                               Mib(db), db, Mib(wal));
}

google::protobuf::Timestamp Ts(int64_t ns) {
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
      v1::TelemetrySummary* telemetry = result->mutable_telemetry();
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

      v1::IterationSamples* samples = run.mutable_samples();
      samples->mutable_device_ms()->Reserve(kSamplesPerRun);
      for (int k = 0; k < kSamplesPerRun; ++k) {
        samples->add_device_ms(static_cast<float>(step_ms * std::max(0.5, Normal(1, 0.02))));
      }
      duration_s = 5 + step_ms * kSamplesPerRun / 1000 + Uniform() * 20;

      if (scheduled) {
        // A few flagged runs, so ListFlaggedRuns has something to return.
        v1::HistoryComparison* history = run.mutable_history();
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
    }
    *run.mutable_end_time() = Ts(start_ns + static_cast<int64_t>(duration_s * kNsPerSecond));
    return run;
  }

  storage::Store* const store_;
  const BenchOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::string> schedule_ids_;
  std::vector<double> insert_ms_;
  double fill_ms_ = 0;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = p * (v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

struct Figure {
  std::string query;
  double median_ms = 0;
  double max_ms = 0;
  int64_t rows = 0;
  int reps = 0;
};

// Runs `query` once untimed (to prepare the page cache as a busy daemon
// would have it), then `reps` times timed. The query returns its row count.
absl::StatusOr<Figure> Time(const std::string& name, int reps,
                            const std::function<absl::StatusOr<int64_t>()>& query) {
  Figure figure{name};
  if (auto warm = query(); !warm.ok()) {
    return absl::Status(warm.status().code(),
                        absl::StrCat(name, ": ", warm.status().message()));
  }
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const Clock::time_point start = Clock::now();
    auto rows = query();
    ms.push_back(MsSince(start));
    if (!rows.ok()) {
      return absl::Status(rows.status().code(),
                          absl::StrCat(name, ": ", rows.status().message()));
    }
    figure.rows = *rows;
  }
  figure.median_ms = Percentile(ms, 0.5);
  figure.max_ms = *std::max_element(ms.begin(), ms.end());
  figure.reps = reps;
  std::cout << absl::StrFormat("  %-58s %9.3f ms  (max %9.3f, %d rows)\n", name,
                               figure.median_ms, figure.max_ms, figure.rows)
            << std::flush;
  return figure;
}

// One timed call of something that changes the store, so it cannot be
// repeated on the same data.
absl::StatusOr<Figure> TimeOnce(const std::string& name,
                                const std::function<absl::StatusOr<int64_t>()>& op) {
  const Clock::time_point start = Clock::now();
  auto rows = op();
  const double ms = MsSince(start);
  if (!rows.ok()) {
    return absl::Status(rows.status().code(),
                        absl::StrCat(name, ": ", rows.status().message()));
  }
  std::cout << absl::StrFormat("  %-58s %9.3f ms  (once, %d rows)\n", name, ms, *rows)
            << std::flush;
  return Figure{name, ms, ms, *rows, 1};
}

template <typename T>
absl::StatusOr<int64_t> Count(const absl::StatusOr<T>& result) {
  if (!result.ok()) return result.status();
  if constexpr (std::is_same_v<T, v1::Run>) {
    return 1;
  } else if constexpr (std::is_same_v<T, std::vector<v1::Run>>) {
    return static_cast<int64_t>(result->size());
  } else {
    return static_cast<int64_t>(result->items.size());
  }
}

absl::Status RunBench(const BenchOptions& options) {
  std::cout << absl::StrFormat(
      "store_bench: %d runs, %d per job, %d samples per run, %d schedules, "
      "seed %d, %d timed reps per query\n",
      options.runs, kRunsPerJob, kSamplesPerRun, kSchedules, options.seed, options.reps);
  std::cout << "SQLite " << sqlite3_libversion() << ", database " << options.db_path
            << "\n";

  // A fresh file every time: the figures are for a store filled from empty.
  const std::filesystem::path db(options.db_path);
  std::error_code ec;
  if (db.has_parent_path()) std::filesystem::create_directories(db.parent_path(), ec);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(options.db_path + suffix, ec);
  }

  Landmarks landmarks;
  {
    auto store = storage::Store::Open({options.db_path});
    if (!store.ok()) return store.status();
    std::cout << "\n== fill\n";
    HistoryFiller filler(store->get(), options);
    if (auto s = filler.Fill(&landmarks); !s.ok()) return s;
    const auto& insert_ms = filler.insert_ms();
    std::cout << absl::StrFormat(
        "fill: %d runs in %.1f s = %.0f runs/s (wall, incl. generating records)\n",
        options.runs, filler.fill_ms() / 1000, options.runs / (filler.fill_ms() / 1000));
    std::cout << absl::StrFormat(
        "InsertRun latency: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
        Percentile(insert_ms, 0.5), Percentile(insert_ms, 0.99),
        *std::max_element(insert_ms.begin(), insert_ms.end()));
    PrintFileSizes(options.db_path, "after fill, store open");
  }
  PrintFileSizes(options.db_path, "after close");

  std::vector<Figure> figures;
  auto add = [&](absl::StatusOr<Figure> f) -> absl::Status {
    if (!f.ok()) return f.status();
    figures.push_back(std::move(*f));
    return absl::OkStatus();
  };

  std::cout << "\n== queries (median of " << options.reps << ")\n";
  // The CLI opens the store per command, so Open is part of every query it
  // makes in local mode.
  if (auto s = add(Time("Store::Open (existing file)", options.reps,
                        [&]() -> absl::StatusOr<int64_t> {
                          auto store = storage::Store::Open({options.db_path});
                          if (!store.ok()) return store.status();
                          return 0;
                        }));
      !s.ok()) {
    return s;
  }
  auto opened = storage::Store::Open({options.db_path});
  if (!opened.ok()) return opened.status();
  storage::Store* store = opened->get();
  const int reps = options.reps;
  const int64_t now_ns = landmarks.now_ns;

  auto jobs = [&](std::string name, storage::JobFilter filter) {
    return add(Time(name, reps, [store, filter] {
      return Count(store->jobs().List(filter, 0, ""));
    }));
  };
  auto runs = [&](std::string name, storage::RunFilter filter) {
    return add(Time(name, reps, [store, filter] {
      return Count(store->runs().Query(filter, 0, ""));
    }));
  };

  storage::JobFilter failed;
  failed.states = {v1::JOB_STATE_FAILED};
  storage::JobFilter active;
  active.states = {v1::JOB_STATE_RUNNING, v1::JOB_STATE_QUEUED};
  storage::JobFilter by_workload;
  by_workload.workload = "resnet50";
  storage::JobFilter by_schedule;
  by_schedule.schedule_id = landmarks.schedule_id;
  storage::JobFilter jobs_week;
  jobs_week.submitted_after_ns = now_ns - 37 * kNsPerDay;
  jobs_week.submitted_before_ns = now_ns - 30 * kNsPerDay;

  storage::RunFilter run_workload;
  run_workload.workload = "resnet50";
  storage::RunFilter run_config;
  run_config.config_equals = {*ParseConfigPredicate("batch_size=32", "config_equals")};
  storage::RunFilter run_no_match;
  run_no_match.config_equals = {*ParseConfigPredicate("batch_size=48", "config_equals")};
  storage::RunFilter run_host;
  run_host.host_id = kHosts[1];
  storage::RunFilter run_combined;
  run_combined.workload = "resnet50";
  run_combined.config_equals = {*ParseConfigPredicate("batch_size=32", "config_equals")};
  run_combined.host_id = kHosts[1];
  storage::RunFilter run_week;
  run_week.started_after_ns = now_ns - 37 * kNsPerDay;
  run_week.started_before_ns = now_ns - 30 * kNsPerDay;
  storage::RunFilter run_job;
  run_job.job_id = landmarks.job_id;
  storage::RunFilter run_failed;
  run_failed.states = {v1::RUN_STATE_FAILED};

  absl::Status s;
  if (s = jobs("ListJobs first page, no filter", {}); !s.ok()) return s;
  if (s = jobs("ListJobs state=FAILED", failed); !s.ok()) return s;
  if (s = add(Time("ListJobs state=RUNNING|QUEUED, page 1000 (daemon start)", reps,
                   [store, active] { return Count(store->jobs().List(active, 1000, "")); }));
      !s.ok()) {
    return s;
  }
  if (s = jobs("ListJobs workload=resnet50", by_workload); !s.ok()) return s;
  if (s = jobs("ListJobs schedule_id", by_schedule); !s.ok()) return s;
  if (s = jobs("ListJobs submitted 37..30 days ago", jobs_week); !s.ok()) return s;

  // Paging: the whole walk from page 1, and the 10th page alone from the
  // token the 9th returned (keyset paging should make it as cheap as page 1).
  auto walk_jobs = [store](int pages, std::string* token) -> absl::StatusOr<int64_t> {
    int64_t rows = 0;
    for (int p = 0; p < pages; ++p) {
      auto page = store->jobs().List({}, 0, *token);
      if (!page.ok()) return page.status();
      rows = page->items.size();
      *token = page->next_page_token;
    }
    return rows;
  };
  if (s = add(Time("ListJobs pages 1..10 via page tokens (10 calls)", reps,
                   [walk_jobs] {
                     std::string token;
                     return walk_jobs(10, &token);
                   }));
      !s.ok()) {
    return s;
  }
  std::string job_token_9;
  if (auto r = walk_jobs(9, &job_token_9); !r.ok()) return r.status();
  if (s = add(Time("ListJobs page 10 alone (token of page 9)", reps,
                   [store, job_token_9] {
                     return Count(store->jobs().List({}, 0, job_token_9));
                   }));
      !s.ok()) {
    return s;
  }

  if (s = runs("QueryRuns first page, no filter", {}); !s.ok()) return s;
  if (s = runs("QueryRuns workload=resnet50", run_workload); !s.ok()) return s;
  if (s = runs("QueryRuns config batch_size=32", run_config); !s.ok()) return s;
  if (s = runs("QueryRuns host_id", run_host); !s.ok()) return s;
  if (s = runs("QueryRuns workload+batch_size=32+host_id", run_combined); !s.ok()) {
    return s;
  }
  if (s = runs("QueryRuns started 37..30 days ago", run_week); !s.ok()) return s;
  if (s = runs("QueryRuns job_id", run_job); !s.ok()) return s;
  if (s = runs("QueryRuns config batch_size=48 (matches nothing)", run_no_match);
      !s.ok()) {
    return s;
  }
  if (s = runs("QueryRuns state=FAILED", run_failed); !s.ok()) return s;

  auto walk_runs = [store](const storage::RunFilter& filter, int pages,
                           std::string* token) -> absl::StatusOr<int64_t> {
    int64_t rows = 0;
    for (int p = 0; p < pages; ++p) {
      auto page = store->runs().Query(filter, 0, *token);
      if (!page.ok()) return page.status();
      rows = page->items.size();
      *token = page->next_page_token;
    }
    return rows;
  };
  if (s = add(Time("QueryRuns pages 1..10 via page tokens (10 calls)", reps,
                   [walk_runs] {
                     std::string token;
                     return walk_runs({}, 10, &token);
                   }));
      !s.ok()) {
    return s;
  }
  std::string run_token_9;
  if (auto r = walk_runs({}, 9, &run_token_9); !r.ok()) return r.status();
  if (s = add(Time("QueryRuns page 10 alone (token of page 9)", reps,
                   [store, run_token_9] {
                     return Count(store->runs().Query({}, 0, run_token_9));
                   }));
      !s.ok()) {
    return s;
  }
  std::string run_workload_token_9;
  if (auto r = walk_runs(run_workload, 9, &run_workload_token_9); !r.ok()) {
    return r.status();
  }
  if (s = add(Time("QueryRuns workload=resnet50 page 10 alone", reps,
                   [store, run_workload, run_workload_token_9] {
                     return Count(store->runs().Query(run_workload, 0, run_workload_token_9));
                   }));
      !s.ok()) {
    return s;
  }

  const std::string run_id = landmarks.run_id, job_id = landmarks.job_id;
  if (s = add(Time("GetRun without samples", reps,
                   [store, run_id] { return Count(store->runs().Get(run_id, false)); }));
      !s.ok()) {
    return s;
  }
  if (s = add(Time("GetRun with samples", reps,
                   [store, run_id] { return Count(store->runs().Get(run_id, true)); }));
      !s.ok()) {
    return s;
  }
  if (s = add(Time("ListRuns of a job, without samples", reps,
                   [store, job_id] { return Count(store->runs().List(job_id, false)); }));
      !s.ok()) {
    return s;
  }
  if (s = add(Time("ListRuns of a job, with samples", reps,
                   [store, job_id] { return Count(store->runs().List(job_id, true)); }));
      !s.ok()) {
    return s;
  }
  const std::string schedule_id = landmarks.schedule_id;
  const std::string exclude = landmarks.schedule_last_job_id;
  const v1::RunConfig config = landmarks.schedule_config;
  if (s = add(Time("ScheduleHistory of a config, limit 7", reps,
                   [store, schedule_id, config, exclude] {
                     return Count(store->runs().ScheduleHistory(schedule_id, config, 7, exclude));
                   }));
      !s.ok()) {
    return s;
  }
  const int64_t since_ns = now_ns - 30 * kNsPerDay;
  if (s = add(Time("ListFlaggedRuns since 30 days ago", reps,
                   [store, since_ns] { return Count(store->runs().ListFlagged(since_ns, false)); }));
      !s.ok()) {
    return s;
  }
  if (s = add(Time("ListFlaggedRuns since 30 days ago, with improvements", reps,
                   [store, since_ns] { return Count(store->runs().ListFlagged(since_ns, true)); }));
      !s.ok()) {
    return s;
  }

  // Last: Prune deletes. The daemon calls it after every job, so the second,
  // nothing-left-to-drop call is the steady-state cost.
  storage::RetentionLimits limits;
  limits.max_runs_with_samples = 10000;
  auto prune = [store, limits]() -> absl::StatusOr<int64_t> { return store->runs().Prune(limits); };
  if (s = add(TimeOnce("Prune keep samples of 10000 runs (first)", prune)); !s.ok()) {
    return s;
  }
  if (s = add(Time("Prune keep samples of 10000 runs (steady state)", reps, prune));
      !s.ok()) {
    return s;
  }
  PrintFileSizes(options.db_path, "after prune, store open");
  opened->reset();
  PrintFileSizes(options.db_path, "after prune and close");

  std::cout << "\n== summary (" << options.runs << " runs)\n";
  // A literal: absl::StrFormat checks the format at compile time, and clang
  // refuses one held in a variable.
  std::cout << absl::StrFormat("%-58s %10s %10s %7s\n", "query", "median ms", "max ms",
                               "rows");
  for (const Figure& f : figures) {
    std::cout << absl::StrFormat("%-58s %10.3f %10.3f %7d%s\n", f.query, f.median_ms,
                                 f.max_ms, f.rows, f.median_ms > 20 ? "  <-- slow" : "");
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace gpubench::bench

int main(int argc, char** argv) {
  auto options = gpubench::bench::ParseFlags(argc, argv);
  if (!options.ok()) {
    std::cerr << "store_bench: " << options.status().message() << "\n";
    return 2;
  }
  if (auto s = gpubench::bench::RunBench(*options); !s.ok()) {
    std::cerr << "store_bench: " << s << "\n";
    return 1;
  }
  return 0;
}
