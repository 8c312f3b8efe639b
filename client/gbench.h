// Google Benchmark's JSON, as `--benchmark_out` writes it, for the tools
// that read it (its tools/compare.py, CI dashboards): `gpubench show JOB
// --output gbench` and `gpubench runs --output gbench`.
#ifndef GPUBENCH_CLIENT_GBENCH_H_
#define GPUBENCH_CLIENT_GBENCH_H_

#include <ostream>
#include <string>
#include <vector>

#include "gpubench/v1/result.pb.h"

namespace gpubench::client {

// Writes {"context": {...}, "benchmarks": [...]} with one benchmark per run.
// A benchmark's name is the run's config ("mlp/infer/b8/fp32/cpu"); runs of
// one config are its repetitions (repetition_index), in the order given.
// real_time is the time per iteration (batch / throughput) in microseconds,
// items_per_second the throughput, and p50_ms, p95_ms, p99_ms the latency
// percentiles as counters. gpubench does not measure CPU time per
// iteration: cpu_time repeats real_time. A run that did not succeed is
// written with error_occurred and its error, without times (compare.py
// skips it). `executable` names what produced the file.
void PrintGbench(const std::vector<v1::Run>& runs, const std::string& executable,
                 std::ostream& out);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_GBENCH_H_
