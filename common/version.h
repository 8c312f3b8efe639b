#ifndef GPUBENCH_COMMON_VERSION_H_
#define GPUBENCH_COMMON_VERSION_H_

namespace gpubench {

inline constexpr char kGpubenchVersion[] = "0.1.0";

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_VERSION_H_
