// What the spec layer's files share (spec.cc, spec_validate.cc,
// spec_strings.cc, sweep.cc): not for other layers, which use spec.h.
#ifndef GPUBENCH_COMMON_SPEC_CHECKS_H_
#define GPUBENCH_COMMON_SPEC_CHECKS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/message.h"
#include "gpubench/v1/spec.pb.h"

namespace gpubench {

// INVALID_ARGUMENT "path: what".
inline absl::Status Invalid(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// Every string field of message, found by reflection (a field added later
// is covered too): no NUL anywhere, no control byte outside free text
// (spec_strings.cc). path is the message's own path.
absl::Status CheckStringsOf(const std::string& path, const google::protobuf::Message& message);

// The checks of one point, defaults filled in (spec_point.cc), path its
// name in messages ("spec.sweep (run 3)"): the input's size against its
// bounds and the model's floor; whether its mode, execution, input and
// device apply to the workload; what a point of several ranks needs; what
// a pair of GPUs (peer_device) and a kernel copy need; what a serving run
// needs, and that no other run sets its load.
absl::Status CheckSize(const std::string& path, const v1::RunConfig& c);
absl::Status CheckApplies(const std::string& path, const v1::RunConfig& c);
absl::Status CheckDistributed(const std::string& path, const v1::RunConfig& c);
absl::Status CheckPair(const std::string& path, const v1::RunConfig& c);
absl::Status CheckServe(const std::string& path, const v1::RunConfig& c);

// The checks of the n-th point of spec's sweep, base and axes combined,
// which fill in its defaults on the way (spec_validate.cc).
absl::Status ValidatePoint(const v1::JobSpec& spec, int n, v1::RunConfig* config);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_SPEC_CHECKS_H_
