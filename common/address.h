// Network addresses as gpubench writes them ("host:port", "[v6]:port",
// "unix:path"). Torch-free, thread-safe (no state).
#ifndef GPUBENCH_COMMON_ADDRESS_H_
#define GPUBENCH_COMMON_ADDRESS_H_

#include <string>

#include "absl/status/status.h"

namespace gpubench {

// True for addresses only this machine can reach: an IP address written out
// in 127.0.0.0/8 or [::1], unix sockets, and "localhost" where the resolver
// maps it to loopback addresses only. Anything else (0.0.0.0, another name,
// even one that starts with "127.", another IP) may be reachable from the
// network. May ask the resolver (for "localhost" only).
bool IsLoopbackAddress(const std::string& address);

// "host:port" or "[v6]:port" into the host (brackets removed) and the port;
// InvalidArgument quoting the address otherwise.
absl::Status SplitHostPort(const std::string& address, std::string* host, int* port);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_ADDRESS_H_
