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
#include "bench/store_history.h"
#include "storage/store.h"

namespace gpubench::bench {
namespace {


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

// A fresh file filled with the history (a fresh file every time: the
// figures are for a store filled from empty); its landmarks.
absl::StatusOr<Landmarks> Fill(const BenchOptions& options) {
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
  return landmarks;
}

// The timed queries against one open store: each adds its figure, and the
// first error stops the rest (status()).
class Queries {
 public:
  Queries(storage::Store* store, int reps) : store_(store), reps_(reps) {}

  void Time(const std::string& name, const std::function<absl::StatusOr<int64_t>()>& query) {
    Add(bench::Time(name, reps_, query));
  }
  void TimeOnce(const std::string& name, const std::function<absl::StatusOr<int64_t>()>& op) {
    Add(bench::TimeOnce(name, op));
  }
  void Jobs(const std::string& name, const storage::JobFilter& filter) {
    storage::Store* store = store_;
    Time(name, [store, filter] { return Count(store->jobs().List(filter, 0, "")); });
  }
  void Runs(const std::string& name, const storage::RunFilter& filter) {
    storage::Store* store = store_;
    Time(name, [store, filter] { return Count(store->runs().Query(filter, 0, "")); });
  }

  // Stops the rest with an error of the harness's own.
  void Fail(const absl::Status& status) {
    if (status_.ok()) status_ = status;
  }

  storage::Store* store() const { return store_; }
  const absl::Status& status() const { return status_; }
  const std::vector<Figure>& figures() const { return figures_; }

 private:
  void Add(absl::StatusOr<Figure> f) {
    if (!status_.ok()) return;
    if (!f.ok()) {
      status_ = f.status();
      return;
    }
    figures_.push_back(std::move(*f));
  }

