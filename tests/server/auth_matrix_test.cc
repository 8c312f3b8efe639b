// The authorization matrix: every BenchService rpc, called by no token, a
// wrong token, and a read, submit and admin token, over plaintext loopback,
// TLS and mutual TLS, each against a real gpubenchd. A refused call gets
// UNAUTHENTICATED (who are you?) or PERMISSION_DENIED (not you); an allowed
// one gets past authorization (OK, or the rpc's own NOT_FOUND or
// INVALID_ARGUMENT for the dummy request).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "google/protobuf/descriptor.h"
#include "gpubench/v1/service.grpc.pb.h"
#include "common/sha256.h"
#include "tests/support/daemon_process.h"
#include "tests/support/read_file.h"

namespace gpubench {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

enum Need { kRead = 1, kSubmit = 2, kAdmin = 3 };

// Written here, not read from auth.cc: the test states the policy.
const std::map<std::string, Need>& Policy() {
  static const auto* policy = new std::map<std::string, Need>{
      {"SubmitJob", kSubmit},      {"GetJob", kRead},          {"ListJobs", kRead},
      {"WatchJob", kRead},         {"CancelJob", kSubmit},     {"GetRun", kRead},
      {"ListRuns", kRead},         {"QueryRuns", kRead},       {"GetHostInfo", kRead},
      {"CreateSchedule", kAdmin},  {"ListSchedules", kRead},   {"DeleteSchedule", kAdmin},
      {"UploadModel", kSubmit},    {"GetTrace", kRead},        {"ListRegressions", kRead},
      {"DeleteModel", kAdmin},     {"RunProbe", kAdmin},       {"DeleteJob", kSubmit},
      {"RunHostPair", kAdmin},
  };
  return *policy;
}

using Stub = v1::BenchService::Stub;

// Reads a server stream to its end; returns how it ended.
template <typename Response>
grpc::Status Drain(grpc::ClientReader<Response>* reader) {
  Response resp;
  while (reader->Read(&resp)) {
  }
  return reader->Finish();
}

// Each Call... below calls method with a harmless request if method is one
// of its group of rpcs, and returns nothing otherwise.

std::optional<grpc::Status> CallJobRpc(Stub* stub, grpc::ClientContext* ctx,
                                       const std::string& method) {
  if (method == "SubmitJob") {
    v1::SubmitJobRequest req;
    req.mutable_spec()->mutable_base()->set_workload("empty");
    req.mutable_spec()->mutable_base()->set_device("cpu");
    req.set_dry_run(true);
    v1::SubmitJobResponse resp;
    return stub->SubmitJob(ctx, req, &resp);
  }
  if (method == "GetJob") {
    v1::GetJobRequest req;
    req.set_job_id("nope");
    v1::GetJobResponse resp;
    return stub->GetJob(ctx, req, &resp);
  }
  if (method == "ListJobs") {
    v1::ListJobsResponse resp;
    return stub->ListJobs(ctx, {}, &resp);
  }
  if (method == "WatchJob") {
    v1::WatchJobRequest req;
    req.set_job_id("nope");
    return Drain(stub->WatchJob(ctx, req).get());
  }
  if (method == "CancelJob") {
    v1::CancelJobRequest req;
    req.set_job_id("nope");
    v1::CancelJobResponse resp;
    return stub->CancelJob(ctx, req, &resp);
  }
  if (method == "DeleteJob") {
    v1::DeleteJobRequest req;
    req.set_job_id("nope");
    v1::DeleteJobResponse resp;
    return stub->DeleteJob(ctx, req, &resp);
  }
  return std::nullopt;
}

std::optional<grpc::Status> CallRunRpc(Stub* stub, grpc::ClientContext* ctx,
                                       const std::string& method) {
  if (method == "GetRun") {
    v1::GetRunRequest req;
    req.set_run_id("nope");
    v1::GetRunResponse resp;
    return stub->GetRun(ctx, req, &resp);
  }
  if (method == "ListRuns") {
    v1::ListRunsRequest req;
    req.set_job_id("nope");
    v1::ListRunsResponse resp;
    return stub->ListRuns(ctx, req, &resp);
  }
  if (method == "QueryRuns") {
    v1::QueryRunsResponse resp;
    return stub->QueryRuns(ctx, {}, &resp);
  }
  if (method == "GetTrace") {
    v1::GetTraceRequest req;
    req.set_run_id("nope");
    return Drain(stub->GetTrace(ctx, req).get());
  }
  if (method == "ListRegressions") {
    v1::ListRegressionsResponse resp;
    return stub->ListRegressions(ctx, {}, &resp);
  }
  return std::nullopt;
}

std::optional<grpc::Status> CallScheduleRpc(Stub* stub, grpc::ClientContext* ctx,
                                            const std::string& method) {
  if (method == "CreateSchedule") {
    v1::CreateScheduleRequest req;  // no cron: INVALID_ARGUMENT once allowed
    v1::CreateScheduleResponse resp;
    return stub->CreateSchedule(ctx, req, &resp);
  }
  if (method == "ListSchedules") {
    v1::ListSchedulesResponse resp;
    return stub->ListSchedules(ctx, {}, &resp);
  }
  if (method == "DeleteSchedule") {
    v1::DeleteScheduleRequest req;
    req.set_schedule_id("nope");
    v1::DeleteScheduleResponse resp;
    return stub->DeleteSchedule(ctx, req, &resp);
  }
  return std::nullopt;
}

std::optional<grpc::Status> CallModelOrHostRpc(Stub* stub, grpc::ClientContext* ctx,
                                               const std::string& method) {
  if (method == "UploadModel") {
    v1::UploadModelResponse resp;
    auto writer = stub->UploadModel(ctx, &resp);
    writer->WritesDone();  // no header: INVALID_ARGUMENT once allowed
    return writer->Finish();
  }
  if (method == "DeleteModel") {
    v1::DeleteModelRequest req;
    req.set_sha256(std::string(64, 'a'));
    v1::DeleteModelResponse resp;
    return stub->DeleteModel(ctx, req, &resp);
  }
  if (method == "GetHostInfo") {
    v1::GetHostInfoResponse resp;
    return stub->GetHostInfo(ctx, {}, &resp);
  }
  if (method == "RunProbe") {
    v1::RunProbeRequest req;  // plan only: the suite at CPU sizes, nothing queued
    req.set_small(true);
    req.set_dry_run(true);
    v1::RunProbeResponse resp;
    return stub->RunProbe(ctx, req, &resp);
  }
  if (method == "RunHostPair") {
    v1::RunHostPairRequest req;  // this daemon has no --pair-address: nothing queued
    req.set_side(v1::RunHostPairRequest::SIDE_OPEN);
    req.set_peer("b");
    v1::RunHostPairResponse resp;
    return stub->RunHostPair(ctx, req, &resp);
  }
  return std::nullopt;
}

// Calls one rpc with a harmless request.
grpc::Status Call(Stub* stub, const std::string& method, const std::string& token) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  for (auto* call : {&CallJobRpc, &CallRunRpc, &CallScheduleRpc, &CallModelOrHostRpc}) {
    if (std::optional<grpc::Status> status = call(stub, &ctx, method)) return *status;
  }
  return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "the test does not know " + method);
}

