// Distributed runs (ddp, collective) through a real gpubenchd: a real
// gpubench-worker per rank, rendezvous on loopback and c10d's Gloo on the
// CPU (where the build has it; the wheel's LibTorch hides its Gloo), and the
// daemon's refusals of what a host cannot run.
#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpubench/v1/service.grpc.pb.h"
#include "tests/support/daemon_process.h"

namespace gpubench {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

using testing_support::JobRuns;
using testing_support::SubmitJobSpec;
using testing_support::WaitForJobEnd;

v1::JobSpec Distributed(const std::string& workload) {
  v1::JobSpec spec;
  spec.mutable_base()->set_workload(workload);
  spec.mutable_base()->set_device("cpu");
  spec.mutable_base()->set_batch_size(16);
  auto* m = spec.mutable_measurement();
  m->set_warmup_iterations(2);
  m->set_min_iterations(10);
  m->set_min_time_ms(50);
  m->set_max_time_ms(1000);
  return spec;
}

// ddp of the mlp (a small model: fast on two CPU ranks).
v1::JobSpec MlpDdp() {
  v1::JobSpec spec = Distributed("ddp");
  spec.mutable_base()->mutable_params()->set_ddp_model("mlp");
  return spec;
}

// Submits spec, waits for the job's end, and returns the job and its runs.
std::pair<v1::Job, std::vector<v1::Run>> RunToEnd(Daemon& d, const v1::JobSpec& spec) {
  std::string id;
  EXPECT_TRUE(SubmitJobSpec(d, spec, &id).ok());
  v1::Job job = WaitForJobEnd(d, id);
  return {job, JobRuns(d, id)};
}

void ExpectInvalid(Daemon& d, const v1::JobSpec& spec, const std::string& field) {
  const grpc::Status s = SubmitJobSpec(d, spec);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find(field), std::string::npos) << s.error_message();
}

// What this CPU-only host cannot run is refused at submit, naming the field.
TEST(Distributed, WhatTheHostCannotRunIsInvalidArgumentNamingTheField) {
  Daemon d(FreshDir("dist_refused"));
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec ranks_on_gpus = Distributed("ddp");
  ranks_on_gpus.mutable_base()->set_device("cuda");
  ranks_on_gpus.mutable_sweep()->add_world_size(1);
  ranks_on_gpus.mutable_sweep()->add_world_size(2);
  ExpectInvalid(d, ranks_on_gpus, "spec.sweep.world_size: 2 ranks on cuda need as many GPUs");
  v1::JobSpec every_gpu = Distributed("mlp");
  every_gpu.mutable_base()->set_device("cuda:all");
  ExpectInvalid(d, every_gpu, "spec.base.device: cuda:all");
  v1::JobSpec not_distributed = Distributed("mlp");
  not_distributed.mutable_base()->set_world_size(2);
  ExpectInvalid(d, not_distributed, "world_size: mlp runs on one rank");
  v1::JobSpec split = Distributed("collective");
  split.mutable_base()->set_world_size(3);
  split.mutable_base()->mutable_params()->set_collective_op(v1::COLLECTIVE_OP_ALL_GATHER);
  split.mutable_base()->mutable_params()->set_collective_bytes(16);
  ExpectInvalid(d, split, "params.collective_bytes: 16 is not a multiple of 12");
  v1::JobSpec infer = Distributed("ddp");
  infer.mutable_base()->set_mode(v1::MODE_INFER);
  ExpectInvalid(d, infer, ".mode: ddp trains");
  // A worker per rank: on the CPU no more than the host's cores (and 16).
  v1::JobSpec crowd = Distributed("collective");
  crowd.mutable_base()->set_world_size(64);
  ExpectInvalid(d, crowd, "spec.base.world_size: 64 ranks on the CPU; this host takes at most");
}

