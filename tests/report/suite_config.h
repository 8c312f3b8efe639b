// The config the fleet probe suite gives a probe: what the report tests
// seed probe runs with.
#ifndef GPUBENCH_TESTS_REPORT_SUITE_CONFIG_H_
#define GPUBENCH_TESTS_REPORT_SUITE_CONFIG_H_

#include <gtest/gtest.h>

#include <string>

#include "common/spec.h"
#include "report/fleet_rank.h"

namespace gpubench::report {

// The config the suite gives a probe ("launch", or level 2's
// "sustained_bf16") on a GPU (the first of its sizes, on cuda:0), or with
// small on the CPU.
inline v1::RunConfig SuiteConfig(const std::string& probe, bool small = false) {
  v1::HostInfo host;
  for (int i = 0; i < 2; ++i) {
    v1::GpuInfo* g = host.add_gpus();
    g->set_index(i);
    g->set_compute_capability("9.0");
  }
  for (const v1::JobSpec& spec : ProbeJobs(host, small, ProbeLevel{3})) {
    auto configs = ExpandSweep(spec);
    EXPECT_TRUE(configs.ok()) << configs.status();
    for (const v1::RunConfig& c : *configs) {
      if (c.probe() == std::string(kProbeSuite) + "/" + probe) return c;
    }
  }
  ADD_FAILURE() << "no probe " << probe;
  return {};
}

}  // namespace gpubench::report

#endif  // GPUBENCH_TESTS_REPORT_SUITE_CONFIG_H_
