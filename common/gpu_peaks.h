// The dense (no sparsity) datasheet peaks of the GPUs gpubench knows, for
// MFU: model FLOPs at the measured rate over the peak the vendor states for
// the precision. Plain C++.
#ifndef GPUBENCH_COMMON_GPU_PEAKS_H_
#define GPUBENCH_COMMON_GPU_PEAKS_H_

#include <string_view>

namespace gpubench {

// TFLOP/s of the GPU named gpu_name (as CUDA and NVML name it: "NVIDIA
// H100 80GB HBM3") for precision ("fp32", "fp32_default", "tf32", "fp16",
// "bf16", "fp8"); 0 where the GPU or the precision is not in the table.
// fp32 and fp32_default (TF32 off in matrix products) are the CUDA cores'
// peak.
double DatasheetPeakTflops(std::string_view gpu_name, std::string_view precision);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_GPU_PEAKS_H_