#ifndef GPUBENCH_TEST_GLOO
// This build's LibTorch keeps Gloo internal (the wheel): a ddp or collective
// run on the CPU fails saying so and where Gloo comes from, the job says why,
// and no worker is left. (.ci/sanitize builds no worker and runs these tests
// with the Debian flavour's, which has Gloo: there the run succeeds.)
TEST(Distributed, RanksOnTheCpuNeedGloo) {
  Daemon d(FreshDir("dist_no_gloo"));
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = MlpDdp();
  spec.mutable_base()->set_world_size(2);
  const auto [job, runs] = RunToEnd(d, spec);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(testing_support::WorkerChildren(d.pid()).empty());
  if (runs[0].state() == v1::RUN_STATE_SUCCEEDED) {
    GTEST_SKIP() << "the worker this test runs (GPUBENCH_WORKER) has Gloo";
  }
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED) << job.error();
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(runs[0].error().find("built without Gloo, so ddp and collective run on cuda only"),
            std::string::npos)
      << runs[0].error();
}
#else
// Two ranks, each a worker process, all-reduce and all-gather 64 KiB: rank
// 0's figures are stored with nccl-tests' bus factors, and no worker is left.
TEST(Distributed, CollectivesRunOnTwoRankWorkersAndLeaveNoProcess) {
  Daemon d(FreshDir("dist_collective"));
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = Distributed("collective");
  spec.mutable_base()->set_world_size(2);
  spec.mutable_base()->mutable_params()->set_collective_bytes(64 << 10);
  spec.mutable_sweep()->add_collective_op(v1::COLLECTIVE_OP_ALL_REDUCE);
  spec.mutable_sweep()->add_collective_op(v1::COLLECTIVE_OP_ALL_GATHER);
  spec.mutable_sweep()->add_collective_op(v1::COLLECTIVE_OP_BROADCAST);
  const auto [job, runs] = RunToEnd(d, spec);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error() << d.log();
  ASSERT_EQ(runs.size(), 3u);
  const double factor[] = {1.0, 0.5, 1.0};  // 2(K-1)/K, (K-1)/K, 1 at K = 2
  for (int i = 0; i < 3; ++i) {
    const v1::RunResult& r = runs[i].result();
    ASSERT_EQ(runs[i].state(), v1::RUN_STATE_SUCCEEDED) << runs[i].error();
    EXPECT_GT(r.throughput_samples_per_s(), 0);
    EXPECT_NEAR(r.algorithm_bandwidth_gb_per_s(),
                (64 << 10) * r.throughput_samples_per_s() / 1e9, 1e-9);
    EXPECT_NEAR(r.bus_bandwidth_gb_per_s(), r.algorithm_bandwidth_gb_per_s() * factor[i], 1e-9);
    ASSERT_EQ(r.rank_devices_size(), 2);
    EXPECT_EQ(r.rank_devices(1), "cpu");
  }
  EXPECT_TRUE(testing_support::WorkerChildren(d.pid()).empty());
}

// ddp of the mlp on one and two ranks: both train from the same weights
// (rank 0's, broadcast), and two ranks count both ranks' samples.
TEST(Distributed, DdpTrainsFromRankZerosWeightsOnOneAndTwoRanks) {
  Daemon d(FreshDir("dist_ddp"));
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = MlpDdp();
  spec.mutable_sweep()->add_world_size(1);
  spec.mutable_sweep()->add_world_size(2);
  const auto [job, runs] = RunToEnd(d, spec);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error() << d.log();
  ASSERT_EQ(runs.size(), 2u);
  for (const v1::Run& r : runs) ASSERT_EQ(r.state(), v1::RUN_STATE_SUCCEEDED) << r.error();
  EXPECT_EQ(runs[1].config().world_size(), 2);
  // Same seed and input, so the same first loss; training lowers it.
  EXPECT_NEAR(runs[0].result().first_loss(), runs[1].result().first_loss(), 1e-4);
  EXPECT_LT(runs[1].result().last_loss(), runs[1].result().first_loss());
  EXPECT_EQ(runs[1].result().rank_devices_size(), 2);
  // Two ranks' FLOPs per iteration: twice one rank's.
  EXPECT_NEAR(runs[1].result().flops_per_iteration(), 2 * runs[0].result().flops_per_iteration(),
              1e-6 * runs[0].result().flops_per_iteration());
}

// A rank's stored trace (GetTrace), or the call's status.
grpc::Status TraceOf(Daemon& d, const std::string& run_id, int rank, std::string* trace) {
  grpc::ClientContext ctx;
  v1::GetTraceRequest req;
  req.set_run_id(run_id);
  req.set_rank(rank);
  auto reader = d.stub()->GetTrace(&ctx, req);
  v1::GetTraceResponse resp;
  trace->clear();
  while (reader->Read(&resp)) {
    if (resp.part_case() == v1::GetTraceResponse::kChunk) *trace += resp.chunk();
  }
  return reader->Finish();
}

