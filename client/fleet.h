// The daemons the CLI talks to: from --host (repeatable), else the
// GPUBENCH_HOST variable, else the fleet file, else 127.0.0.1:50051. The
// fleet file (~/.config/gpubench/fleet.json, or $GPUBENCH_FLEET) is
//   {"hosts": [{"name": "h100-a", "address": "10.0.0.5:50051",
//               "tls": true, "ca_file": "/etc/gpubench/ca.pem",
//               "token_file": "~/.config/gpubench/token"}, ...]}
// and --host also takes a name from it. Thread-safe (no state).
#ifndef GPUBENCH_CLIENT_FLEET_H_
#define GPUBENCH_CLIENT_FLEET_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpubench::client {

struct HostEntry {
  std::string name;     // what tables show; the address when unnamed
  std::string address;  // host:port
  bool tls = false;     // TLS with the system roots, or ca_file
  std::string ca_file;  // PEM roots for TLS
  std::string token;    // sent as "authorization: Bearer <token>"
  // Mutual TLS: this client's certificate chain and key (PEM files).
  std::string cert_file, key_file;
  // The files' contents, read (and checked readable) with the fleet file.
  std::string ca_pem, cert_pem, key_pem;
};

// The fleet file's path: $GPUBENCH_FLEET, else ~/.config/gpubench/fleet.json.
std::string DefaultFleetPath();

// Reads a fleet file. NotFound when it does not exist; InvalidArgument
// naming the file and field when it is malformed.
absl::StatusOr<std::vector<HostEntry>> ReadFleet(const std::string& path);

// The hosts to use: `flags` (names from the fleet or addresses) if any, else
// $GPUBENCH_HOST (comma-separated), else every fleet host, else the local
// default. all_fleet: with no flag and no variable, use the whole fleet
// (hosts, regressions) rather than its first host.
absl::StatusOr<std::vector<HostEntry>> ResolveHosts(const std::vector<std::string>& flags,
                                                    bool all_fleet);

// A channel to the host, with TLS when asked for.
std::shared_ptr<grpc::Channel> Dial(const HostEntry& host);

// Sets a deadline (0: none) and the host's token on a call.
void PrepareCall(const HostEntry& host, int deadline_s, grpc::ClientContext* context);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_FLEET_H_
