// The standard gRPC services fleets' tools speak, tried from a client that
// is not ours: Python's grpcio (tests/tools/grpc_reflection_client.py), which
// knows no gpubench proto file, checks health, lists the services through
// reflection and calls an rpc from the descriptors reflection returned.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "tests/support/command.h"
#include "tests/support/daemon_process.h"

namespace gpubench {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

// The client's output (stdout and stderr), one line per step. Its every
// call has a 10 s deadline, and it cancels each reflection stream after its
// answer and closes its channel: grpcio 1.85's process once hung at exit
// with a refused stream left open. A run that still outlives 60 s is killed
// (exit 124) and fails the test, saying so.
std::string RunClient(const std::string& address, const std::string& token) {
  const std::string command = "timeout 60 python3 " GPUBENCH_SOURCE_DIR
                              "/tests/tools/grpc_reflection_client.py " + address + " " + token;
  const testing_support::CommandResult r = testing_support::RunCommand(command);
  return r.exit_code == 0 ? r.output
                          : r.output + "\n(exit status " + std::to_string(r.exit_code) + ")";
}

std::string HostId(Daemon& d) {
  grpc::ClientContext ctx;
  v1::GetHostInfoResponse resp;
  EXPECT_TRUE(d.stub()->GetHostInfo(&ctx, v1::GetHostInfoRequest(), &resp).ok());
  return resp.host().host_id();
}

TEST(StandardServices, HealthAndReflectionServeAClientWithoutOurProtoFiles) {
  Daemon d(FreshDir("standard_services"));
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string out = RunClient(d.address(), "");
  EXPECT_NE(out.find("health SERVING"), std::string::npos) << out;
  for (const char* service : {"gpubench.v1.BenchService", "grpc.health.v1.Health",
                              "grpc.reflection.v1alpha.ServerReflection"}) {
    EXPECT_NE(out.find(service), std::string::npos) << service << " not listed:\n" << out;
  }
  const std::string host_id = HostId(d);
  ASSERT_FALSE(host_id.empty());
  EXPECT_NE(out.find("GetHostInfo host_id=" + host_id), std::string::npos) << out;
}

// Kubernetes' probes carry no token: health answers anyone. Reflection
// describes the API, so it needs a token with the read role, as reading does.
TEST(StandardServices, HealthNeedsNoTokenAndReflectionTheReadRole) {
  const std::string dir = FreshDir("standard_services_tokens");
  std::ofstream(dir + "/tokens") << Sha256Hex("r-token") << " dashboards read\n";
  Daemon d(FreshDir("standard_services_tokens_data"), {"--token-file", dir + "/tokens"});
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string anonymous = RunClient(d.address(), "");
  EXPECT_NE(anonymous.find("health SERVING"), std::string::npos) << anonymous;
  EXPECT_NE(anonymous.find("services UNAUTHENTICATED"), std::string::npos) << anonymous;
  const std::string wrong = RunClient(d.address(), "not-a-token");
  EXPECT_NE(wrong.find("services UNAUTHENTICATED"), std::string::npos) << wrong;
  const std::string reader = RunClient(d.address(), "r-token");
  EXPECT_NE(reader.find("services gpubench.v1.BenchService"), std::string::npos) << reader;
  EXPECT_NE(reader.find("GetHostInfo host_id="), std::string::npos) << reader;
}

// Kubernetes' gRPC probes speak no TLS and send no token: --health-listen
// serves the health service alone in plaintext, and no rpc of the API.
TEST(StandardServices, AHealthPortServesHealthAndNothingElse) {
  const std::string dir = FreshDir("standard_services_health_port");
  std::ofstream(dir + "/tokens") << Sha256Hex("r-token") << " dashboards read\n";
  const std::string health = "127.0.0.1:" + std::to_string(testing_support::FreePort());
  Daemon d(FreshDir("standard_services_health_port_data"),
           {"--token-file", dir + "/tokens", "--health-listen", health});
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string out = RunClient(health, "");
  EXPECT_NE(out.find("health SERVING"), std::string::npos) << out;
  const size_t services = out.find("services ");
  ASSERT_NE(services, std::string::npos) << out;
  EXPECT_EQ(out.substr(services, out.find('\n', services) - services).find("BenchService"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("GetHostInfo UNIMPLEMENTED"), std::string::npos) << out;
  // The daemon's own port still asks for a token.
  EXPECT_NE(RunClient(d.address(), "").find("services UNAUTHENTICATED"), std::string::npos);
}

// The TCP ports a process listens on, one entry per listening socket (its
// socket inodes matched against /proc/net/tcp and tcp6).
std::vector<int> ListeningPorts(pid_t pid) {
  std::set<std::string> inodes;
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* dir = opendir(fd_dir.c_str())) {
    while (dirent* e = readdir(dir)) {
      char target[128] = {};
      const std::string link = fd_dir + "/" + e->d_name;
      if (readlink(link.c_str(), target, sizeof target - 1) > 0 &&
          std::string(target).rfind("socket:[", 0) == 0) {
        const std::string t(target);
        inodes.insert(t.substr(8, t.size() - 9));
      }
    }
    closedir(dir);
  }
  std::vector<int> ports;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the column names
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (state == "0A" && inodes.count(inode) > 0) {  // 0A: LISTEN
        ports.push_back(std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16));
      }
    }
  }
  return ports;
}

// --health-listen HOST:0 bound two ports (gRPC's second socket per poller,
// with a port of its own) and reported neither. One port now, in the log.
TEST(StandardServices, AHealthPortChosenByTheKernelIsOneAndReported) {
  Daemon d(FreshDir("standard_services_health_port_0"), {"--health-listen", "127.0.0.1:0"});
  ASSERT_TRUE(d.serving()) << d.log();
  std::smatch m;
  const std::string log = d.log();
  const std::regex reported("health on 127\\.0\\.0\\.1:0 \\(port ([0-9]+)\\)");
  ASSERT_TRUE(std::regex_search(log, m, reported)) << log;
  const int health_port = std::stoi(m[1].str());
  ASSERT_GT(health_port, 0);
  const std::string out = RunClient("127.0.0.1:" + std::to_string(health_port), "");
  EXPECT_NE(out.find("health SERVING"), std::string::npos) << out;
  std::vector<int> ports = ListeningPorts(d.pid());
  std::sort(ports.begin(), ports.end());
  std::vector<int> expected = {health_port, std::stoi(d.address().substr(10))};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(ports, expected) << "one listening socket for the API, one for health";
}

}  // namespace
}  // namespace gpubench
