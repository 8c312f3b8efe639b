// Job specs: JSON reading and writing, validation and sweep expansion.
// Works on gpubench.v1 messages; torch-free. Thread-safe (no state).
#ifndef GPUBENCH_COMMON_SPEC_H_
#define GPUBENCH_COMMON_SPEC_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpubench/v1/job.pb.h"
#include "gpubench/v1/result.pb.h"
#include "gpubench/v1/spec.pb.h"

namespace gpubench {

// The most runs one job may expand to.
inline constexpr int kMaxSweepPoints = 512;

// The longest params.model_path accepted.
inline constexpr size_t kMaxModelPathBytes = 4096;

// True for exactly 64 lower-case hex digits: a sha256 as the API spells it.
bool IsSha256Hex(std::string_view s);

// The built-in workload names, in the order the docs list them.
const std::vector<std::string>& BuiltinWorkloads();

// Parses a spec from its protobuf JSON form. Unknown fields and values of the
// wrong type are InvalidArgument with the parser's message, which names the
// field, prefixed with "spec: ".
absl::StatusOr<v1::JobSpec> ParseJobSpecJson(std::string_view json);

// Prints a spec (or any message) as indented protobuf JSON with the proto
// field names (snake_case).
std::string MessageToJson(const google::protobuf::Message& message,
                          bool multiline = true);

// Checks every field a user can get wrong. InvalidArgument names the first
// bad field by its path, e.g. "spec.sweep.batch_size[2]: must be in
// [1, 65536], got 0".
absl::Status ValidateJobSpec(const v1::JobSpec& spec);

// Number of runs the spec expands to (the product of non-empty axes),
// saturating above kMaxSweepPoints + 1.
int CountSweepPoints(const v1::Sweep& sweep);

// The Cartesian product of spec.sweep over spec.base, in a stable order: axes
// in Sweep's declaration order, the last one varying fastest. Validates first;
// more than kMaxSweepPoints points is InvalidArgument, and so is a run that
// combines swept values a single config may not have (a CUDA graph on "cpu",
// a swept torchscript without a model), named as "spec.sweep (run N).field".
absl::StatusOr<std::vector<v1::RunConfig>> ExpandSweep(const v1::JobSpec& spec);

// Everything about a run's config but its batch size, as one line
// ("workload: \"resnet50\" mode: MODE_TRAIN precision: PRECISION_FP16"): the key
// under which Job.max_batch_size_fits records the largest batch that fit.
std::string ConfigKeyWithoutBatch(const v1::RunConfig& config);

// Books a finished run into its job: runs_done, and for a succeeded run the
// largest batch size that fit for its config.
void CountFinishedRun(const v1::Run& run, v1::Job* job);

// Short names for enum values, as the CLI takes and prints them: the value
// name without the enum's prefix, lower-cased ("fp16" for PRECISION_FP16).
// Parse accepts the short or the full name, any case; NotFound otherwise.
std::string EnumShortName(const google::protobuf::EnumDescriptor* type,
                          int value);
absl::StatusOr<int> ParseEnumShortName(
    const google::protobuf::EnumDescriptor* type, std::string_view name);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_SPEC_H_
