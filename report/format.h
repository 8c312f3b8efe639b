// Formatting shared by the CLI's tables and the HTML report.
#ifndef GPUBENCH_REPORT_FORMAT_H_
#define GPUBENCH_REPORT_FORMAT_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "gpubench/v1/result.pb.h"

namespace gpubench::report {

// "512.0 MiB", "2.00 GiB"; "-" for 0 or less.
std::string Bytes(int64_t bytes);

// A run's throughput interval as "low-high" (each with `decimals`
// decimals), or why it has none: "3 steps: no interval" (fewer than 5
// trials, windows or steps, RunResult.interval_samples); "-" for a run
// stored before intervals said why.
std::string ThroughputIntervalText(const v1::RunResult& result, int decimals);

// The enum value's short name ("succeeded" for JOB_STATE_SUCCEEDED); 0 (an
// unset field) reads as the first value.
std::string Short(const google::protobuf::EnumDescriptor* type, int value);

// A run whose figures are a whole measurement: succeeded, with a throughput.
// The analyses and plots use only these.
bool Measured(const v1::Run& run);

// Whether a run ran out of memory, or was skipped after a smaller batch of
// its config did: then "the largest batch that fit" is news.
bool OutOfMemory(const v1::Run& run);

// The configs (ConfigKeyWithoutBatch) of which a run ran out of memory or
// was skipped after one: where "the largest batch that fit" is a limit.
std::set<std::string> OutOfMemoryConfigs(const std::vector<const v1::Run*>& runs);

// Pointers to runs, in order, for the analyses that take them.
std::vector<const v1::Run*> RunPointers(const std::vector<v1::Run>& runs);

// The device a run ran on as it resolved it ("cuda:0"), else as asked.
std::string RunDevice(const v1::Run& run);

// A FLOP rate in TFLOP/s at 1 TFLOP/s and above ("203.0 TFLOP/s"), else in
// GFLOP/s ("41.9 GFLOP/s"); "" under 0.1 GFLOP/s.
std::string FlopRate(double flops_per_s);

// A byte rate in TB/s at 1 TB/s and above ("3.35 TB/s"), else in GB/s
// ("12.6 GB/s").
std::string ByteRate(double bytes_per_s);

// A numerics check (JobSpec.check_numerics) in a few words: "numerics ok:
// output 3.1e-06 (tolerance 1e-04 on the output)", "numerics FAILED: inf or
// NaN in the output", "numerics not checked: <why>"; "" where none ran.
// Training runs list the loss and the first parameter's gradient too.
std::string NumericsNote(const v1::NumericsCheck& check);

// The run has NVML's readings of its GPU over its measured window
// (result.telemetry: utilisation, power, clocks).
bool GpuTelemetry(const v1::RunResult& result);

// The warnings on a run's figures, in a word or two each: "stopped at
// max-time" (else "unstable"), "throttled", "contended", and "partial" for a
// cancelled run's figures. Empty for a run without figures.
std::vector<std::string> RunWarnings(const v1::Run& run);

// What a RunWarnings word means, in a sentence, for the legends under run
// tables; "" for another word.
std::string WarningMeaning(const std::string& warning);

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_FORMAT_H_
