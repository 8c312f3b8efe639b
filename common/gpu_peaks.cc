#include "common/gpu_peaks.h"

namespace gpubench {
namespace {

struct Peaks {
  // Every word must be in the name, none of `unless`.
  const char* words[2];
  const char* unless;
  double fp32, tf32, half, fp8;  // half: fp16 and bf16 alike
};

// NVIDIA's datasheets, dense figures (the sparse ones are twice these).
// More specific rows first.
constexpr Peaks kPeaks[] = {
    {{"H100", "PCIe"}, nullptr, 51.2, 378.0, 756.0, 1513.0},
    {{"H100", "NVL"}, nullptr, 60.0, 417.5, 835.0, 1670.5},
    {{"H100", nullptr}, nullptr, 66.9, 494.7, 989.4, 1978.9},  // SXM5: "H100 80GB HBM3"
    {{"H200", nullptr}, nullptr, 66.9, 494.7, 989.4, 1978.9},
    {{"GH200", nullptr}, nullptr, 66.9, 494.7, 989.4, 1978.9},
    {{"A100", nullptr}, nullptr, 19.5, 156.0, 312.0, 0},
    {{"L40S", nullptr}, nullptr, 91.6, 183.0, 362.05, 733.0},
    {{"L4", nullptr}, "L40", 30.3, 60.0, 121.0, 242.5},
    {{"A10", nullptr}, "A100", 31.2, 62.5, 125.0, 0},
};

bool Matches(const Peaks& p, std::string_view name) {
  for (const char* word : p.words) {
    if (word != nullptr && name.find(word) == std::string_view::npos) return false;
  }
  return p.unless == nullptr || name.find(p.unless) == std::string_view::npos;
}

}  // namespace

double DatasheetPeakTflops(std::string_view gpu_name, std::string_view precision) {
  for (const Peaks& p : kPeaks) {
    if (!Matches(p, gpu_name)) continue;
    if (precision == "fp32" || precision == "fp32_default") return p.fp32;
    if (precision == "tf32") return p.tf32;
    if (precision == "fp16" || precision == "bf16") return p.half;
    if (precision == "fp8") return p.fp8;
    return 0;
  }
  return 0;
}

}  // namespace gpubench
