#include "common/version.h"

#include "absl/strings/str_cat.h"

namespace gpubench {

std::string VersionText(const std::string& program, const v1::HostInfo* probed,
                        const std::string& why) {
  std::string text = absl::StrCat(program, " ", kGpubenchVersion, "\n");
  if (probed == nullptr) return absl::StrCat(text, why, why.empty() ? "" : "\n");
  auto line = [&text](const char* name, const std::string& version) {
    absl::StrAppend(&text, name, " ", version.empty() ? "none" : version, "\n");
  };
  line("LibTorch", probed->torch_version());
  line("CUDA", probed->cuda_version());
  line("cuDNN", probed->cudnn_version());
  return text;
}

}  // namespace gpubench
