// What the daemon knows of its host: the machine (hostname, OS, kernel, CPU,
// memory) and, from `gpubench-worker --probe`, its devices and LibTorch.
#ifndef GPUBENCH_SERVER_HOST_PROBE_H_
#define GPUBENCH_SERVER_HOST_PROBE_H_

#include <string>

#include "gpubench/v1/job.pb.h"

namespace gpubench::server {

// Static facts about this machine: hostname, OS, kernel, CPU, memory.
v1::HostInfo ProbeMachine(const std::string& address);

// ProbeMachine plus what `gpubench-worker --probe` reports (GPUs, CUDA,
// cuDNN, torch). A worker that cannot probe leaves those fields empty and
// its error in *warning.
v1::HostInfo ProbeHost(const std::string& address,
                       const std::string& worker_path, std::string* warning);

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_HOST_PROBE_H_