std::string Run(const std::string& command) {
  EXPECT_EQ(std::system((command + " >/dev/null 2>&1").c_str()), 0) << command;
  return command;
}

using testing_support::ReadFile;

// A CA, a server certificate for 127.0.0.1 and a client certificate for
// CN=alice, all signed by the CA; and a stranger's client certificate signed
// by another CA.
void MakeCertificates(const std::string& dir) {
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  for (const char* ca : {"ca", "other-ca"}) {
    Run("cd '" + dir + "' && openssl req -x509 " + ec + " -days 2 -subj /CN=" + ca +
        " -keyout " + ca + ".key -out " + ca + ".pem");
  }
  std::ofstream(dir + "/san.ext") << "subjectAltName=IP:127.0.0.1\n";
  for (auto [name, ca, ext] :
       {std::tuple<const char*, const char*, const char*>{"server", "ca", " -extfile san.ext"},
        {"alice", "ca", ""},
        {"stranger", "other-ca", ""}}) {
    Run("cd '" + dir + "' && openssl req " + ec + " -subj /CN=" + name + " -keyout " + name +
        ".key -out " + name + ".csr && openssl x509 -req -in " + name + ".csr -CA " + ca +
        ".pem -CAkey " + ca + ".key -CAcreateserial -days 2" + ext + " -out " + name + ".pem");
  }
}

struct Identity {
  const char* label;
  std::string token;
  int role;  // 0: refused as unauthenticated
};

struct Transport {
  const char* label;
  std::shared_ptr<grpc::Channel> channel;
  int anonymous_role;  // what a call without a token may do
};

// The three daemons' flags: tokens alone, with TLS, and with TLS that takes
// a certificate of the CA in dir as the read role. Writes their token file.
struct DaemonFlags {
  std::vector<std::string> plain, tls, mtls;
};

DaemonFlags WriteTokensAndFlags(const std::string& dir) {
  std::ofstream(dir + "/tokens") << Sha256Hex("r-token") << " dashboards read\n"
                                 << Sha256Hex("s-token") << " ci submit\n"
                                 << Sha256Hex("a-token") << " ops admin\n";
  DaemonFlags flags;
  flags.plain = {"--token-file", dir + "/tokens"};
  const std::vector<std::string> tls = {"--tls-cert", dir + "/server.pem", "--tls-key",
                                        dir + "/server.key"};
  flags.tls = flags.mtls = flags.plain;
  flags.tls.insert(flags.tls.end(), tls.begin(), tls.end());
  flags.mtls.insert(flags.mtls.end(), tls.begin(), tls.end());
  for (const char* a : {"--tls-client-ca", "", "--client-cert-role", "read"}) {
    flags.mtls.push_back(*a ? a : dir + "/ca.pem");
  }
  return flags;
}

