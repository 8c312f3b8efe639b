#include "worker/engine/distributed.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include <thread>

#include "absl/strings/str_cat.h"
#include "worker/engine/compat.h"
#include "worker/engine/engine.h"

namespace gpubench::engine {
namespace dist {
namespace {

// How long a rank waits for the others at the store; the daemon's own
// limits (the job's timeout, a failed rank stopping its group) end a group
// sooner.
constexpr std::chrono::minutes kStoreTimeout{5};

struct Group {
  c10::intrusive_ptr<c10d::TCPStore> store;
  std::unique_ptr<Communicator> comm;
  int world_size = 0;
  int rank = 0;
  std::string device;
};

Group& ProcessGroup() {
  static auto* group = new Group;
  return *group;
}

#if GPUBENCH_TORCH_AT_LEAST(2, 4)
// A socket listening on address:port (0: one the system picks), for the
// store to take over: c10d's own listener would take every interface.
absl::StatusOr<int> Listener(const std::string& address, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("not an IPv4 address: ", address));
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 128) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(absl::StrCat("listening on ", address, ":", port, ": ", why));
  }
  return fd;
}
#endif

std::string Nonce() {
  std::random_device random;
  std::string hex;
  for (int i = 0; i < 4; ++i) absl::StrAppend(&hex, absl::Hex(random(), absl::kZeroPad8));
  return hex;
}

bool SameText(const std::string& a, const std::string& b) {
  unsigned char differ = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) differ |= a[i] ^ b[i];
  return differ == 0;
}

// A pair across hosts: before the collective, each rank answers the other's
// nonce with sign() of both, so that a stranger who reached the store (or a
// store that is not the other daemon's) is refused before any tensor moves.
absl::Status ProvePair(c10d::Store& store, int rank,
                       const std::function<std::string(const std::string&)>& sign) {
  auto get = [&store](const std::string& key) {
    const std::vector<uint8_t> value = store.get(key);
    return std::string(value.begin(), value.end());
  };
  auto set = [&store](const std::string& key, const std::string& value) {
    store.set(key, std::vector<uint8_t>(value.begin(), value.end()));
  };
  std::string nonce0 = rank == 0 ? Nonce() : "", nonce1 = rank == 1 ? Nonce() : "";
  if (rank == 0) set("gpubench/pair/nonce0", nonce0);
  if (rank == 1) {
    nonce0 = get("gpubench/pair/nonce0");
    set("gpubench/pair/nonce1", nonce1);
    set("gpubench/pair/proof1", sign(absl::StrCat("join ", nonce0, " ", nonce1)));
    if (!SameText(get("gpubench/pair/proof0"), sign(absl::StrCat("open ", nonce0, " ", nonce1)))) {
      return absl::PermissionDeniedError(
          "the pair's store did not prove the pair's secret: not the opening daemon's rank");
    }
    return absl::OkStatus();
  }
  nonce1 = get("gpubench/pair/nonce1");
  if (!SameText(get("gpubench/pair/proof1"), sign(absl::StrCat("join ", nonce0, " ", nonce1)))) {
    return absl::PermissionDeniedError(
        "the rank that joined the pair's store did not prove the pair's secret");
  }
  set("gpubench/pair/proof0", sign(absl::StrCat("open ", nonce0, " ", nonce1)));
  return absl::OkStatus();
}

std::string OrLoopback(const std::string& address) {
  return address.empty() ? "127.0.0.1" : address;
}

}  // namespace