// A profiled ddp run keeps every rank's trace of its window, each marked
// with its rank as HTA reads a folder of ranks.
TEST(Distributed, AProfiledDdpRunKeepsEveryRanksTraceMarkedWithItsRank) {
  Daemon d(FreshDir("dist_ddp_traces"));
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = MlpDdp();
  spec.mutable_base()->set_world_size(2);
  spec.mutable_profiling()->set_enabled(true);
  const auto [job, runs] = RunToEnd(d, spec);
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error() << d.log();
  ASSERT_EQ(runs.size(), 1u);
  const v1::ProfileSummary& profile = runs[0].result().profile();
  ASSERT_EQ(profile.traced_ranks_size(), 2) << profile.ShortDebugString();
  EXPECT_EQ(profile.traced_ranks(0), 0);
  EXPECT_EQ(profile.traced_ranks(1), 1);
  std::string traces[2];
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(TraceOf(d, runs[0].run_id(), rank, &traces[rank]).ok());
    EXPECT_NE(traces[rank].find(absl::StrCat("\"distributedInfo\": {\"backend\": \"gloo\", "
                                             "\"rank\": ", rank, ", \"world_size\": 2}")),
              std::string::npos)
        << traces[rank].substr(0, 300);
    EXPECT_NE(traces[rank].find("aten::addmm"), std::string::npos);
  }
  EXPECT_EQ(static_cast<int64_t>(traces[0].size()), profile.trace_size_bytes());
  std::string none;
  const grpc::Status missing = TraceOf(d, runs[0].run_id(), 2, &none);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND) << missing.error_message();
  const grpc::Status negative = TraceOf(d, runs[0].run_id(), -1, &none);
  EXPECT_EQ(negative.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(negative.error_message().find("rank"), std::string::npos) << negative.error_message();
}

// A rank that crashes inside a run fails that run, naming the rank; the
// other rank, waiting in a collective, is stopped with it; the next point
// runs in a fresh group, and no worker is left.
TEST(Distributed, AFailingRankFailsItsRunCleanlyAndTheSweepGoesOn) {
  setenv("GPUBENCH_INJECT_CRASH_AT_BATCH", "8", 1);
  setenv("GPUBENCH_INJECT_CRASH_RANK", "1", 1);
  Daemon d(FreshDir("dist_rank_crash"));
  unsetenv("GPUBENCH_INJECT_CRASH_AT_BATCH");
  unsetenv("GPUBENCH_INJECT_CRASH_RANK");
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = MlpDdp();
  spec.mutable_base()->set_world_size(2);
  spec.mutable_sweep()->add_batch_size(8);
  spec.mutable_sweep()->add_batch_size(16);
  const auto [job, runs] = RunToEnd(d, spec);
  // A run missing: the job failed, saying so, with the other run kept.
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED) << d.log();
  EXPECT_NE(job.error().find("1 of 2 runs failed"), std::string::npos) << job.error();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(runs[0].error().find("rank 1 of 2"), std::string::npos) << runs[0].error();
  EXPECT_NE(runs[0].error().find("signal 11"), std::string::npos) << runs[0].error();
  EXPECT_EQ(runs[1].state(), v1::RUN_STATE_SUCCEEDED) << runs[1].error();
  EXPECT_TRUE(testing_support::WorkerChildren(d.pid()).empty());
}
// Rank 1 alone runs out of memory at batch 64: the run is stored as out of
// memory, naming the rank, and the larger batch is skipped in the fresh
// group, as a single worker's out of memory would be.
TEST(Distributed, AnotherRanksOutOfMemoryIsTheRunsAndSkipsLargerBatches) {
  setenv("GPUBENCH_INJECT_OOM_ABOVE_BYTES", "200000", 1);  // mlp input: 12 KiB a sample
  setenv("GPUBENCH_INJECT_OOM_RANK", "1", 1);
  Daemon d(FreshDir("dist_rank_oom"));
  unsetenv("GPUBENCH_INJECT_OOM_ABOVE_BYTES");
  unsetenv("GPUBENCH_INJECT_OOM_RANK");
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = MlpDdp();
  spec.mutable_base()->set_world_size(2);
  for (int batch : {8, 64, 128}) spec.mutable_sweep()->add_batch_size(batch);
  const auto [job, runs] = RunToEnd(d, spec);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error() << d.log();
  std::string listed;
  for (const v1::Run& r : runs) listed += r.ShortDebugString().substr(0, 300) + "\n";
  ASSERT_EQ(runs.size(), 3u) << listed << d.log();
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_SUCCEEDED) << runs[0].error();
  EXPECT_EQ(runs[1].state(), v1::RUN_STATE_OUT_OF_MEMORY) << runs[1].error();
  EXPECT_NE(runs[1].error().find("rank 1 of 2: out of memory (injected)"), std::string::npos)
      << runs[1].error();
  EXPECT_EQ(runs[2].state(), v1::RUN_STATE_SKIPPED_AFTER_OOM) << runs[2].error();
  EXPECT_TRUE(testing_support::WorkerChildren(d.pid()).empty());
}

