// What a worker sees of the daemon's environment.
#include "common/environment.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>

namespace gpubench {
namespace {

bool Has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

// A daemon started from an operator's shell holds credentials and proxies
// in its environment; its workers, which run other people's models, see
// only what LibTorch, CUDA, NCCL and the BLAS read, and what the daemon
// sets.
TEST(WorkerEnvironment, KeepsWhatTheStackReadsAndNothingElse) {
  setenv("AWS_SECRET_ACCESS_KEY", "hunter2", 1);
  setenv("GPUBENCH_TOKEN", "secret-token", 1);
  setenv("https_proxy", "http://proxy:3128", 1);
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);
  setenv("CUDA_VISIBLE_DEVICES", "0,1", 1);
  setenv("OMP_PROC_BIND", "close", 1);
  setenv("TMPDIR", "/tmp/daemon", 1);
  const std::vector<std::string> env = WorkerEnvironmentWith({{"TMPDIR", "/scratch"}});
  EXPECT_TRUE(Has(env, "NCCL_NVLS_ENABLE=0"));
  EXPECT_TRUE(Has(env, "TORCH_SYMM_MEM_DISABLE_MULTICAST=1"));
  EXPECT_TRUE(Has(env, "CUDA_VISIBLE_DEVICES=0,1"));
  EXPECT_TRUE(Has(env, "OMP_PROC_BIND=close"));
  EXPECT_TRUE(Has(env, "TMPDIR=/scratch"));
  EXPECT_FALSE(Has(env, "TMPDIR=/tmp/daemon"));
  for (const std::string& e : env) {
    EXPECT_EQ(e.find("hunter2"), std::string::npos) << e;
    EXPECT_EQ(e.find("secret-token"), std::string::npos) << e;
    EXPECT_EQ(e.find("proxy"), std::string::npos) << e;
  }
  EXPECT_FALSE(WorkerMayInherit("GPUBENCH_TOKEN"));
  EXPECT_TRUE(WorkerMayInherit("GPUBENCH_INJECT_CRASH_AT_BATCH"));
}

}  // namespace
}  // namespace gpubench
