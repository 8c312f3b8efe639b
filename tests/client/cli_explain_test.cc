// gpubench explain end to end: a real daemon's stored traces read as they
// stream in (the breakdown's figures against HTA: hta_agreement.py).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "client/cli.h"
#include "storage/store.h"
#include "tests/client/cli_test_util.h"
#include "tests/support/daemon_process.h"

namespace gpubench::client {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

TEST(CliDaemon, ExplainBreaksDownAStoredTraceAndSaysWhenItHasNoDevice) {
  Daemon d(FreshDir("cli_explain"));
  ASSERT_TRUE(d.serving()) << d.log();
  // A real profiled CPU run: its trace has CPU operators only.
  Result done = Cli(Tiny({"submit", "--host", d.address(), "--batch", "4", "--profile", "--wait"}));
  ASSERT_EQ(done.code, kExitOk) << done.err;
  const std::string job_id = done.out.substr(4, done.out.find(' ', 4) - 4);
  std::string run_id;
  {
    auto store = storage::Store::Open({d.data_dir() + "/gpubench.db"});
    ASSERT_TRUE(store.ok());
    run_id = (*(*store)->runs().List(job_id, false))[0].run_id();
  }
  Result cpu = Cli({"explain", run_id, "--host", d.address()});
  EXPECT_EQ(cpu.code, kExitJobFailed) << cpu.out;
  EXPECT_NE(cpu.err.find("no work on a device stream"), std::string::npos) << cpu.err;

  // A GPU run's trace as Kineto writes it, stored under the run: a kernel,
  // then one launched after it ended (the host's wait), then the next.
  const std::string gpu = R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 0, "dur": 3, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 5, "dur": 10, "args": {"stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 90, "dur": 3, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 95, "dur": 10, "args": {"stream": 7, "correlation": 2}}]})";
  {
    auto store = storage::Store::Open({d.data_dir() + "/gpubench.db"});
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->runs().PutTrace(run_id, "chrome", gpu).ok());
  }
  Result text = Cli({"explain", run_id, "--host", d.address()});
  ASSERT_EQ(text.code, kExitOk) << text.err;
  EXPECT_NE(text.out.find("80% of the span is idle waiting on the host"), std::string::npos)
      << text.out;
  Result json = Cli({"explain", run_id, "--host", d.address(), "--output", "json"});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  EXPECT_NE(json.out.find("\"span_us\": 100"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"compute_us\": 20"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"host_wait_us\": 80"), std::string::npos) << json.out;

  // What arrives is checked against the stored size and sha256, as trace does.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((d.data_dir() + "/gpubench.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE traces SET sha256 = 'ff'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  Result damaged = Cli({"explain", run_id, "--host", d.address()});
  EXPECT_EQ(damaged.code, kExitJobFailed);
  EXPECT_NE(damaged.err.find("arrived damaged"), std::string::npos) << damaged.err;

  Result unknown = Cli({"explain", "rffffffffffffffff", "--host", d.address()});
  EXPECT_NE(unknown.code, kExitOk);
  EXPECT_NE(unknown.err.find("rffffffffffffffff"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace gpubench::client
