// gpubenchd --check-confinement: proves on a host what a job's worker can
// reach. A worker started exactly as a job's (the daemon's launcher limits)
// confines itself, then tries to read what it must not (the data directory,
// the database, the token file, the TLS key, /etc/shadow, any path the
// operator adds), to write outside its scratch folder, and to write inside
// it, and reports each attempt. Thread-compatible.
#ifndef GPUBENCH_SERVER_CONFINEMENT_CHECK_H_
#define GPUBENCH_SERVER_CONFINEMENT_CHECK_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "launcher/process.h"

namespace gpubench::server {

// Runs the check, printing one line per attempt to out. OK when every
// attempt went as expected; FailedPrecondition saying how many did not, or
// why the worker could not run.
absl::Status CheckConfinement(const std::string& worker_path, const worker::WorkerLimits& limits,
                              const std::string& data_dir,
                              const std::vector<std::string>& must_not_read, std::ostream& out);

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_CONFINEMENT_CHECK_H_
