#include "worker/rank.h"

#include <string>

#include "common/address.h"
#include "common/sha256.h"
#include "worker/engine/engine.h"

namespace gpubench::worker {

absl::Status CheckRank(const v1::RankAssignment& rank) {
  if (rank.world_size() < 1 || rank.rank() < 0 || rank.rank() >= rank.world_size() ||
      rank.devices_size() != rank.world_size()) {
    return absl::InvalidArgumentError("rank: needs 0 <= rank < world_size, a device per rank");
  }
  return absl::OkStatus();
}

absl::StatusOr<int> OpenStore(const v1::RankAssignment& rank) {
  if (!rank.has_host_pair()) return engine::OpenRendezvous(rank.world_size());
  std::string host;
  int port = 0;
  if (auto s = SplitHostPort(rank.host_pair().store_address(), &host, &port); !s.ok()) return s;
  return engine::OpenRendezvous(rank.world_size(), host, port);
}

void SetRank(const v1::RankAssignment& rank, engine::RunConfig* config) {
  config->rank = rank.rank();
  config->world_size = rank.world_size();
  config->store_port = rank.store_port();
  config->device = rank.devices(rank.rank());
  if (!rank.has_host_pair()) return;
  const v1::HostPairRank& pair = rank.host_pair();
  std::string host;
  int port = 0;
  if (SplitHostPort(pair.store_address(), &host, &port).ok()) {
    config->store_host = host;
    config->store_port = port;
  }
  config->local_address = pair.local_address();
  config->sign = [secret = pair.secret()](const std::string& text) {
    return HmacSha256Hex(secret, text);
  };
}

}  // namespace gpubench::worker
