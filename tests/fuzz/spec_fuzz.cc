// libFuzzer target: a job spec as a user or a client sends it, through
// parsing, validation and sweep expansion (common/spec.h).
//
// The first byte picks the form of the rest: even, protobuf JSON (a spec file
// given to `gpubench submit`, read by ParseJobSpecJson); odd, the binary wire
// form (the JobSpec of a SubmitJob call, as gRPC hands it to the daemon). The
// committed seeds start with 'J' (0x4a) and 'W' (0x57).
//
// Findings are sanitizer reports and the checks below, which hold
// ExpandSweep to what its callers rely on; refusing a spec is not a finding.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "common/spec.h"
#include "google/protobuf/stubs/logging.h"

namespace gpubench {
namespace {

// Aborts naming the broken promise, so that libFuzzer saves the input.
void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "spec_fuzz: %s\n", what);
  std::abort();
}

// The daemon and the worker take every run ExpandSweep returns as valid, so
// each must pass the checks a base config gets, including the ones that
// relate two fields.
void CheckExpansion(const v1::JobSpec& spec,
                    const std::vector<v1::RunConfig>& runs) {
  Check(!runs.empty() && runs.size() <= static_cast<size_t>(kMaxSweepPoints),
        "run count outside [1, kMaxSweepPoints]");
  Check(static_cast<int>(runs.size()) == CountSweepPoints(spec.sweep()),
        "run count differs from CountSweepPoints");
  v1::JobSpec one = spec;
  one.clear_sweep();
  for (const v1::RunConfig& run : runs) {
    *one.mutable_base() = run;
    Check(ValidateJobSpec(one).ok(), "an expanded run fails validation");
    // Written so that NaN fails: the documented range is [0, 100].
    Check(run.learning_rate() >= 0 && run.learning_rate() <= 100,
          "accepted learning_rate outside [0, 100]");
  }
  const double cv = spec.measurement().cv_threshold();
  Check(cv >= 0 && cv < 1, "accepted cv_threshold outside [0, 1)");
}

// ExpandSweep validates first; a refusal must be InvalidArgument.
void Expand(const v1::JobSpec& spec) {
  auto runs = ExpandSweep(spec);
  if (!runs.ok()) {
    Check(runs.status().code() == absl::StatusCode::kInvalidArgument,
          "ExpandSweep refused with a code other than InvalidArgument");
    return;
  }
  CheckExpansion(spec, *runs);
}

void FuzzOne(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const bool wire = (data[0] & 1) != 0;
  const char* body = reinterpret_cast<const char*>(data + 1);
  const size_t body_size = size - 1;
  if (wire) {
    v1::JobSpec spec;
    // Bytes that are not a JobSpec never reach the daemon's handler.
    if (!spec.ParseFromArray(body, static_cast<int>(body_size))) return;
    Expand(spec);
    return;
  }
  auto spec = ParseJobSpecJson(std::string_view(body, body_size));
  if (!spec.ok()) {
    Check(spec.status().code() == absl::StatusCode::kInvalidArgument,
          "ParseJobSpecJson refused with a code other than InvalidArgument");
    return;
  }
  Expand(*spec);
}

}  // namespace
}  // namespace gpubench

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // The wire parser logs every string that is not UTF-8 before it refuses
  // the message; the refusal is all that matters here, and a log line per
  // input would bury libFuzzer's own output.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpubench::FuzzOne(data, size);
  return 0;
}
