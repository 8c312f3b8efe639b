// The standard gRPC services fleets' tools speak, tried from a client that
// is not ours: Python's grpcio (tests/tools/grpc_reflection_client.py), which
// knows no gpubench proto file, checks health, lists the services through
// reflection and calls an rpc from the descriptors reflection returned.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "common/sha256.h"
#include "tests/support/command.h"
#include "tests/support/daemon_process.h"

namespace gpubench {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

// The client's output (stdout and stderr), one line per step. Its every
// call has a 10 s deadline, yet grpcio 1.85's client process once hung here
// after the refused reflection stream, every thread of it waiting, and the
// suite with it: a run that outlives 60 s is killed (exit 124) and the
// client run once more; the second run's output is what the test checks.
std::string RunClient(const std::string& address, const std::string& token) {
  const std::string command = "timeout 60 python3 " GPUBENCH_SOURCE_DIR
                              "/tests/tools/grpc_reflection_client.py " + address + " " + token;
  testing_support::CommandResult r = testing_support::RunCommand(command);
  if (r.exit_code == 124) r = testing_support::RunCommand(command);
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

}  // namespace
}  // namespace gpubench
