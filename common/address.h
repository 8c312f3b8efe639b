// Network addresses as gpubench writes them ("host:port", "[v6]:port",
// "unix:path"). Torch-free, thread-safe (no state).
#ifndef GPUBENCH_COMMON_ADDRESS_H_
#define GPUBENCH_COMMON_ADDRESS_H_

#include <string>

#include "absl/status/status.h"

namespace gpubench {

// True for addresses only this machine can reach: 127.0.0.0/8, [::1],
// localhost and unix sockets. Anything else (0.0.0.0, a name, another IP)
// may be reachable from the network.
bool IsLoopbackAddress(const std::string& address);

// "host:port" or "[v6]:port" into the host (brackets removed) and the port;
// InvalidArgument quoting the address otherwise.
absl::Status SplitHostPort(const std::string& address, std::string* host, int* port);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_ADDRESS_H_
