// A child process's environment: this process's own, with some variables
// set (replacing any of the same name). Built before a fork, so that the
// child between fork and exec calls only async-signal-safe functions.
#ifndef GPUBENCH_COMMON_ENVIRONMENT_H_
#define GPUBENCH_COMMON_ENVIRONMENT_H_

#include <map>
#include <string>
#include <vector>

namespace gpubench {

// "NAME=value" entries: environ's, less the names in set, then set's.
std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& set);

// What a worker may see of the daemon's environment (docs/security.md, "The worker's
// environment"): the names the worker, LibTorch, CUDA, NCCL, OpenMP, the
// BLAS and the host's Python read, and nothing else (no credentials, no
// proxy settings, no token files' paths).
bool WorkerMayInherit(const std::string& name);

// EnvironmentWith, keeping of environ only the names WorkerMayInherit.
std::vector<std::string> WorkerEnvironmentWith(const std::map<std::string, std::string>& set);

// Pointers into entries, null-terminated, as execve takes them; valid
// while entries lives.
std::vector<char*> EnvironmentPointers(std::vector<std::string>& entries);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_ENVIRONMENT_H_
