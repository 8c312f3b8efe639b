// Builds a JobSpec from command-line flags, e.g.
//   --workload resnet50 --mode train --batch 32,64 --precision fp32,bf16
// A flag with one value sets the spec's base; with a comma list it becomes a
// sweep axis. Torch-free; thread-safe (no state).
#ifndef GPUBENCH_CLIENT_SPEC_FLAGS_H_
#define GPUBENCH_CLIENT_SPEC_FLAGS_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "gpubench/v1/spec.pb.h"

namespace gpubench::client {

// The spec flags the CLI understands, with a one-line help each.
const std::map<std::string, std::string>& SpecFlagHelp();

// Whether the spec flag `name` is a switch (channels-last, check-numerics...):
// bare, it means on.
bool IsSpecSwitch(const std::string& name);

// Applies flags (name without "--" -> value) over *spec. InvalidArgument
// names the flag for an unknown flag or a bad value.
absl::Status ApplySpecFlags(const std::map<std::string, std::string>& flags,
                            v1::JobSpec* spec);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_SPEC_FLAGS_H_
