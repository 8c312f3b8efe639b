// `gpubench export` against real daemons: JSON Lines that DuckDB reads as
// they are, and a real PostgreSQL server loaded twice with nothing added the
// second time.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "absl/time/clock.h"
#include "client/cli.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "storage/store.h"
#include "tests/client/cli_test_util.h"
#include "tests/support/command.h"
#include "tests/support/daemon_process.h"
#include "tests/support/postgres_server.h"

namespace gpubench::client {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;
using testing_support::PostgresServer;
using testing_support::RunCommand;

// What a model's error may hold: a tab, a line break, a backslash, quotes.
constexpr char kAwkwardError[] = "bad\tinput\r\nline \\2 \"q\" 'x'\n\\.";

// Plants in d's store a failed run of an H100 with a full fingerprint and an
// awkward error; returns its run id.
std::string PlantH100Run(const Daemon& d) {
  auto store = storage::Store::Open({d.data_dir() + "/gpubench.db"});
  EXPECT_TRUE(store.ok()) << store.status();
  v1::Job job;
  job.set_state(v1::JOB_STATE_FAILED);
  v1::Run run;
  run.set_job_id(*(*store)->jobs().Insert(job));
  run.set_state(v1::RUN_STATE_FAILED);
  run.set_error(kAwkwardError);
  run.mutable_config()->set_workload("resnet50");
  run.mutable_config()->set_batch_size(64);
  *run.mutable_start_time() =
      google::protobuf::util::TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(absl::Now()));
  v1::Fingerprint* f = run.mutable_fingerprint();
  f->set_gpu_name("NVIDIA H100 80GB HBM3");
  f->set_driver_version("580.159.04");
  f->set_power_limit_w(700);
  f->set_ecc_enabled(true);
  f->set_pcie_max_width(16);
  auto id = (*store)->runs().Insert(run);
  EXPECT_TRUE(id.ok()) << id.status();
  return id.ok() ? *id : "";
}

// Each line of text as a JSON object.
std::vector<google::protobuf::Struct> Records(const std::string& text) {
  std::vector<google::protobuf::Struct> records;
  for (const std::string& line : SplitLines(text)) {
    google::protobuf::Struct s;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &s).ok()) << line;
    records.push_back(std::move(s));
  }
  return records;
}

TEST(CliDaemon, ExportWritesJsonLinesEveryHostsRunsThatDuckDbReads) {
  Daemon a(FreshDir("cli_export_a")), b(FreshDir("cli_export_b"));
  ASSERT_TRUE(a.serving() && b.serving());
  for (const Daemon* d : {&a, &b}) {
    Result r = Cli(Tiny({"submit", "--host", d->address(), "--batch", "8,16", "--wait"}));
    ASSERT_EQ(r.code, kExitOk) << r.err;
  }
  const std::string planted = PlantH100Run(a);
  // A third host that is not there: said, and the others' runs stand.
  Result r = Cli({"export", "--host", a.address(), "--host", b.address(), "--host",
                  "127.0.0.1:1"});
  EXPECT_EQ(r.code, kExitUnreachable) << r.err;
  EXPECT_NE(r.err.find("exported 5 runs; 2 of 3 hosts answered; 1 unreachable (127.0.0.1:1)"),
            std::string::npos)
      << r.err;
  std::vector<google::protobuf::Struct> records = Records(r.out);
  ASSERT_EQ(records.size(), 5u) << r.out;
  std::set<std::string> keys;
  for (const auto& [key, value] : records[0].fields()) keys.insert(key);
  for (const auto& rec : records) {
    std::set<std::string> these;
    for (const auto& [key, value] : rec.fields()) these.insert(key);
    EXPECT_EQ(these, keys) << "every record has every column";
    const auto& f = rec.fields();
    if (f.at("run_id").string_value() == planted) {
      EXPECT_EQ(f.at("host").string_value(), a.address());
      EXPECT_EQ(f.at("state").string_value(), "failed");
      EXPECT_EQ(f.at("fp_gpu_name").string_value(), "NVIDIA H100 80GB HBM3");
      EXPECT_EQ(f.at("fp_power_limit_w").number_value(), 700);
      EXPECT_TRUE(f.at("fp_ecc_enabled").bool_value());
      EXPECT_EQ(f.at("fp_pcie_max_width").number_value(), 16);
      // No figure: null, not a made-up zero.
      EXPECT_TRUE(f.at("throughput_samples_per_s").has_null_value());
      EXPECT_NE(f.at("notes").string_value().find(kAwkwardError), std::string::npos);
    } else {
      EXPECT_EQ(f.at("state").string_value(), "succeeded");
      EXPECT_EQ(f.at("workload").string_value(), "mlp");
      EXPECT_GT(f.at("throughput_samples_per_s").number_value(), 0);
      EXPECT_GT(f.at("peak_rss_bytes").number_value(), 1e6);
      // The real worker's fingerprint: this LibTorch, and no GPU here.
      EXPECT_FALSE(f.at("fp_torch_version").string_value().empty());
      EXPECT_TRUE(f.at("fp_gpu_name").has_null_value());
    }
  }
  for (const char* column : {"host_id", "job_id", "start_time", "config", "p99_ms",
                             "peak_allocated_bytes", "tokens_per_s", "fp_driver_version",
                             "fp_cpu_quota_cores"}) {
    EXPECT_TRUE(keys.count(column)) << column;
  }

  // DuckDB reads the file as it is: the count, the types and the values.
  const std::string file = FreshDir("cli_export_duck") + "/runs.jsonl";
  std::ofstream(file) << r.out;
  auto duck = RunCommand(
      "python3 -c \"import duckdb; print(duckdb.sql(\\\"SELECT count(*), "
      "count(throughput_samples_per_s), max(fp_power_limit_w), "
      "sum(CASE WHEN state = 'succeeded' THEN 1 ELSE 0 END), "
      "typeof(any_value(start_time)) FROM read_json_auto('" + file +
      "')\\\").fetchall())\"");
  ASSERT_EQ(duck.exit_code, 0) << duck.output;
  EXPECT_NE(duck.output.find("[(5, 4, 700.0, 4, 'TIMESTAMP"), std::string::npos) << duck.output;
}

