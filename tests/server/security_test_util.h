// What the attack tests share: waiting on a job and listing its runs as a
// given caller (token).
#ifndef GPUBENCH_TESTS_SERVER_SECURITY_TEST_UTIL_H_
#define GPUBENCH_TESTS_SERVER_SECURITY_TEST_UTIL_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <condition_variable>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include "gpubench/v1/service.grpc.pb.h"
#include "common/sha256.h"
#include "storage/store.h"
#include "tests/support/callers.h"
#include "tests/support/daemon_process.h"
#include "tests/support/script_model.h"

namespace gpubench {
namespace security_test {

using testing_support::Auth;
using testing_support::Daemon;

inline v1::Job WaitForJob(Daemon& d, const std::string& id, const std::string& token = "") {
  for (int i = 0; i < 600; ++i) {
    grpc::ClientContext ctx;
    Auth(&ctx, token);
    v1::GetJobRequest req;
    req.set_job_id(id);
    v1::GetJobResponse resp;
    if (d.stub()->GetJob(&ctx, req, &resp).ok()) {
      const v1::JobState s = resp.job().state();
      if (s != v1::JOB_STATE_QUEUED && s != v1::JOB_STATE_RUNNING) return resp.job();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "job " << id << " did not end";
  return {};
}

inline std::vector<v1::Run> Runs(Daemon& d, const std::string& id, const std::string& token = "") {
  grpc::ClientContext ctx;
  Auth(&ctx, token);
  v1::ListRunsRequest req;
  req.set_job_id(id);
  v1::ListRunsResponse resp;
  EXPECT_TRUE(d.stub()->ListRuns(&ctx, req, &resp).ok());
  return {resp.runs().begin(), resp.runs().end()};
}

}  // namespace security_test
}  // namespace gpubench

#endif  // GPUBENCH_TESTS_SERVER_SECURITY_TEST_UTIL_H_
