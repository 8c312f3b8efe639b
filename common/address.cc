#include "common/address.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpubench {

bool IsLoopbackAddress(const std::string& address) {
  if (absl::StartsWith(address, "unix:") || absl::StartsWith(address, "unix-abstract:")) {
    return true;
  }
  std::string host = address.substr(0, address.rfind(':'));
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {
    host = host.substr(1, host.size() - 2);
  }
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

absl::Status SplitHostPort(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  int value = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(address).substr(colon + 1), &value) || value < 0 ||
      value > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", address, "\" is not HOST:PORT (port 0-65535, [v6]:PORT for IPv6)"));
  }
  *host = address.substr(0, colon);
  if (absl::StartsWith(*host, "[") && absl::EndsWith(*host, "]")) {
    *host = host->substr(1, host->size() - 2);
  }
  *port = value;
  return absl::OkStatus();
}

}  // namespace gpubench