TEST(CliDaemon, ExportLoadsPostgresOnceAndAgainAddsNothing) {
  PostgresServer pg;
  ASSERT_TRUE(pg.started()) << pg.log();
  Daemon a(FreshDir("cli_export_pa")), b(FreshDir("cli_export_pb"));
  ASSERT_TRUE(a.serving() && b.serving());
  Result submitted = Cli(Tiny({"submit", "--host", a.address(), "--batch", "8,16", "--wait"}));
  ASSERT_EQ(submitted.code, kExitOk) << submitted.err;
  const std::string planted = PlantH100Run(b);
  const std::vector<std::string> load = {"export", "--host", a.address(), "--host",
                                         b.address(), "--to", pg.url()};
  Result first = Cli(load);
  ASSERT_EQ(first.code, kExitOk) << first.err;
  EXPECT_NE(first.err.find("exported 3 runs into gpubench_runs: 3 new, 0 updated, 0 unchanged"),
            std::string::npos)
      << first.err;
  Result again = Cli(load);
  ASSERT_EQ(again.code, kExitOk) << again.err;
  EXPECT_NE(again.err.find("3 runs into gpubench_runs: 0 new, 0 updated, 3 unchanged"),
            std::string::npos)
      << again.err;
  auto count = pg.Query("SELECT count(*), count(DISTINCT run_id) FROM gpubench_runs");
  EXPECT_EQ(count.output, "3|3\n");
  // Typed columns, and the awkward text exactly as the run holds it.
  auto row = pg.Query("SELECT fp_power_limit_w, fp_ecc_enabled, host, "
                      "pg_typeof(start_time), pg_typeof(peak_rss_bytes) FROM gpubench_runs "
                      "WHERE run_id = '" + planted + "'");
  EXPECT_EQ(row.output, "700|t|" + b.address() + "|timestamp with time zone|bigint\n")
      << row.output;
  auto notes = pg.Query("SELECT notes FROM gpubench_runs WHERE run_id = '" + planted + "'");
  EXPECT_EQ(notes.output, std::string(kAwkwardError) + "\n");
  // A new job's runs are added; the others stay as they were.
  submitted = Cli(Tiny({"submit", "--host", b.address(), "--wait"}));
  ASSERT_EQ(submitted.code, kExitOk) << submitted.err;
  Result third = Cli(load);
  EXPECT_NE(third.err.find("4 runs into gpubench_runs: 1 new, 0 updated, 3 unchanged"),
            std::string::npos)
      << third.err;
  // Only the workload asked for, into a table of the caller's naming.
  Result narrowed = Cli({"export", "--host", b.address(), "--workload", "resnet50", "--to",
                         pg.url(), "--table", "h100_runs"});
  EXPECT_EQ(narrowed.code, kExitOk) << narrowed.err;
  EXPECT_EQ(pg.Query("SELECT count(*) FROM h100_runs").output, "1\n");

  // Bad input names its flag; a server that is not there is unreachable.
  Result table = Cli({"export", "--host", a.address(), "--to", pg.url(), "--table",
                      "runs; DROP TABLE gpubench_runs"});
  EXPECT_EQ(table.code, kExitUsage);
  EXPECT_NE(table.err.find("--table"), std::string::npos) << table.err;
  Result scheme = Cli({"export", "--host", a.address(), "--to", "mysql://db/perf"});
  EXPECT_EQ(scheme.code, kExitUsage);
  EXPECT_NE(scheme.err.find("--to"), std::string::npos) << scheme.err;
  Result gone = Cli({"export", "--host", a.address(), "--to",
                     "postgresql://gpubench@/postgres?host=/nonexistent&port=5432"});
  EXPECT_EQ(gone.code, kExitUnreachable) << gone.err;
  EXPECT_NE(gone.err.find("postgresql: cannot connect"), std::string::npos) << gone.err;
  // libpq echoes a URL it cannot parse; its password does not reach stderr.
  Result echoed = Cli({"export", "--host", a.address(), "--to",
                       "postgresql://bench:s3cret-pw@[::1]x/perf"});
  EXPECT_NE(echoed.code, kExitOk);
  EXPECT_NE(echoed.err.find("postgresql:"), std::string::npos) << echoed.err;
  EXPECT_EQ(echoed.err.find("s3cret-pw"), std::string::npos) << echoed.err;
  EXPECT_EQ(pg.Query("SELECT count(*) FROM gpubench_runs").output, "4\n");
}

}  // namespace
}  // namespace gpubench::client
