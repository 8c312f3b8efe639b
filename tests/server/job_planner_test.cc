// The job planner alone (server/job_planner.h): a spec's plan on a fake
// host, the leases a job takes and the lanes its runs are split into, over
// a real store and without a job manager, a queue or a worker.
#include "server/job_planner.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_join.h"
#include "report/fleet_rank.h"
#include "server/job_queue.h"
#include "storage/store.h"

namespace gpubench::server {
namespace {

class JobPlannerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A file per test: ctest runs them side by side.
    const std::string path =
        ::testing::TempDir() + "/job_planner_test_" +
        ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
    auto store = storage::Store::Open({path});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }

  // A planner on a host of `gpus` GPUs.
  JobPlanner Planner(int gpus, PlannerOptions options = {}) {
    v1::HostInfo host;
    for (int i = 0; i < gpus; ++i) host.add_gpus()->set_index(i);
    return JobPlanner(std::move(options), store_.get(), host);
  }

  static v1::JobSpec Spec(const std::string& workload, const std::string& device) {
    v1::JobSpec spec;
    spec.mutable_base()->set_workload(workload);
    spec.mutable_base()->set_device(device);
    return spec;
  }

  std::unique_ptr<storage::Store> store_;
};

// cuda:all becomes a run and a lane per GPU, side by side, each lane
// taking its GPU alone; the plan holds the measurement defaults.
TEST_F(JobPlannerTest, EveryGpuIsALaneOfItsOwnSideBySide) {
  const JobPlanner planner = Planner(4);
  auto plan = planner.PlanJob(Spec("matmul", "cuda:all"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->runs.size(), 4u);
  EXPECT_TRUE(plan->spec.parallel_devices());
  EXPECT_EQ(plan->spec.measurement().min_iterations(), 20);
  v1::Job job;
  *job.mutable_spec() = plan->spec;
  const JobPlanner::Needs needs = planner.LeasesOf(job, plan->runs);
  EXPECT_EQ(needs.leases, (std::set<std::string>{"cuda:0", "cuda:1", "cuda:2", "cuda:3"}));
  const auto lanes = planner.LanesOf(job, plan->runs, needs.leases);
  ASSERT_EQ(lanes.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(lanes[i].parallel) << i;
    ASSERT_EQ(lanes[i].indices.size(), 1u);
    EXPECT_EQ(plan->runs[lanes[i].indices[0]].device(), GpuLease(i));
  }
}

// A CPU run, a copy that reaches another GPU, an exclusive job and a
// schedule's job take the whole host: nothing else runs beside them.
TEST_F(JobPlannerTest, WhatMeasuresTheHostTakesTheWholeHost) {
  const JobPlanner planner = Planner(2);
  auto leases_of = [&](const v1::JobSpec& spec, const std::string& schedule_id = "") {
    auto plan = planner.PlanJob(spec);
    EXPECT_TRUE(plan.ok()) << plan.status();
    v1::Job job;
    *job.mutable_spec() = plan->spec;
    job.set_schedule_id(schedule_id);
    return planner.LeasesOf(job, plan->runs).leases;
  };
  EXPECT_EQ(leases_of(Spec("matmul", "cuda:1")), (std::set<std::string>{"cuda:1"}));
  EXPECT_TRUE(leases_of(Spec("matmul", "cpu")).count(JobQueue::kWholeHost));
  v1::JobSpec peer = Spec("copy", "cuda:0");
  peer.mutable_base()->mutable_params()->set_copy_direction(v1::COPY_DIRECTION_DEVICE_TO_DEVICE);
  peer.mutable_base()->mutable_params()->set_peer_device(1);
  EXPECT_TRUE(leases_of(peer).count(JobQueue::kWholeHost));
  v1::JobSpec exclusive = Spec("matmul", "cuda:0");
  exclusive.set_exclusive(true);
  EXPECT_TRUE(leases_of(exclusive).count(JobQueue::kWholeHost));
  EXPECT_TRUE(leases_of(Spec("matmul", "cuda:0"), "nightly").count(JobQueue::kWholeHost));
  v1::JobSpec shared = Spec("matmul", "cuda:0");
  shared.set_exclusive(false);
  EXPECT_FALSE(leases_of(shared, "nightly").count(JobQueue::kWholeHost));
}

// A distributed run on device cuda wants any K GPUs; its lane's ranks take
// the GPUs the job was leased, lowest first.
TEST_F(JobPlannerTest, ARanksLaneTakesTheLeasedGpusInOrder) {
  const JobPlanner planner = Planner(4);
  v1::JobSpec ddp = Spec("ddp", "cuda");
  ddp.mutable_base()->set_world_size(2);
  auto plan = planner.PlanJob(ddp);
  ASSERT_TRUE(plan.ok()) << plan.status();
  v1::Job job;
  *job.mutable_spec() = plan->spec;
  const JobPlanner::Needs needs = planner.LeasesOf(job, plan->runs);
  EXPECT_EQ(needs.any_gpus, 2);
  EXPECT_TRUE(needs.leases.empty());
  const auto lanes = planner.LanesOf(job, plan->runs, {"cuda:3", "cuda:1"});
  ASSERT_EQ(lanes.size(), 1u);
  EXPECT_EQ(lanes[0].rank.world_size(), 2);
  ASSERT_EQ(lanes[0].rank.devices_size(), 2);
  EXPECT_EQ(lanes[0].rank.devices(0), "cuda:1");
  EXPECT_EQ(lanes[0].rank.devices(1), "cuda:3");
  EXPECT_FALSE(lanes[0].parallel);
}

// A 2-rank collective on a named GPU with a peer_device measures that pair:
// rank 0 on it, rank 1 on the peer, the whole host taken; what is no pair
// of this host is refused naming the field.
TEST_F(JobPlannerTest, ANamedPairsRanksTakeItsTwoGpus) {
  const JobPlanner planner = Planner(4);
  v1::JobSpec pair = Spec("collective", "cuda:1");
  pair.mutable_base()->set_world_size(2);
  pair.mutable_sweep()->add_peer_device(3);
  pair.mutable_sweep()->add_peer_device(2);
  auto plan = planner.PlanJob(pair);
  ASSERT_TRUE(plan.ok()) << plan.status();
  v1::Job job;
  *job.mutable_spec() = plan->spec;
  const JobPlanner::Needs needs = planner.LeasesOf(job, plan->runs);
  EXPECT_EQ(needs.any_gpus, 0);
  EXPECT_TRUE(needs.leases.count(JobQueue::kWholeHost));
  EXPECT_TRUE(needs.leases.count("cuda:3") && needs.leases.count("cuda:2"));
  const auto lanes = planner.LanesOf(job, plan->runs, needs.leases);
  ASSERT_EQ(lanes.size(), 2u);
  std::set<std::string> ranks;
  for (const auto& lane : lanes) ranks.insert(absl::StrJoin(lane.rank.devices(), ","));
  EXPECT_EQ(ranks, (std::set<std::string>{"cuda:1,cuda:3", "cuda:1,cuda:2"}));
  auto error = [&](const v1::JobSpec& spec) {
    auto p = planner.PlanJob(spec);
    return p.ok() ? std::string("ok") : std::string(p.status().message());
  };
  pair.mutable_sweep()->set_peer_device(0, 4);
  EXPECT_EQ(error(pair), "spec.sweep.peer_device: cuda:4 is not on this host, which has 4 GPU(s)");
  pair.mutable_sweep()->set_peer_device(0, 1);
  EXPECT_EQ(error(pair), "spec.sweep (run 0).params.peer_device: cuda:1 is rank 0's GPU already");
  v1::JobSpec three = Spec("collective", "cuda:0");
  three.mutable_base()->set_world_size(3);
  three.mutable_base()->mutable_params()->set_peer_device(1);
  EXPECT_NE(error(three).find("params.peer_device: names rank 1's GPU of a pair: world_size 2 on "
                              "a named GPU (cuda:N), not world_size 3"),
            std::string::npos)
      << error(three);
  v1::JobSpec any = Spec("collective", "cuda");
  any.mutable_base()->set_world_size(2);
  any.mutable_base()->mutable_params()->set_peer_device(1);
  EXPECT_NE(error(any).find("params.peer_device: names rank 1's GPU of a pair"), std::string::npos)
      << error(any);
  // Only a collective's ranks take a pair: ddp refuses a peer.
  v1::JobSpec ddp = Spec("ddp", "cpu");
  ddp.mutable_base()->set_world_size(2);
  ddp.mutable_base()->mutable_params()->set_peer_device(0);
  EXPECT_NE(error(ddp).find("params.peer_device: is for copy and collective, not ddp"),
            std::string::npos)
      << error(ddp);
  ddp.mutable_base()->set_device("cuda:0");
  ddp.mutable_base()->mutable_params()->set_peer_device(1);
  EXPECT_NE(error(ddp).find("cuda:0 names one GPU"), std::string::npos) << error(ddp);
  v1::JobSpec kernel = Spec("copy", "cuda:0");
  kernel.mutable_base()->mutable_params()->set_copy_kernel(true);
  kernel.mutable_base()->mutable_params()->set_copy_direction(v1::COPY_DIRECTION_HOST_TO_DEVICE);
  EXPECT_NE(error(kernel).find("params.copy_kernel: a kernel copy is device_to_device"),
            std::string::npos)
      << error(kernel);
}

// qualify --level 2 on four GPUs: every job of the suite plans, and the
// pair matrix is each ordered pair by copy engine and by kernel, and an
// all-reduce on each of the six pairs (beside level 1's on any two).
TEST_F(JobPlannerTest, TheLevelTwoSuitePlansThePairMatrixOfFourGpus) {
  const JobPlanner planner = Planner(4);
  v1::HostInfo host;
  for (int i = 0; i < 4; ++i) {
    host.add_gpus()->set_index(i);
    host.mutable_gpus(i)->set_compute_capability("9.0");
  }
  std::map<std::string, std::set<std::string>> pairs;  // probe -> "from,to"
  for (const v1::JobSpec& spec : report::ProbeJobs(host, false, report::ProbeLevel{2})) {
    auto plan = planner.PlanSpec(spec);  // the daemon's own suite
    ASSERT_TRUE(plan.ok()) << spec.name() << ": " << plan.status();
    v1::Job job;
    *job.mutable_spec() = plan->spec;
    const JobPlanner::Needs needs = planner.LeasesOf(job, plan->runs);
    for (const auto& lane : planner.LanesOf(job, plan->runs, needs.leases)) {
      for (size_t i : lane.indices) {
        const v1::RunConfig& c = plan->runs[i];
        if (!c.params().has_peer_device()) continue;
        const std::string probe = c.probe().substr(c.probe().find('/') + 1);
        const std::string to = absl::StrCat("cuda:", c.params().peer_device());
        pairs[probe].insert(c.device() + "," + to);
        if (lane.rank.world_size() == 2) {
          EXPECT_EQ(absl::StrJoin(lane.rank.devices(), ","), c.device() + "," + to);
        }
      }
    }
  }
  EXPECT_EQ(pairs["peer_copy"].size(), 12u);
  EXPECT_EQ(pairs["peer_copy_kernel"], pairs["peer_copy"]);
  EXPECT_EQ(pairs["allreduce_pair"],
            (std::set<std::string>{"cuda:0,cuda:1", "cuda:0,cuda:2", "cuda:0,cuda:3",
                                   "cuda:1,cuda:2", "cuda:1,cuda:3", "cuda:2,cuda:3"}));
}

// A pair across hosts plans on cuda:0 of a host with GPUs (one GPU is
// enough: the other rank is another host's) and on the CPU of one without,
// taking the host, as every probe does.
TEST_F(JobPlannerTest, APairAcrossHostsPlansOnItsFirstGpuOrItsCpu) {
  for (int gpus : {0, 1}) {
    const JobPlanner planner = Planner(gpus);
    v1::HostInfo host;
    for (int i = 0; i < gpus; ++i) host.add_gpus()->set_index(i);
    auto plan = planner.PlanSpec(report::HostPairJob(host, "peer"));
    ASSERT_TRUE(plan.ok()) << gpus << " GPUs: " << plan.status();
    ASSERT_EQ(plan->runs.size(), 1u);
    EXPECT_EQ(plan->runs[0].device(), gpus > 0 ? "cuda:0" : "cpu");
    EXPECT_TRUE(report::IsHostPair(plan->runs[0]));
    v1::Job job;
    *job.mutable_spec() = plan->spec;
    EXPECT_EQ(planner.LeasesOf(job, plan->runs).leases.count("host"), 1u);
  }
}

// What this host cannot give is refused at plan time, naming the field.
TEST_F(JobPlannerTest, WhatTheHostCannotGiveIsRefusedByField) {
  const JobPlanner planner = Planner(2);
  auto error = [&](const v1::JobSpec& spec) {
    auto plan = planner.PlanJob(spec);
    return plan.ok() ? std::string("ok") : std::string(plan.status().message());
  };
  EXPECT_EQ(error(Spec("matmul", "cuda:2")).rfind("spec.base.device: cuda:2 is not on this host", 0),
            0u)
      << error(Spec("matmul", "cuda:2"));
  v1::JobSpec fp16 = Spec("matmul", "cpu");
  fp16.mutable_base()->set_precision(v1::PRECISION_FP16);
  EXPECT_EQ(error(fp16).rfind("spec.base.precision: fp16 does not run on the CPU", 0), 0u)
      << error(fp16);
  v1::JobSpec ranks = Spec("ddp", "cuda");
  ranks.mutable_base()->set_world_size(4);
  EXPECT_EQ(error(ranks).rfind("spec.base.world_size: 4 ranks on cuda need as many GPUs", 0), 0u)
      << error(ranks);
  v1::JobSpec power = Spec("matmul", "cuda:0");
  power.mutable_base()->set_power_limit_w(300);
  EXPECT_EQ(error(power).rfind("spec.base.power_limit_w: this daemon does not allow", 0), 0u)
      << error(power);
  EXPECT_TRUE(Planner(2, {{}, {}, false, /*clock_control=*/true}).PlanJob(power).ok());
  v1::JobSpec probe = Spec("matmul", "cuda:0");
  probe.mutable_base()->set_probe("matmul_bf16");
  EXPECT_EQ(error(probe).rfind("spec.base.probe:", 0), 0u) << error(probe);
  EXPECT_EQ(error(Spec("matmul", "cuda:all")), "ok");
  EXPECT_EQ(Planner(0).PlanJob(Spec("matmul", "cuda:all")).status().message(),
            "spec.base.device: cuda:all runs on each GPU of the host, and this host has none");
}

// A model is a file under a model root or an upload this store holds.
TEST_F(JobPlannerTest, ModelsAreUnderARootOrUploaded) {
  const JobPlanner planner = Planner(0, {{::testing::TempDir()}, {}, false, false});
  v1::JobSpec outside = Spec("torchscript", "cpu");
  outside.mutable_base()->mutable_params()->add_inputs()->add_shape(4);
  v1::JobSpec missing = outside;
  outside.mutable_base()->mutable_params()->set_model_path("/etc/passwd");
  auto refused = planner.PlanJob(outside);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message().rfind("spec.base.params.model_path:", 0), 0u)
      << refused.status();
  missing.mutable_base()->mutable_params()->set_model_sha256(std::string(64, 'a'));
  auto unknown = planner.PlanJob(missing);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("upload it first"), std::string::npos)
      << unknown.status();
}

}  // namespace
}  // namespace gpubench::server