// How a call that needs the need role ends for who on a transport where a
// call without a token has anonymous_role.
void ExpectAuthorization(const grpc::Status& s, const Identity& who, int anonymous_role,
                         Need need, const std::string& where) {
  if (who.role == 0 && !(anonymous_role > 0 && who.token.empty())) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << where;
  } else if (who.role < need) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << where;
  } else {
    EXPECT_NE(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << where;
    EXPECT_NE(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << where;
    EXPECT_NE(s.error_code(), grpc::StatusCode::UNAVAILABLE) << where;
    EXPECT_NE(s.error_code(), grpc::StatusCode::UNIMPLEMENTED) << where;
  }
}

// Calls every rpc as every identity over t; returns how many calls it checked.
int CheckEveryRpcAsEveryone(const Transport& t) {
  auto stub = v1::BenchService::NewStub(t.channel);
  const std::vector<Identity> identities = {{"no token", "", t.anonymous_role},
                                            {"wrong token", "guess", 0},
                                            {"read", "r-token", kRead},
                                            {"submit", "s-token", kSubmit},
                                            {"admin", "a-token", kAdmin}};
  int checked = 0;
  for (const auto& [method, need] : Policy()) {
    for (const Identity& who : identities) {
      const grpc::Status s = Call(stub.get(), method, who.token);
      const std::string where = std::string(t.label) + " " + method + " as " + who.label +
                                ": " + std::to_string(s.error_code()) + " " +
                                s.error_message();
      ExpectAuthorization(s, who, t.anonymous_role, need, where);
      ++checked;
    }
  }
  return checked;
}

// Every rpc of the service is in the policy above, so a new rpc fails here
// until someone says who may call it.
TEST(AuthMatrix, ThePolicyNamesEveryRpc) {
  const auto* service = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
      "gpubench.v1.BenchService");
  ASSERT_NE(service, nullptr);
  for (int i = 0; i < service->method_count(); ++i) {
    EXPECT_EQ(Policy().count(service->method(i)->name()), 1u) << service->method(i)->name();
  }
}

TEST(AuthMatrix, EveryRpcTimesEveryRoleTimesEveryTransport) {
  const std::string dir = FreshDir("auth_matrix");
  MakeCertificates(dir);
  const DaemonFlags flags = WriteTokensAndFlags(dir);
  Daemon plain(FreshDir("auth_plain"), flags.plain);
  Daemon tls_daemon(FreshDir("auth_tls"), flags.tls);
  Daemon mtls_daemon(FreshDir("auth_mtls"), flags.mtls);
  for (Daemon* d : {&plain, &tls_daemon, &mtls_daemon}) ASSERT_TRUE(d->serving()) << d->log();

  grpc::SslCredentialsOptions server_only;
  server_only.pem_root_certs = ReadFile(dir + "/ca.pem");
  grpc::SslCredentialsOptions as_alice = server_only;
  as_alice.pem_cert_chain = ReadFile(dir + "/alice.pem");
  as_alice.pem_private_key = ReadFile(dir + "/alice.key");
  const std::vector<Transport> transports = {
      {"plaintext", grpc::CreateChannel(plain.address(), grpc::InsecureChannelCredentials()),
       0},
      {"tls", grpc::CreateChannel(tls_daemon.address(), grpc::SslCredentials(server_only)), 0},
      // mTLS: alice's certificate alone is the read role (--client-cert-role).
      {"mtls", grpc::CreateChannel(mtls_daemon.address(), grpc::SslCredentials(as_alice)),
       kRead},
  };
  int checked = 0;
  for (const Transport& t : transports) checked += CheckEveryRpcAsEveryone(t);
  EXPECT_EQ(checked, 3 * 5 * static_cast<int>(Policy().size()));

  // A certificate from a CA the daemon does not trust never gets a call in.
  grpc::SslCredentialsOptions as_stranger = server_only;
  as_stranger.pem_cert_chain = ReadFile(dir + "/stranger.pem");
  as_stranger.pem_private_key = ReadFile(dir + "/stranger.key");
  auto stranger = v1::BenchService::NewStub(
      grpc::CreateChannel(mtls_daemon.address(), grpc::SslCredentials(as_stranger)));
  EXPECT_EQ(Call(stranger.get(), "GetHostInfo", "a-token").error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // A caller known by certificate records its subject as submitter.
  auto alice = v1::BenchService::NewStub(transports[2].channel);
  grpc::ClientContext ctx;
  v1::SubmitJobRequest req;
  req.mutable_spec()->mutable_base()->set_workload("empty");
  req.mutable_spec()->mutable_base()->set_device("cpu");
  v1::SubmitJobResponse resp;
  EXPECT_EQ(alice->SubmitJob(&ctx, req, &resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);  // read role: may not submit
  // Tokens never reach a daemon's log.
  for (Daemon* d : {&plain, &tls_daemon, &mtls_daemon}) {
    for (const char* token : {"r-token", "s-token", "a-token", "guess"}) {
      EXPECT_EQ(d->log().find(token), std::string::npos) << token;
    }
  }
}

}  // namespace
}  // namespace gpubench