  storage::Store* const store_;
  const int reps_;
  std::vector<Figure> figures_;
  absl::Status status_;
};

// Page `pages` of a listing from the first via page tokens; the last page's
// row count, *token left at the next page's.
template <typename List>
absl::StatusOr<int64_t> Walk(const List& list, int pages, std::string* token) {
  int64_t rows = 0;
  for (int p = 0; p < pages; ++p) {
    auto page = list(*token);
    if (!page.ok()) return page.status();
    rows = page->items.size();
    *token = page->next_page_token;
  }
  return rows;
}

// ListJobs by each filter the CLI offers, and paging: the whole walk from
// page 1, and the 10th page alone from the token the 9th returned (keyset
// paging should make it as cheap as page 1).
void TimeJobQueries(Queries& q, const Landmarks& landmarks) {
  storage::Store* store = q.store();
  storage::JobFilter failed, active, by_workload, by_schedule, week;
  failed.states = {v1::JOB_STATE_FAILED};
  active.states = {v1::JOB_STATE_RUNNING, v1::JOB_STATE_QUEUED};
  by_workload.workload = "resnet50";
  by_schedule.schedule_id = landmarks.schedule_id;
  week.submitted_after_ns = landmarks.now_ns - 37 * kNsPerDay;
  week.submitted_before_ns = landmarks.now_ns - 30 * kNsPerDay;
  q.Jobs("ListJobs first page, no filter", {});
  q.Jobs("ListJobs state=FAILED", failed);
  q.Time("ListJobs state=RUNNING|QUEUED, page 1000 (daemon start)",
         [store, active] { return Count(store->jobs().List(active, 1000, "")); });
  q.Jobs("ListJobs workload=resnet50", by_workload);
  q.Jobs("ListJobs schedule_id", by_schedule);
  q.Jobs("ListJobs submitted 37..30 days ago", week);
  auto list = [store](const std::string& token) { return store->jobs().List({}, 0, token); };
  q.Time("ListJobs pages 1..10 via page tokens (10 calls)", [list] {
    std::string token;
    return Walk(list, 10, &token);
  });
  std::string token_9;
  if (auto r = Walk(list, 9, &token_9); !r.ok()) return q.Fail(r.status());
  q.Time("ListJobs page 10 alone (token of page 9)",
         [store, token_9] { return Count(store->jobs().List({}, 0, token_9)); });
}

// QueryRuns by each filter, and its paging as ListJobs'.
void TimeRunQueries(Queries& q, const Landmarks& landmarks) {
  storage::Store* store = q.store();
  const auto batch = [](const char* text) {
    return std::vector<ConfigPredicate>{*ParseConfigPredicate(text, "config_equals")};
  };
  storage::RunFilter workload, config, no_match, host, combined, week, job, failed;
  workload.workload = "resnet50";
  config.config_equals = batch("batch_size=32");
  no_match.config_equals = batch("batch_size=48");
  host.host_id = kHosts[1];
  combined = config;
  combined.workload = "resnet50";
  combined.host_id = kHosts[1];
  week.started_after_ns = landmarks.now_ns - 37 * kNsPerDay;
  week.started_before_ns = landmarks.now_ns - 30 * kNsPerDay;
  job.job_id = landmarks.job_id;
  failed.states = {v1::RUN_STATE_FAILED};
  q.Runs("QueryRuns first page, no filter", {});
  q.Runs("QueryRuns workload=resnet50", workload);
  q.Runs("QueryRuns config batch_size=32", config);
  q.Runs("QueryRuns host_id", host);
  q.Runs("QueryRuns workload+batch_size=32+host_id", combined);
  q.Runs("QueryRuns started 37..30 days ago", week);
  q.Runs("QueryRuns job_id", job);
  q.Runs("QueryRuns config batch_size=48 (matches nothing)", no_match);
  q.Runs("QueryRuns state=FAILED", failed);
  auto list = [store](const storage::RunFilter& filter) {
    return [store, filter](const std::string& token) {
      return store->runs().Query(filter, 0, token);
    };
  };
  q.Time("QueryRuns pages 1..10 via page tokens (10 calls)", [all = list({})] {
    std::string token;
    return Walk(all, 10, &token);
  });
  for (const auto& [name, filter] : {std::pair<std::string, storage::RunFilter>{
                                         "QueryRuns page 10 alone (token of page 9)", {}},
                                     {"QueryRuns workload=resnet50 page 10 alone", workload}}) {
    std::string token_9;
    if (auto r = Walk(list(filter), 9, &token_9); !r.ok()) return q.Fail(r.status());
    q.Time(name, [store, filter = filter, token_9] {
      return Count(store->runs().Query(filter, 0, token_9));
    });
  }
}

// One run, one job's runs, a schedule's history, the flagged runs.
void TimeGets(Queries& q, const Landmarks& landmarks) {
  storage::Store* store = q.store();
  const std::string run_id = landmarks.run_id, job_id = landmarks.job_id;
  for (bool samples : {false, true}) {
    q.Time(samples ? "GetRun with samples" : "GetRun without samples",
           [store, run_id, samples] { return Count(store->runs().Get(run_id, samples)); });
  }
  for (bool samples : {false, true}) {
    q.Time(samples ? "ListRuns of a job, with samples" : "ListRuns of a job, without samples",
           [store, job_id, samples] { return Count(store->runs().List(job_id, samples)); });
  }
  const std::string schedule_id = landmarks.schedule_id;
  const std::string exclude = landmarks.schedule_last_job_id;
  const v1::RunConfig config = landmarks.schedule_config;
  q.Time("ScheduleHistory of a config, limit 7", [store, schedule_id, config, exclude] {
    return Count(store->runs().ScheduleHistory(schedule_id, config, 7, exclude));
  });
  const int64_t since_ns = landmarks.now_ns - 30 * kNsPerDay;
  for (bool improvements : {false, true}) {
    q.Time(improvements ? "ListFlaggedRuns since 30 days ago, with improvements"
                        : "ListFlaggedRuns since 30 days ago",
           [store, since_ns, improvements] {
             return Count(store->runs().ListFlagged(since_ns, improvements));
           });
  }
}

absl::Status RunBench(const BenchOptions& options) {
  std::cout << absl::StrFormat(
      "store_bench: %d runs, %d per job, %d samples per run, %d schedules, "
      "seed %d, %d timed reps per query\n",
      options.runs, kRunsPerJob, kSamplesPerRun, kSchedules, options.seed, options.reps);
  std::cout << "SQLite " << sqlite3_libversion() << ", database " << options.db_path
            << "\n";
  absl::StatusOr<Landmarks> landmarks = Fill(options);
  if (!landmarks.ok()) return landmarks.status();

  std::cout << "\n== queries (median of " << options.reps << ")\n";
  // The CLI opens the store per command, so Open is part of every query it
  // makes in local mode.
  auto open = Time("Store::Open (existing file)", options.reps, [&]() -> absl::StatusOr<int64_t> {
    auto store = storage::Store::Open({options.db_path});
    if (!store.ok()) return store.status();
    return 0;
  });
  if (!open.ok()) return open.status();
  auto opened = storage::Store::Open({options.db_path});
  if (!opened.ok()) return opened.status();
  Queries q(opened->get(), options.reps);
  TimeJobQueries(q, *landmarks);
  TimeRunQueries(q, *landmarks);
  TimeGets(q, *landmarks);
  // Last: Prune deletes. The daemon calls it after every job, so the second,
  // nothing-left-to-drop call is the steady-state cost.
  storage::RetentionLimits limits;
  limits.max_runs_with_samples = 10000;
  storage::Store* store = opened->get();
  auto prune = [store, limits]() -> absl::StatusOr<int64_t> { return store->runs().Prune(limits); };
  q.TimeOnce("Prune keep samples of 10000 runs (first)", prune);
  q.Time("Prune keep samples of 10000 runs (steady state)", prune);
  if (!q.status().ok()) return q.status();
  PrintFileSizes(options.db_path, "after prune, store open");
  opened->reset();
  PrintFileSizes(options.db_path, "after prune and close");

  std::cout << "\n== summary (" << options.runs << " runs)\n";
  // A literal: absl::StrFormat checks the format at compile time, and clang
  // refuses one held in a variable.
  std::cout << absl::StrFormat("%-58s %10s %10s %7s\n", "query", "median ms", "max ms",
                               "rows");
  std::vector<Figure> figures = {*open};
  figures.insert(figures.end(), q.figures().begin(), q.figures().end());
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