absl::StatusOr<Communicator*> GroupFor(const RunConfig& c, const torch::Device& device) {
  Group& g = ProcessGroup();
  if (g.comm) {
    if (g.world_size != c.world_size || g.rank != c.rank || g.device != device.str()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "this worker is rank ", g.rank, " of ", g.world_size, " on ", g.device,
          "; a run as rank ", c.rank, " of ", c.world_size, " on ", device.str(),
          " needs a worker of its own"));
    }
    return g.comm.get();
  }
  if (!g.store) {
    if (c.rank == 0) {
      return absl::FailedPreconditionError("rank 0 opened no rendezvous store");
    }
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(c.store_port);
    options.isServer = false;
    options.timeout = kStoreTimeout;
    g.store = c10::make_intrusive<c10d::TCPStore>(OrLoopback(c.store_host), options);
  }
  if (c.sign) {
    if (auto s = ProvePair(*g.store, c.rank, c.sign); !s.ok()) return s;
  }
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      device.is_cuda() ? NewNcclGroup(g.store, c.rank, c.world_size)
      : device.is_cpu()
          ? NewGlooGroup(g.store, c.rank, c.world_size, OrLoopback(c.local_address))
          : absl::InvalidArgumentError(absl::StrCat(c.workload, " runs on cuda or cpu, not ",
                                                    device.str()));
  if (!comm.ok()) return comm.status();
  g.comm = std::move(*comm);
  g.world_size = c.world_size;
  g.rank = c.rank;
  g.device = device.str();
  return g.comm.get();
}

bool AnyRank(Communicator* comm, bool value, const torch::Device& device) {
  torch::Tensor flag =
      torch::full({1}, value ? 1 : 0, torch::TensorOptions().dtype(torch::kInt32).device(device));
  comm->AllReduce(flag);
  return flag.item<int>() > 0;
}

#ifndef GPUBENCH_NCCL
absl::StatusOr<std::unique_ptr<Communicator>> NewNcclGroup(const c10::intrusive_ptr<c10d::Store>&,
                                                           int, int) {
  return absl::UnimplementedError(
      "this worker was built without NCCL (a LibTorch with CUDA and NCCL's nccl.h)");
}
#endif
#ifndef GPUBENCH_GLOO
absl::StatusOr<std::unique_ptr<Communicator>> NewGlooGroup(const c10::intrusive_ptr<c10d::Store>&,
                                                           int, int, const std::string&) {
  return absl::UnimplementedError(
      "this worker was built without Gloo, so ddp and collective run on cuda only "
      "(Gloo comes with Debian's LibTorch and libgloo-dev)");
}
#endif

}  // namespace dist

void CloseGroup() {
  dist::Group& g = dist::ProcessGroup();
  try {
    if (g.comm) g.comm->Shutdown();
    // Rank 0 serves the store: it keeps it until every rank has ended its
    // communicators (their threads may still read it), for at most 30 s.
    if (g.store && g.comm) {
      g.store->add("gpubench/closed", 1);
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (g.rank == 0 && g.store->add("gpubench/closed", 0) < g.world_size &&
             std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  } catch (const std::exception&) {
    // Ending anyway: the process exits next.
  }
  g.comm.reset();
  g.store.reset();
}

absl::StatusOr<int> OpenRendezvous(int world_size, const std::string& address, int port) {
  dist::Group& g = dist::ProcessGroup();
  if (g.store) return static_cast<int>(g.store->getPort());
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(port);  // 0: the system picks a free one
    options.isServer = true;
#if GPUBENCH_TORCH_AT_LEAST(2, 4)
    auto fd = dist::Listener(address, port);
    if (!fd.ok()) return fd.status();
    sockaddr_in bound{};
    socklen_t size = sizeof(bound);
    getsockname(*fd, reinterpret_cast<sockaddr*>(&bound), &size);
    options.port = ntohs(bound.sin_port);
    options.masterListenFd = *fd;
#endif
    // LibTorch 1.13 has no way to hand its store a socket: its listener
    // takes every interface for the run (docs/multi-gpu.md).
    options.numWorkers = world_size;
    options.waitWorkers = false;
    options.timeout = dist::kStoreTimeout;
    g.store = c10::make_intrusive<c10d::TCPStore>(address, options);
    return static_cast<int>(g.store->getPort());
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot open the rendezvous store on ", address, ": ", e.what()));
  }
}

}  // namespace gpubench::engine
