// The spec's schema, read from the FieldSchema options of spec.proto (see
// proto/gpubench/v1/schema.proto): which fields a user sets, their bounds,
// flags, units, defaults and sweep axes. Validation, the CLI's flags, sweep
// expansion, the plan's defaults and docs/spec.md all go through it, so a
// spec field is described once, in the proto. Torch-free; thread-safe (the
// table is built once and immutable).
#ifndef GPUBENCH_COMMON_SPEC_SCHEMA_H_
#define GPUBENCH_COMMON_SPEC_SCHEMA_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gpubench/v1/schema.pb.h"
#include "gpubench/v1/spec.pb.h"

namespace gpubench {

// One field of a JobSpec that carries a FieldSchema.
struct SchemaField {
  // Its path below JobSpec ("base.params.prompt_length").
  std::string path;
  // The fields from JobSpec down to it; chain.back() is the field.
  std::vector<const google::protobuf::FieldDescriptor*> chain;
  const v1::FieldSchema* schema = nullptr;
  // The Sweep field that sweeps it (schema->sweep), or null.
  const google::protobuf::FieldDescriptor* sweep = nullptr;

  const google::protobuf::FieldDescriptor* field() const { return chain.back(); }
  // Whether the schema bounds it (min or max given).
  bool bounded() const { return schema->min() != 0 || schema->max() != 0; }
  // Whether it is a field of a run (under JobSpec.base).
  bool in_run() const { return path.rfind("base.", 0) == 0; }
};

// Every field with a schema, depth first in declaration order.
const std::vector<SchemaField>& SpecSchema();

// The field whose flag is flag, or null.
const SchemaField* SchemaFieldByFlag(std::string_view flag);

// The field at path below JobSpec ("measurement.trials"), or null.
const SchemaField* SchemaFieldAt(std::string_view path);

// Checks every bounded number and every enum of message m (a JobSpec, or a
// RunConfig with prefix "spec.base" or a sweep point's), recursing into its
// messages: InvalidArgument naming the field by prefix and path ("spec.base.
// batch_size: must be in [1, 65536], got 0"). A 0 where the schema says 0
// is the default passes. A JobSpec's base and sweep are left to their own
// calls (this one on the base, CheckSweepValues).
absl::Status CheckSchemaBounds(const google::protobuf::Message& m, const std::string& prefix);

// Checks each value of each axis of sweep against its field's bounds (0
// included: an axis value is a value) and enum: "spec.sweep.batch_size[2]:
// must be in [1, 65536], got 0".
absl::Status CheckSweepValues(const v1::Sweep& sweep, const std::string& prefix);

// The Sweep's non-empty axes in declaration order, each as its field.
std::vector<const SchemaField*> SweptFields(const v1::Sweep& sweep);

// Sets f (and its also_sets) on config to value i of its sweep axis.
void ApplySweepValue(const SchemaField& f, const v1::Sweep& sweep, int i, v1::RunConfig* config);

// The WorkloadParams fields the workload named reads, in declaration order
// (each field's schema lists its workloads).
std::vector<std::string> ParamsReadBy(std::string_view workload);

// Fills each parameter of p that workload reads, is 0 and has one default
// for every workload (the schema's default_number).
void FillParamDefaults(std::string_view workload, v1::WorkloadParams* p);

// Fills the default_number of every field of m (a message of the spec's
// schema, e.g. a RunConfig's ServeLoad) that reads 0.
void FillDefaultsOf(google::protobuf::Message* m);

// Whether a run of config reaches beyond its own device: it sets a field
// whose schema says takes_host, so its job takes the whole host.
bool TakesHost(const v1::RunConfig& config);

// A bound or default of the schema's as text: an integer field's without a
// decimal point (the schema's numbers lie well inside int64).
std::string BoundText(const google::protobuf::FieldDescriptor* f, double v);

// Parses text as f's type (a number, on/off, an enum's short name, text),
// holds a number to f's bounds, and sets it on spec's base (with its
// also_sets) or, with to_sweep, adds it to f's sweep axis. The error names
// neither field nor flag: "must be in [1, 65536], got 0".
absl::Status SetFromText(const SchemaField& f, std::string_view text, bool to_sweep,
                         v1::JobSpec* spec);

// Fills every field of spec outside its runs (measurement, profiling,
// telemetry) that is 0 where 0 means its default_number, so that the stored
// plan shows what the worker uses; max_time_ms is at least min_time_ms.
void FillSpecDefaults(v1::JobSpec* spec);

// Whether a JSON 0 at path ("spec.measurement.trials") reads as unset where
// unset is a default that is not 0, outside a run's fields.
bool ZeroIsNotAValue(std::string_view path);

// Field f of m (index < 0: singular; else that element) as a flag takes it:
// an integer exactly, a double as the shortest text that reads back, a bool
// on or off, an enum by its short name, a string as it is.
std::string FieldText(const google::protobuf::Message& m,
                      const google::protobuf::FieldDescriptor* f, int index = -1);

// The settings of spec outside its runs, as the worker uses them once
// FillSpecDefaults has run: "measurement: warmup_iterations 10, ...;
// profiling: enabled off, ...; telemetry: ...". For `spec --dry-run` and
// `show`.
std::string SettingsText(const v1::JobSpec& spec);

// The value text of an enum for help and docs: its values' short names,
// ", "-joined ("train, infer").
std::string EnumValuesText(const google::protobuf::EnumDescriptor* type);

// docs/spec.md: every field of the schema by section, with its flag,
// values, default, sweep axis, the workloads that read it and its help
// (`gpubench reference spec`; spec_reference.cc).
std::string SpecReferenceMarkdown();

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_SPEC_SCHEMA_H_
