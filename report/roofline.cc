#include "report/roofline.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/workload_registry.h"
#include "report/format.h"

namespace gpubench::report {
namespace {

int PrecisionOf(const v1::RunConfig& c) {
  return c.precision() == v1::PRECISION_UNSPECIFIED ? v1::PRECISION_FP32 : c.precision();
}

}  // namespace

std::map<std::string, DevicePeaks> PeaksOf(const std::vector<const v1::Run*>& runs,
                                           const std::vector<v1::Run>& peak_runs) {
  std::map<std::string, DevicePeaks> peaks;
  std::vector<const v1::Run*> all = runs;
  for (const v1::Run& r : peak_runs) all.push_back(&r);
  for (const v1::Run* run : all) {
    const v1::Run& r = *run;
    if (!Measured(r)) continue;
    const v1::RunResult& res = r.result();
    if (res.datasheet_peak_tflops() > 0) {
      peaks[RunDevice(r)].datasheet_flops_per_s[PrecisionOf(r.config())] =
          res.datasheet_peak_tflops() * 1e12;
    }
    if (IsWorkload(r.config().workload(), WorkloadId::kMatmul) && res.achieved_tflops() > 0) {
      double& best = peaks[RunDevice(r)].flops_per_s[PrecisionOf(r.config())];
      best = std::max(best, res.achieved_tflops() * 1e12);
    } else if (IsWorkload(r.config().workload(), WorkloadId::kCopy) &&
               r.config().params().copy_direction() == v1::COPY_DIRECTION_DEVICE_TO_DEVICE &&
               res.bandwidth_gb_per_s() > 0) {
      double& best = peaks[RunDevice(r)].bytes_per_s;
      best = std::max(best, 2 * res.bandwidth_gb_per_s() * 1e9);
    }
  }
  return peaks;
}

RunPeaks PeaksForRun(const std::map<std::string, DevicePeaks>& peaks, const v1::Run& run) {
  RunPeaks out;
  auto d = peaks.find(RunDevice(run));
  if (d == peaks.end()) return out;
  auto f = d->second.flops_per_s.find(PrecisionOf(run.config()));
  if (f != d->second.flops_per_s.end()) out.flops_per_s = f->second;
  out.bytes_per_s = d->second.bytes_per_s;
  return out;
}

bool AnyRooflineFigures(const std::vector<const v1::Run*>& runs) {
  return std::any_of(runs.begin(), runs.end(), [](const v1::Run* r) {
    return r->result().memory_bytes_per_iteration() > 0;
  });
}

bool UsesPeaks(const std::vector<const v1::Run*>& runs) {
  return AnyRooflineFigures(runs) ||
         std::any_of(runs.begin(), runs.end(),
                     [](const v1::Run* r) { return r->result().tokens_per_s() > 0; });
}

std::vector<RooflinePoint> Roofline(const std::vector<const v1::Run*>& runs,
                                    const std::map<std::string, DevicePeaks>& peaks) {
  std::vector<RooflinePoint> points;
  for (const v1::Run* run : runs) {
    const v1::RunResult& res = run->result();
    if (!Measured(*run) || res.flops_per_iteration() <= 0 ||
        res.memory_bytes_per_iteration() <= 0 || run->config().batch_size() <= 0) {
      continue;
    }
    RooflinePoint p;
    p.run = run;
    p.device = RunDevice(*run);
    const double iterations_per_s = res.throughput_samples_per_s() / run->config().batch_size();
    p.flops_per_s = res.flops_per_iteration() * iterations_per_s;
    p.bytes_per_s = res.memory_bytes_per_iteration() * iterations_per_s;
    p.intensity = res.flops_per_iteration() / res.memory_bytes_per_iteration();
    const RunPeaks roof = PeaksForRun(peaks, *run);
    p.peak_flops_per_s = roof.flops_per_s;
    p.peak_bytes_per_s = roof.bytes_per_s;
    if (auto d = peaks.find(p.device); d != peaks.end()) {
      auto f = d->second.datasheet_flops_per_s.find(PrecisionOf(run->config()));
      if (f != d->second.datasheet_flops_per_s.end()) p.datasheet_flops_per_s = f->second;
    }
    const double share = res.device_kernel_share();
    if (share > 0 && share < kHostBoundDeviceShare) {
      p.verdict = "launch/host-bound";
      p.why = absl::StrFormat("the GPU ran kernels %.0f%% of each iteration", 100 * share);
    }
    if (p.peak_flops_per_s > 0 && p.peak_bytes_per_s > 0) {
      const double ridge = p.peak_flops_per_s / p.peak_bytes_per_s;
      const double roof = std::min(p.peak_flops_per_s, p.intensity * p.peak_bytes_per_s);
      p.roof_share = p.flops_per_s / roof;
      if (p.verdict.empty() && p.roof_share > kBeyondPeak) {
        // The peaks are too low to place the run: no verdict from them.
        p.why = absl::StrFormat(
            "the run beat this host's best measured matmul and copy (%s, %s), which are then "
            "not its peaks: measure matmul in the run's precision at several sizes "
            "(--matmul-size 512,1024,2048,4096) and a device-to-device copy",
            FlopRate(p.peak_flops_per_s), ByteRate(p.peak_bytes_per_s));
      } else if (p.verdict.empty()) {
        p.verdict = p.intensity < ridge ? "memory-bound" : "compute-bound";
        p.why = absl::StrFormat("%.1f FLOP/B %s the ridge at %.1f (%s, %s)", p.intensity,
                                p.intensity < ridge ? "below" : "above", ridge,
                                FlopRate(p.peak_flops_per_s), ByteRate(p.peak_bytes_per_s));
      }
    } else if (p.verdict.empty()) {
      p.why = "no peaks measured for this device and precision: run matmul and a "
              "device-to-device copy on this host";
    }
    points.push_back(std::move(p));
  }
  return points;
}

}  // namespace gpubench::report
