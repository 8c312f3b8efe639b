// A workload's config as the daemon's plan hands it to the engine: every
// default filled by the one filler (FillConfigDefaults) and converted
// (ToEngineConfig). Plain C++ (no protobuf), for tests that include LibTorch.
#ifndef GPUBENCH_TESTS_SUPPORT_PLANNED_CONFIG_H_
#define GPUBENCH_TESTS_SUPPORT_PLANNED_CONFIG_H_

#include <string>

#include "worker/engine/config.h"

namespace gpubench::testing_support {

// workload's config with everything at its default (device auto, train,
// batch 32...); a test sets what it needs on top.
engine::RunConfig Planned(const std::string& workload);

}  // namespace gpubench::testing_support

#endif  // GPUBENCH_TESTS_SUPPORT_PLANNED_CONFIG_H_
