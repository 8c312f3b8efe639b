// What the daemon's end-to-end tests share: submit, get, watch and wait on a
// real gpubenchd, and the long spec a cancel interrupts.
#ifndef GPUBENCH_TESTS_SERVER_DAEMON_TEST_UTIL_H_
#define GPUBENCH_TESTS_SERVER_DAEMON_TEST_UTIL_H_

#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <functional>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include "gpubench/v1/service.grpc.pb.h"
#include "tests/support/command.h"
#include "tests/support/daemon_process.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "common/sha256.h"
#include "storage/store.h"

namespace gpubench {
namespace daemon_test {

using testing_support::Daemon;
using testing_support::TinySpec;

// A job that measures for a minute unless stopped.
inline v1::JobSpec LongSpec() {
  v1::JobSpec spec = TinySpec();
  spec.set_name("long");
  spec.mutable_measurement()->set_min_time_ms(60000);
  spec.mutable_measurement()->set_max_time_ms(60000);
  spec.mutable_measurement()->set_cv_threshold(0.0001);
  // The default cap of 100,000 iterations ends a tiny CPU model in about 2 s
  // on a quiet machine: no cap within the minute.
  spec.mutable_measurement()->set_max_iterations(100000000);
  return spec;
}

inline std::string Submit(Daemon& d, const v1::JobSpec& spec) {
  grpc::ClientContext ctx;
  v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  v1::SubmitJobResponse resp;
  grpc::Status s = d.stub()->SubmitJob(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp.job().job_id();
}

inline v1::Job GetJob(Daemon& d, const std::string& id) {
  grpc::ClientContext ctx;
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::GetJobResponse resp;
  grpc::Status s = d.stub()->GetJob(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp.job();
}

// Watches a job from after_sequence until the stream ends (or stop_when
// returns true for an event). Returns the events.
inline std::vector<v1::ProgressEvent> Watch(
    Daemon& d, const std::string& id, int64_t after = 0,
    const std::function<bool(const v1::ProgressEvent&)>& stop_when = nullptr,
    grpc::Status* status = nullptr) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  v1::WatchJobRequest req;
  req.set_job_id(id);
  req.set_after_sequence(after);
  auto reader = d.stub()->WatchJob(&ctx, req);
  std::vector<v1::ProgressEvent> events;
  v1::WatchJobResponse resp;
  while (reader->Read(&resp)) {
    events.push_back(resp.event());
    if (stop_when && stop_when(resp.event())) {
      ctx.TryCancel();
      break;
    }
  }
  grpc::Status s = reader->Finish();
  if (status) *status = s;
  return events;
}

inline v1::JobState WaitForEnd(Daemon& d, const std::string& id) {
  Watch(d, id);
  return GetJob(d, id).state();
}

inline std::vector<v1::Run> ListRuns(Daemon& d, const std::string& id, bool samples) {
  grpc::ClientContext ctx;
  v1::ListRunsRequest req;
  req.set_job_id(id);
  req.set_include_samples(samples);
  v1::ListRunsResponse resp;
  EXPECT_TRUE(d.stub()->ListRuns(&ctx, req, &resp).ok());
  return {resp.runs().begin(), resp.runs().end()};
}

inline bool IsState(const v1::ProgressEvent& e, v1::JobState s) {
  return e.has_state_changed() && e.state_changed().state() == s;
}

}  // namespace daemon_test
}  // namespace gpubench

#endif  // GPUBENCH_TESTS_SERVER_DAEMON_TEST_UTIL_H_
