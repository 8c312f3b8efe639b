#ifndef GPUBENCH_COMMON_VERSION_H_
#define GPUBENCH_COMMON_VERSION_H_

#include <string>

#include "gpubench/v1/job.pb.h"

namespace gpubench {

inline constexpr char kGpubenchVersion[] = "0.1.0";

// What --version prints: "PROGRAM 0.1.0", then the LibTorch, CUDA and cuDNN
// versions a worker probe found (HostInfo's fields; "none" for one it has
// not), or `why` in their place when there was no probe.
std::string VersionText(const std::string& program, const v1::HostInfo* probed,
                        const std::string& why = "");

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_VERSION_H_
