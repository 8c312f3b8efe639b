#include "report/format.h"

#include "absl/strings/str_format.h"
#include "common/spec.h"

namespace gpubench::report {

std::string Bytes(int64_t bytes) {
  if (bytes <= 0) return "-";
  if (bytes >= (int64_t{1} << 30)) return absl::StrFormat("%.2f GiB", bytes / double(1 << 30));
  return absl::StrFormat("%.1f MiB", bytes / double(1 << 20));
}

std::string Short(const google::protobuf::EnumDescriptor* type, int value) {
  return EnumShortName(type, value == 0 ? 1 : value);
}

}  // namespace gpubench::report
