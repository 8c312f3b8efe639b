// Job specs: JSON reading and writing, config keys and enum names
// (spec.cc), validation (spec_validate.cc, spec_strings.cc) and sweep
// expansion with defaults (sweep.cc). Works on gpubench.v1 messages;
// torch-free. Thread-safe (no state).
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
#include "gpubench/v1/worker.pb.h"
#include "common/workload_registry.h"  // IsModelWorkload, IsDistributedWorkload, ModelCost

namespace gpubench {

// The most runs one job may expand to.
inline constexpr int kMaxSweepPoints = 512;

// Bounds on what one spec may ask for (docs/jobs.md, "Bounds").
inline constexpr size_t kMaxModelPathBytes = 4096;   // params.model_path
inline constexpr size_t kMaxNameBytes = 256;         // spec.name, upload names
inline constexpr int kMaxLabels = 32;                // spec.labels entries
inline constexpr size_t kMaxLabelKeyBytes = 64;      // each label key
inline constexpr size_t kMaxLabelValueBytes = 256;   // each label value
inline constexpr int kMaxInputs = 16;                // params.inputs
inline constexpr int kMaxInputRank = 8;              // dims of one input
inline constexpr int64_t kMaxInputElements = int64_t{1} << 31;  // one input, batch included
inline constexpr int64_t kMaxBatchPixels = int64_t{1} << 31;    // batch × image_size²
inline constexpr int64_t kMaxBatchTokens = int64_t{1} << 26;    // batch × sequence_length
inline constexpr int kMaxTraceRequests = 20000;  // a serving trace's requests (stored with each run)
inline constexpr int kMaxTraceTokens = 1048576;   // a trace request's prompt or output
inline constexpr double kMaxTraceArrivalMs = 86400000;  // a trace's last arrival: a day
inline constexpr double kMinRequestRate = 0.001;        // requests/s of an open loop
inline constexpr int kMaxServeSlices = 1000;  // a serving run's time slices (ServeLoad.slice_ms)
inline constexpr int kMaxJsonDepth = 32;             // nesting of a spec's JSON

// True for exactly 64 lower-case hex digits: a sha256 as the API spells it.
bool IsSha256Hex(std::string_view s);

// Device "cuda:all": the same runs on each of the daemon's GPUs, side by side
// (JobSpec.parallel_devices); the daemon replaces it by cuda:0 ... cuda:N-1.
inline constexpr char kEveryGpu[] = "cuda:all";

// Parses a spec from its protobuf JSON form. Unknown fields, values of the
// wrong type, a key given twice in one object (in either of its spellings,
// "batch_size" or "batchSize") and nesting deeper than kMaxJsonDepth are
// InvalidArgument naming the field, prefixed with "spec: ".
// A number the JSON sets to 0 where protobuf reads 0 as unset and unset is
// a non-zero default ("batch_size": 0 would run batch 32) is InvalidArgument
// naming the field.
absl::StatusOr<v1::JobSpec> ParseJobSpecJson(std::string_view json);

// Prints a spec (or any message) as indented protobuf JSON with the proto
// field names (snake_case).
std::string MessageToJson(const google::protobuf::Message& message,
                          bool multiline = true);

// Checks every field a user can get wrong. InvalidArgument names the first
// bad field by its path, e.g. "spec.sweep.batch_size[2]: must be in
// [1, 65536], got 0". A NUL byte in any string, or another control byte in
// one that is not free text (the name and label values are), is refused too:
// "spec.base.params.model_path: contains a NUL byte".
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

// What a worker gets of a job's spec besides its runs: the settings every
// run shares (measurement, profiling, telemetry, numerics, CPU threads), as
// the planned spec holds them, defaults filled.
v1::RunSettings WorkerSettingsOf(const v1::JobSpec& spec);

// Fills every field of `config` that was left 0 or empty with what it means
// (common/workload_registry.h: batch 32, the workload's image size, fp32,
// eager, "auto", ...): ExpandSweep's configs, and so every stored run's,
// carry them, and compare field by field.
void FillConfigDefaults(v1::RunConfig* config);

// What config would be with nothing set but what picks its defaults (the
// workload, its ddp_model, the mode, the input source), defaults filled:
// the reference that tells which of config's fields differ from them.
v1::RunConfig DefaultsFor(const v1::RunConfig& config);

// The cost of the built-in model config runs (ddp: its ddp_model) at its
// params (common/workload_registry.h's ModelCost); all zero for a workload
// that is not a built-in model. Defaults filled.
ModelCost CostOf(const v1::RunConfig& config);

// The WorkloadParams fields set in config (away from their defaults) that
// its workload does not read ("model_size" on resnet50): they are accepted
// but mean nothing there. In field order.
std::vector<std::string> UnreadParams(const v1::RunConfig& config);

// A run config as a key: equal configs give equal keys, in every build
// ("k1:" and the base64 of protobuf's deterministic binary form, a format
// protobuf keeps stable). Stored: Job.max_batch_size_fits is keyed by it.
std::string ConfigKey(const v1::RunConfig& config);
// The config of a key; also reads the protobuf text keys of earlier versions.
// InvalidArgument for anything else.
absl::StatusOr<v1::RunConfig> ParseConfigKey(const std::string& key);
// ConfigKey of everything about a run's config but its batch size: the key
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
