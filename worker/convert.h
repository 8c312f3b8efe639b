// Converts between gpubench.v1 messages and the engine's plain types.
// Torch-free (docs/libtorch.md, trap 2). Thread-safe (no state).
#ifndef GPUBENCH_WORKER_CONVERT_H_
#define GPUBENCH_WORKER_CONVERT_H_

#include "gpubench/v1/result.pb.h"
#include "gpubench/v1/spec.pb.h"
#include "worker/engine/config.h"
#include "worker/engine/types.h"

namespace gpubench::worker {

// A planned v1 config (validated, its defaults filled: ExpandSweep) as the
// engine takes it.
engine::RunConfig ToEngineConfig(const v1::RunConfig& config);

// Measurement rules with every unset (zero) field at its default.
measure::MeasureConfig ToMeasureConfig(const v1::Measurement& m);

// Fills run->result.telemetry (the summary of series over a measured window
// of window_ms at samples_per_s) and run->telemetry_series.
void FillTelemetry(const telemetry::Series& series, double samples_per_s, double window_ms,
                   v1::Run* run);

// Fills run->state, error, result and samples from an engine outcome.
void FillRun(const engine::RunOutcome& outcome, v1::Run* run);

}  // namespace gpubench::worker

#endif  // GPUBENCH_WORKER_CONVERT_H_