// A cancel reaches every rank: they stop together at a window's end (or
// are killed after the grace period), the job ends cancelled, and no worker
// is left.
TEST(Distributed, CancelStopsEveryRank) {
  Daemon d(FreshDir("dist_cancel"));
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec = MlpDdp();
  spec.mutable_base()->set_world_size(2);
  spec.mutable_measurement()->set_min_time_ms(60000);
  spec.mutable_measurement()->set_max_time_ms(60000);
  spec.mutable_measurement()->set_cv_threshold(0.0001);
  spec.mutable_measurement()->set_max_iterations(100000000);
  std::string id;
  ASSERT_TRUE(SubmitJobSpec(d, spec, &id).ok());
  for (int i = 0; i < 200 && testing_support::WorkerChildren(d.pid()).size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(testing_support::WorkerChildren(d.pid()).size(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  {
    grpc::ClientContext ctx;
    v1::CancelJobRequest req;
    req.set_job_id(id);
    v1::CancelJobResponse resp;
    ASSERT_TRUE(d.stub()->CancelJob(&ctx, req, &resp).ok());
  }
  const v1::Job job = WaitForJobEnd(d, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_CANCELLED) << job.error();
  EXPECT_TRUE(testing_support::WorkerChildren(d.pid()).empty());
}

// ddp's gradients all-reduced in buckets while backward runs train exactly
// as one message after backward, over the same 23 steps on two Gloo ranks:
// the large mlp (25 MiB of weights) in 1 MiB buckets is four buckets,
// started from autograd's hooks; simple_cnn's channels_last weights fill
// their bucket in their own layout. Against ddp_bucket_mb 0.
TEST(Distributed, BucketsDuringBackwardTrainAsOneMessageAfterIt) {
  Daemon d(FreshDir("dist_buckets"));
  ASSERT_TRUE(d.serving()) << d.log();
  for (const char* model : {"mlp", "simple_cnn"}) {
    std::vector<v1::Run> runs;
    for (int bucket_mb : {1, 0}) {
      v1::JobSpec spec = MlpDdp();
      v1::RunConfig* c = spec.mutable_base();
      c->set_world_size(2);
      c->mutable_params()->set_ddp_model(model);
      if (std::string(model) == "mlp") c->mutable_params()->set_model_size("large");
      if (std::string(model) == "simple_cnn") c->set_channels_last(true);
      c->mutable_params()->set_ddp_bucket_mb(bucket_mb);
      auto* m = spec.mutable_measurement();
      m->set_warmup_iterations(2);
      m->set_min_iterations(20);
      m->set_max_iterations(20);
      m->set_min_time_ms(0);
      m->set_max_time_ms(120000);
      const auto [job, job_runs] = RunToEnd(d, spec);
      EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error() << d.log();
      ASSERT_EQ(job_runs.size(), 1u);
      runs.push_back(job_runs[0]);
    }
    for (const v1::Run& r : runs) {
      ASSERT_EQ(r.state(), v1::RUN_STATE_SUCCEEDED) << model << ": " << r.error();
      EXPECT_EQ(r.result().iterations(), 20) << model;
      EXPECT_LT(r.result().last_loss(), r.result().first_loss()) << model;
    }
    EXPECT_EQ(runs[0].config().params().ddp_bucket_mb(), 1);
    EXPECT_EQ(runs[1].config().params().ddp_bucket_mb(), 0);
    EXPECT_NEAR(runs[0].result().last_loss(), runs[1].result().last_loss(),
                1e-5 * std::abs(runs[1].result().last_loss()))
        << model;
  }
  // Unset, it is DistributedDataParallel's 25 MiB, as the stored config says.
  const auto [job, plain_runs] = RunToEnd(d, MlpDdp());
  ASSERT_EQ(plain_runs.size(), 1u);
  EXPECT_EQ(plain_runs[0].config().params().ddp_bucket_mb(), 25);
  v1::JobSpec bad = MlpDdp();
  bad.mutable_base()->mutable_params()->set_ddp_bucket_mb(-1);
  ExpectInvalid(d, bad, "spec.base.params.ddp_bucket_mb");
}

// One side of a pair across daemons (qualify --pairs), as the CLI asks it.
grpc::Status Pair(Daemon& d, v1::RunHostPairRequest::Side side, const std::string& peer,
                  const v1::RunHostPairResponse* opened, v1::RunHostPairResponse* resp) {
  v1::RunHostPairRequest req;
  req.set_side(side);
  req.set_peer(peer);
  if (opened != nullptr) {
    req.set_store_address(opened->store_address());
    req.set_secret(opened->secret());
  }
  grpc::ClientContext ctx;
  return d.stub()->RunHostPair(&ctx, req, resp);
}

// Two daemons on loopback, one rank each: with the opener's secret the
// all-reduce runs and each daemon stores its rank's run, labelled with its
// peer; with another secret the joining rank is refused before any tensor
// moves and both jobs fail saying why; a daemon without --pair-address
// refuses, naming the flag.
TEST(Distributed, APairAcrossDaemonsRunsOnlyWithTheOpenersSecret) {
  const std::string at_a = absl::StrCat("127.0.0.1:", testing_support::FreePort());
  const std::string at_b = absl::StrCat("127.0.0.1:", testing_support::FreePort());
  Daemon a(FreshDir("dist_pair_a"), {"--pair-address", at_a});
  Daemon b(FreshDir("dist_pair_b"), {"--pair-address", at_b});
  Daemon off(FreshDir("dist_pair_off"));
  ASSERT_TRUE(a.serving() && b.serving() && off.serving()) << a.log() << b.log();
  v1::RunHostPairResponse opened, joined, refused;
  ASSERT_TRUE(Pair(a, v1::RunHostPairRequest::SIDE_OPEN, "b", nullptr, &opened).ok());
  EXPECT_EQ(opened.store_address(), at_a);
  ASSERT_EQ(opened.secret().size(), 32u);
  ASSERT_TRUE(Pair(b, v1::RunHostPairRequest::SIDE_JOIN, "a", &opened, &joined).ok());
  for (auto [d, id] : {std::pair{&a, opened.job().job_id()}, {&b, joined.job().job_id()}}) {
    const v1::Job job = WaitForJobEnd(*d, id);
    EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error() << d->log();
    EXPECT_TRUE(job.daemon_probe());
    const std::vector<v1::Run> runs = JobRuns(*d, id);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_GT(runs[0].result().bus_bandwidth_gb_per_s(), 0) << runs[0].error();
  }
  EXPECT_EQ(WaitForJobEnd(a, opened.job().job_id()).spec().labels().at("gpubench.peer"), "b");

  ASSERT_TRUE(Pair(a, v1::RunHostPairRequest::SIDE_OPEN, "b", nullptr, &opened).ok());
  opened.mutable_secret()->at(0) ^= 1;
  ASSERT_TRUE(Pair(b, v1::RunHostPairRequest::SIDE_JOIN, "a", &opened, &joined).ok());
  const v1::Job stranger = WaitForJobEnd(a, opened.job().job_id());
  EXPECT_EQ(stranger.state(), v1::JOB_STATE_FAILED);
  const std::vector<v1::Run> runs = JobRuns(a, opened.job().job_id());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_NE(runs[0].error().find("did not prove the pair's secret"), std::string::npos)
      << runs[0].error();
  EXPECT_EQ(WaitForJobEnd(b, joined.job().job_id()).state(), v1::JOB_STATE_FAILED);

  const grpc::Status no_address =
      Pair(off, v1::RunHostPairRequest::SIDE_OPEN, "b", nullptr, &refused);
  EXPECT_EQ(no_address.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(no_address.error_message().find("--pair-address"), std::string::npos);
}
#endif  // GPUBENCH_TEST_GLOO

}  // namespace
}  // namespace gpubench
