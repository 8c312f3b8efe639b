#include "tests/support/planned_config.h"

#include "common/spec.h"
#include "gpubench/v1/spec.pb.h"
#include "worker/convert.h"

namespace gpubench::testing_support {

engine::RunConfig Planned(const std::string& workload) {
  v1::RunConfig config;
  config.set_workload(workload);
  FillConfigDefaults(&config);
  return worker::ToEngineConfig(config);
}

}  // namespace gpubench::testing_support
