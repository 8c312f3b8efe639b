// The command that submits a stored job again (`show`'s "reproduce:"
// line): `gpubench submit` with the spec flags that rebuild its spec, the
// inverse of ApplySpecFlags, checked by planning both. Torch-free;
// thread-safe (no state).
#ifndef GPUBENCH_CLIENT_REPRO_H_
#define GPUBENCH_CLIENT_REPRO_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gpubench/v1/spec.pb.h"

namespace gpubench::client {

// A spec flag's name (without "--") and value.
using SpecFlag = std::pair<std::string, std::string>;

// The flags that say what spec sets, in the schema's order: each field with
// a flag that holds a value (outside the runs, one other than its default),
// a sweep axis as a comma list (over the base's value, which the axis
// replaces), a range as
// MIN:MAX, a group's fields as NAME=VALUE pairs. A field no flag carries (a
// serving trace, a field without a flag) is left out: SpecFlagsFor says so.
std::vector<SpecFlag> FlagsOf(const v1::JobSpec& spec);

// FlagsOf's flags where applying them to an empty spec plans what spec
// plans (the same runs, the same settings outside them);
// FailedPrecondition naming the first thing they miss otherwise.
absl::StatusOr<std::vector<SpecFlag>> SpecFlagsFor(const v1::JobSpec& spec);

// The line that submits spec again: "gpubench submit --workload gpt
// --batch 8,16 ..." (values quoted for a POSIX shell where they need it);
// where flags cannot carry it, through the job's spec file, saying why:
// "gpubench show JOB --output spec > JOB.json && gpubench submit JOB.json
// # base.serve.trace has no flag (...)".
std::string ReproCommand(const std::string& job_id, const v1::JobSpec& spec);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_REPRO_H_
