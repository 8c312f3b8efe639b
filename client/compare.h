// Run-against-run comparison: the configs' differences, and the decision
// rule (common/verdict.h) under the CLI's names. Thread-safe (no state).
#ifndef GPUBENCH_CLIENT_COMPARE_H_
#define GPUBENCH_CLIENT_COMPARE_H_

#include <string>
#include <vector>

#include "common/verdict.h"
#include "gpubench/v1/result.pb.h"

namespace gpubench::client {

// The decision rule is common/verdict.h's, shared with the other views.
using verdict::CompareRepetitions;
using verdict::CompareRule;
using verdict::CompareRuns;
using verdict::Comparison;
using verdict::RunTimePerSampleMs;
using verdict::Verdict;
using verdict::VerdictName;

// Where two configs differ, as "workload mlp vs resnet50, params.image_size
// 224 vs 32"; empty when they are the same. work_only looks only at what a
// run does (workload, its parameters, mode), not at how (device, precision,
// batch size, execution...): a time per sample compares runs of the same
// work, however each ran it.
std::string ConfigDifferences(const v1::RunConfig& a, const v1::RunConfig& b, bool work_only);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_COMPARE_H_
