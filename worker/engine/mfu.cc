#include <torch/torch.h>

#include <string>

#include "common/gpu_peaks.h"
#include "common/workload_registry.h"
#include "worker/engine/cuda_support.h"
#include "worker/engine/language_model.h"

namespace gpubench::engine {

void PeakFigures(const RunConfig& c, const torch::Device& device, RunOutcome* out) {
  if (device.is_cuda() && out->achieved_tflops > 0) {
    DeviceProbe probe;
    cuda::Probe(&probe);
    const int index = device.has_index() ? device.index() : 0;
    for (const DeviceProbe::Gpu& gpu : probe.gpus) {
      if (gpu.index != index) continue;
      out->datasheet_peak_tflops = DatasheetPeakTflops(gpu.name, PrecisionName(c.precision));
    }
  }
  const WorkloadInfo* info = FindWorkload(c.workload);
  if (info == nullptr || !info->language_model) return;
  if (c.mode != Mode::kTrain || out->throughput_samples_per_s <= 0) return;
  out->tokens_per_s = out->throughput_samples_per_s * c.sequence_length;
  if (out->datasheet_peak_tflops > 0 && out->achieved_tflops > 0) {
    out->mfu = out->achieved_tflops / out->datasheet_peak_tflops;
  }
}

}  // namespace gpubench::engine
