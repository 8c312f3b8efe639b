// The roofline of a job's runs: each profiled model run's achieved FLOP/s
// and estimated memory traffic against its device's peaks, which the host's
// own matmul and device-to-device copy runs measured, and a verdict:
// compute-bound, memory-bound or launch/host-bound. Shared by `gpubench show`
// and the report.
#ifndef GPUBENCH_REPORT_ROOFLINE_H_
#define GPUBENCH_REPORT_ROOFLINE_H_

#include <map>
#include <string>
#include <vector>

#include "gpubench/v1/result.pb.h"

namespace gpubench::report {

// A CUDA run whose kernels kept the GPU busy less than this share of its
// measured time per iteration waits on the host (launches, input).
inline constexpr double kHostBoundDeviceShare = 0.7;

// A run this far above its roof shows the measured peaks to be too low (a
// matmul or copy too small to reach the device's peak): no verdict.
inline constexpr double kBeyondPeak = 1.05;

struct DevicePeaks {
  // The best matmul's FLOP/s on the device, by precision (v1::Precision,
  // unspecified counted as fp32).
  std::map<int, double> flops_per_s;
  // The best device-to-device copy, as memory traffic: each byte copied is
  // read once and written once.
  double bytes_per_s = 0;
  // The GPU's dense datasheet peak by precision, as its runs recorded it.
  std::map<int, double> datasheet_flops_per_s;
};

// Peaks by device ("cuda:0", "cpu") from the succeeded matmul and
// device-to-device copy runs among a job's runs and the host's peak_runs,
// and the datasheet's from any run that recorded it.
std::map<std::string, DevicePeaks> PeaksOf(const std::vector<const v1::Run*>& runs,
                                           const std::vector<v1::Run>& peak_runs);

// The peaks a run is held against: its device's best matmul FLOP/s at the
// run's precision and its copy traffic; 0 each where not measured.
struct RunPeaks {
  double flops_per_s = 0;
  double bytes_per_s = 0;
};
RunPeaks PeaksForRun(const std::map<std::string, DevicePeaks>& peaks, const v1::Run& run);

struct RooflinePoint {
  const v1::Run* run = nullptr;
  std::string device;
  double flops_per_s = 0;
  double bytes_per_s = 0;  // estimated memory traffic
  double intensity = 0;    // FLOPs per byte of traffic
  // The device's peaks at the run's precision; 0 where not measured.
  double peak_flops_per_s = 0;
  double peak_bytes_per_s = 0;
  // The GPU's dense datasheet peak at the precision; 0 where unknown.
  double datasheet_flops_per_s = 0;
  // Achieved FLOP/s over the roof at this intensity, min(peak FLOP/s,
  // intensity x peak bandwidth); 0 without peaks.
  double roof_share = 0;
  // "compute-bound", "memory-bound", "launch/host-bound", or "" where the
  // device's peaks are not measured, or lower than the run.
  std::string verdict;
  std::string why;  // the figures behind the verdict, in words
};

// The runs among runs (succeeded, with FLOPs and a traffic estimate: the
// built-in models, profiled) as points, in order.
std::vector<RooflinePoint> Roofline(const std::vector<const v1::Run*>& runs,
                                    const std::map<std::string, DevicePeaks>& peaks);

// True when any run has a memory traffic estimate (was profiled).
bool AnyRooflineFigures(const std::vector<const v1::Run*>& runs);

// True when any run is held against the host's peaks: one with a roofline
// figure, or a language model's (MFU against the measured matmul, decoding
// against the copy).
bool UsesPeaks(const std::vector<const v1::Run*>& runs);

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_ROOFLINE_H_
