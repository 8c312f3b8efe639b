// The analyses `show` prints after a job's runs. Internal to the CLI.
#ifndef GPUBENCH_CLIENT_ANALYSES_H_
#define GPUBENCH_CLIENT_ANALYSES_H_

#include <ostream>
#include <string>
#include <vector>

#include "client/json_writer.h"
#include "client/output.h"
#include "report/energy.h"
#include "report/roofline.h"
#include "report/speedup.h"

namespace gpubench::client {

// The speedup of each config over its devices, then, per profiled config,
// the self time per sample of each operator category on each device and its
// speedup. Prints nothing for no views.
void PrintDeviceSpeedups(const std::vector<report::DeviceSpeedup>& views, Format format,
                         std::ostream& out);

// The same, written as a JSON array: [{"config", "devices": [{"device", "run_id",
// "run_index", "throughput_samples_per_s", "throughput_ci_low",
// "throughput_ci_high", "speedup", "speedup_ci_low", "speedup_ci_high"}],
// "categories": [{"category", "us_per_sample": {device: us}}]}].
void WriteDeviceSpeedups(const std::vector<report::DeviceSpeedup>& views, JsonWriter& json);

// Each roofline point: achieved TFLOP/s, estimated traffic, intensity, the
// device's peaks, the share of the roof and the verdict with its why.
void PrintRoofline(const std::vector<report::RooflinePoint>& points, Format format,
                   std::ostream& out);

// The same, written as a JSON array: [{"run_id", "run_index", "config", "device",
// "flops_per_s", "bytes_per_s", "intensity_flop_per_byte",
// "peak_flops_per_s", "peak_bytes_per_s", "roof_share", "verdict", "why"}].
void WriteRoofline(const std::vector<report::RooflinePoint>& points, JsonWriter& json);

// A distributed job's figures: each collective run's message size, ranks,
// time per operation and nccl-tests' algbw and busbw ("-" and a note for one
// rank, which moves nothing); each ddp run's ranks,
// samples/s (all ranks) and scaling efficiency T_K / (K * T_1) against the
// job's run of the same config on one rank. Prints nothing without them.
void PrintDistributed(const std::vector<v1::Run>& runs, Format format, std::ostream& out);

// The same, written as a JSON array: [{"run_id", "run_index", "config", "workload",
// "world_size", "rank_devices", "collective_op", "bytes", "time_us",
// "algorithm_bandwidth_gb_per_s", "bus_bandwidth_gb_per_s",
// "throughput_samples_per_s", "scaling_efficiency"}] (efficiency -1 where the
// job has no one-rank run of the config; a one-rank collective has "note":
// "one rank: nothing moved" instead of the two bandwidths).
void WriteDistributed(const std::vector<v1::Run>& runs, JsonWriter& json);

// The energy Pareto curve of each config run at several power limits or
// clock locks: each setting's samples/s with its interval, samples per
// joule, mean power, and whether it is on the curve (no other setting has
// at least as much of both and more of one). Prints nothing without them.
void PrintEnergy(const std::vector<report::EnergyCurve>& curves, Format format,
                 std::ostream& out);

// The same, written as a JSON array: [{"config", "points": [{"run_id",
// "run_index", "power_limit_w", "gpu_clocks", "throughput_samples_per_s",
// "samples_per_joule", "power_w", "on_curve"}]}].
void WriteEnergy(const std::vector<report::EnergyCurve>& curves, JsonWriter& json);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_ANALYSES_H_
