// The one conversion from absl::Status to grpc::Status.
#ifndef GPUBENCH_SERVER_STATUS_UTIL_H_
#define GPUBENCH_SERVER_STATUS_UTIL_H_

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"

namespace gpubench::server {

// Canonical codes map one to one; the message is kept.
inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_STATUS_UTIL_H_
