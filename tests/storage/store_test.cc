#include "storage/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <fstream>

namespace gpubench::storage {
namespace {

std::string TempPath(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::remove(path.c_str());
  std::remove((path + "-wal").c_str());
  std::remove((path + "-shm").c_str());
  return path;
}

TEST(Store, RunsAndSamplesSurviveReopen) {
  const std::string path = TempPath("store_reopen.db");
  std::string job_id;
  {
    auto store = Store::Open({path});
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ((*store)->schema_version(), kSchemaVersion);
    v1::Job job;
    job.mutable_spec()->mutable_base()->set_workload("mlp");
    job.set_state(v1::JOB_STATE_RUNNING);
    job_id = *(*store)->InsertJob(job);
    for (int i = 0; i < 2; ++i) {
      v1::Run run;
      run.set_job_id(job_id);
      run.set_index(i);
      run.set_state(v1::RUN_STATE_SUCCEEDED);
      run.mutable_result()->set_throughput_samples_per_s(100 + i);
      run.mutable_samples()->add_device_ms(1.5f + i);
      ASSERT_TRUE((*store)->InsertRun(run).ok());
    }
  }
  auto store = Store::Open({path});
  ASSERT_TRUE(store.ok());
  auto runs = (*store)->ListRuns(job_id, /*include_samples=*/true);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[1].result().throughput_samples_per_s(), 101);
  ASSERT_EQ((*runs)[1].samples().device_ms_size(), 1);
  EXPECT_FLOAT_EQ((*runs)[1].samples().device_ms(0), 2.5f);
  auto no_samples = (*store)->ListRuns(job_id, false);
  EXPECT_EQ((*no_samples)[0].samples().device_ms_size(), 0);
}

TEST(Store, DuplicateRunLeavesNoHalfWrittenRows) {
  const std::string path = TempPath("store_atomic.db");
  auto store = Store::Open({path});
  ASSERT_TRUE(store.ok());
  v1::Job job;
  const std::string job_id = *(*store)->InsertJob(job);
  v1::Run run;
  run.set_job_id(job_id);
  run.set_run_id("r1");
  ASSERT_TRUE((*store)->InsertRun(run).ok());
  run.set_index(5);
  EXPECT_FALSE((*store)->InsertRun(run).ok());  // same run_id
  auto runs = (*store)->ListRuns(job_id, true);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 1u);
}

TEST(Store, RefusesAFileThatIsNotADatabaseAndLeavesItAlone) {
  const std::string path = TempPath("not_a_db.db");
  const std::string junk(8192, 'x');
  std::ofstream(path) << junk;
  auto store = Store::Open({path});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find(path), std::string::npos);
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, junk);
}

TEST(Store, RefusesANewerSchema) {
  const std::string path = TempPath("newer.db");
  sqlite3* db;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  auto store = Store::Open({path});
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("newer"), std::string::npos);
}

}  // namespace
}  // namespace gpubench::storage
