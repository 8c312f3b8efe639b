#include "server/host_pairs.h"

#include <arpa/inet.h>
#include <sys/random.h>

#include "absl/strings/str_cat.h"
#include "common/address.h"
#include "common/printable.h"

namespace gpubench::server {
namespace {

constexpr size_t kSecretBytes = 32;
constexpr size_t kMaxPeerName = 128;

// An IPv4 address another host can reach: not 0.0.0.0, which the other
// daemon's rank would take for its own host.
bool IsIpv4(const std::string& host) {
  in_addr addr{};
  return inet_pton(AF_INET, host.c_str(), &addr) == 1 && addr.s_addr != htonl(INADDR_ANY);
}

absl::StatusOr<std::string> Secret() {
  std::string secret(kSecretBytes, '\0');
  if (getrandom(secret.data(), secret.size(), 0) != static_cast<ssize_t>(secret.size())) {
    return absl::UnavailableError("cannot draw the pair's secret (getrandom)");
  }
  return secret;
}

}  // namespace

absl::Status CheckPairAddress(const std::string& address) {
  if (address.empty()) return absl::OkStatus();
  std::string host;
  int port = 0;
  if (!SplitHostPort(address, &host, &port).ok() || !IsIpv4(host) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("IPV4:PORT, the address other hosts reach this one at (not 0.0.0.0), with a "
                     "port from 1 to 65535, not ",
                     Printable(address)));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::RankAssignment> PairRankOf(const v1::RunHostPairRequest& request,
                                              const std::string& pair_address,
                                              const std::string& device) {
  if (pair_address.empty()) {
    return absl::FailedPreconditionError(
        "this daemon has no --pair-address (its address on the network between hosts), so "
        "it runs no pair across hosts");
  }
  if (request.peer().empty() || request.peer().size() > kMaxPeerName ||
      Printable(request.peer()) != request.peer()) {
    return absl::InvalidArgumentError(
        absl::StrCat("peer: the other host's name, 1 to ", kMaxPeerName, " printable bytes"));
  }
  v1::RankAssignment rank;
  rank.set_world_size(2);
  rank.add_devices(device);
  rank.add_devices(device);
  v1::HostPairRank* pair = rank.mutable_host_pair();
  std::string host;
  int port = 0;
  if (auto s = SplitHostPort(pair_address, &host, &port); !s.ok()) return s;
  pair->set_local_address(host);
  switch (request.side()) {
    case v1::RunHostPairRequest::SIDE_OPEN: {
      if (!request.store_address().empty() || !request.secret().empty()) {
        return absl::InvalidArgumentError(
            "store_address, secret: an OPEN takes neither (it listens on --pair-address and "
            "draws the secret)");
      }
      auto secret = Secret();
      if (!secret.ok()) return secret.status();
      rank.set_rank(0);
      pair->set_store_address(pair_address);
      pair->set_secret(*secret);
      return rank;
    }
    case v1::RunHostPairRequest::SIDE_JOIN: {
      if (auto s = CheckPairAddress(request.store_address());
          !s.ok() || request.store_address().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("store_address: the OPEN response's, IPV4:PORT, not ",
                         Printable(request.store_address())));
      }
      if (request.secret().size() != kSecretBytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("secret: the OPEN response's ", kSecretBytes, " bytes, not ",
                         request.secret().size()));
      }
      rank.set_rank(1);
      pair->set_store_address(request.store_address());
      pair->set_secret(request.secret());
      return rank;
    }
    default:
      return absl::InvalidArgumentError("side: SIDE_OPEN or SIDE_JOIN");
  }
}

void HostPairs::Add(const std::string& job_id, const v1::RankAssignment& rank) {
  absl::MutexLock lock(&mu_);
  ranks_[job_id] = rank;
}

std::optional<v1::RankAssignment> HostPairs::Find(const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  auto it = ranks_.find(job_id);
  if (it == ranks_.end()) return std::nullopt;
  return it->second;
}

void HostPairs::Remove(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  ranks_.erase(job_id);
}

}  // namespace gpubench::server
