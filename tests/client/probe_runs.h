// Probe runs as the daemon's own suite stores them, planted in a real
// daemon's store: what the fleet and qualify tests seed.
#ifndef GPUBENCH_TESTS_CLIENT_PROBE_RUNS_H_
#define GPUBENCH_TESTS_CLIENT_PROBE_RUNS_H_

#include <gtest/gtest.h>

#include <string>

#include "absl/time/clock.h"
#include "common/spec.h"
#include "google/protobuf/util/time_util.h"
#include "report/fleet_rank.h"
#include "storage/store.h"
#include "tests/report/suite_config.h"
#include "tests/support/daemon_process.h"

namespace gpubench::client {

using testing_support::Daemon;

// The config the suite gives a probe ("v1/launch") on a GPU (the first of
// its sizes, on cuda:0), or with small on the CPU.
inline v1::RunConfig SuiteConfig(const std::string& probe, bool small = false) {
  return report::SuiteConfig(probe.substr(probe.find('/') + 1), small);
}

// A succeeded probe run of one H100 on cuda:0, as the daemon's own suite
// stores it (daemon_probe), at `value` in the probe's unit.
inline v1::Run H100Run(const std::string& probe, const std::string& uuid, double value,
                double watts = 700) {
  v1::Run run;
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  run.set_daemon_probe(true);
  *run.mutable_config() = SuiteConfig(probe);
  run.mutable_result()->set_resolved_device("cuda:0");
  if (probe == "v1/launch") {
    run.mutable_result()->mutable_host_latency()->set_p50_ms(value / 1e3);
  } else {
    run.mutable_result()->set_achieved_tflops(value);
  }
  run.mutable_result()->set_throughput_samples_per_s(value);
  *run.mutable_start_time() =
      google::protobuf::util::TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(absl::Now()));
  *run.mutable_end_time() = run.start_time();
  v1::Fingerprint* f = run.mutable_fingerprint();
  f->set_gpu_name("NVIDIA H100 80GB HBM3");
  f->set_gpu_uuid("GPU-" + uuid);
  f->set_driver_version("580.159.04");
  f->set_power_limit_w(watts);
  return run;
}

// Plants run in the daemon's store, in a job of its own; its run id.
inline std::string Plant(const Daemon& d, v1::Run run) {
  auto store = storage::Store::Open({d.data_dir() + "/gpubench.db"});
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return "";
  v1::Job job;
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  job.set_daemon_probe(run.daemon_probe());
  run.set_job_id(*(*store)->jobs().Insert(job));
  auto id = (*store)->runs().Insert(run);
  EXPECT_TRUE(id.ok()) << id.status();
  return id.ok() ? *id : "";
}

// Plants a bf16 matmul probe run of one H100 at `tflops` under a power
// limit of `watts`.
inline void PlantProbe(const Daemon& d, const std::string& uuid, double tflops, double watts) {
  Plant(d, H100Run("v1/matmul_bf16", uuid, tflops, watts));
}

}  // namespace gpubench::client

#endif  // GPUBENCH_TESTS_CLIENT_PROBE_RUNS_H_
