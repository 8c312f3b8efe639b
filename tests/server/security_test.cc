// Attacks a remote client could try, each tried against a real gpubenchd
// process on loopback with real worker processes: loading host files as
// models, escaping the model directory, uploading native code, listening
// on the network unprotected, and cancelling other people's jobs.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpubench/v1/service.grpc.pb.h"
#include "common/sha256.h"
#include "storage/store.h"
#include "tests/support/daemon_process.h"

namespace gpubench {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

// A token file with one token per role (plus a second submitter).
const char* const kAdmin = "admin-secret";
const char* const kAlice = "alice-secret";
const char* const kBob = "bob-secret";
const char* const kReader = "reader-secret";

std::string WriteTokenFile(const std::string& dir) {
  const std::string path = dir + "/tokens";
  std::ofstream(path) << "# sha256 name role\n"
                      << Sha256Hex(kAdmin) << " ops admin\n"
                      << Sha256Hex(kAlice) << " alice submit\n"
                      << Sha256Hex(kBob) << " bob submit\n"
                      << Sha256Hex(kReader) << " dashboards read\n";
  return path;
}

void Auth(grpc::ClientContext* ctx, const std::string& token) {
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
}

v1::JobSpec ModelSpec(const std::string& path, const std::string& sha256 = "") {
  v1::JobSpec spec;
  v1::RunConfig* c = spec.mutable_base();
  c->set_workload("torchscript");
  c->set_device("cpu");
  c->set_mode(v1::MODE_INFER);
  c->set_batch_size(1);
  c->mutable_params()->set_model_path(path);
  c->mutable_params()->set_model_sha256(sha256);
  auto* in = c->mutable_params()->add_inputs();
  in->add_shape(1);
  in->add_shape(16);
  spec.mutable_measurement()->set_min_iterations(1);
  spec.mutable_measurement()->set_max_time_ms(500);
  return spec;
}

grpc::Status Submit(Daemon& d, const v1::JobSpec& spec, const std::string& token = "",
                    std::string* job_id = nullptr) {
  grpc::ClientContext ctx;
  Auth(&ctx, token);
  v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  v1::SubmitJobResponse resp;
  grpc::Status s = d.stub()->SubmitJob(&ctx, req, &resp);
  if (job_id) *job_id = resp.job().job_id();
  return s;
}

grpc::Status Upload(Daemon& d, const std::string& data, v1::ModelFormat format,
                    const std::string& token, v1::ModelInfo* model = nullptr) {
  grpc::ClientContext ctx;
  Auth(&ctx, token);
  v1::UploadModelResponse resp;
  auto writer = d.stub()->UploadModel(&ctx, &resp);
  v1::UploadModelRequest req;
  req.mutable_header()->set_name("m");
  req.mutable_header()->set_sha256(Sha256Hex(data));
  req.mutable_header()->set_size_bytes(data.size());
  req.mutable_header()->set_format(format);
  writer->Write(req);
  req.set_chunk(data);
  writer->Write(req);
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  if (model) *model = resp.model();
  return s;
}

v1::Job WaitForJob(Daemon& d, const std::string& id, const std::string& token = "") {
  for (int i = 0; i < 600; ++i) {
    grpc::ClientContext ctx;
    Auth(&ctx, token);
    v1::GetJobRequest req;
    req.set_job_id(id);
    v1::GetJobResponse resp;
    if (d.stub()->GetJob(&ctx, req, &resp).ok()) {
      const v1::JobState s = resp.job().state();
      if (s != v1::JOB_STATE_QUEUED && s != v1::JOB_STATE_RUNNING) return resp.job();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "job " << id << " did not end";
  return {};
}

std::vector<v1::Run> Runs(Daemon& d, const std::string& id, const std::string& token = "") {
  grpc::ClientContext ctx;
  Auth(&ctx, token);
  v1::ListRunsRequest req;
  req.set_job_id(id);
  v1::ListRunsResponse resp;
  EXPECT_TRUE(d.stub()->ListRuns(&ctx, req, &resp).ok());
  return {resp.runs().begin(), resp.runs().end()};
}

TEST(Security, ModelPathOutsideTheModelRootsIsRefusedWithoutSayingWhetherItExists) {
  const std::string root = FreshDir("sec_root");
  const std::string outside = FreshDir("sec_outside");
  std::ofstream(outside + "/secret.pt") << "host file";
  std::ofstream(root + "/inside.pt") << "not a model";
  ASSERT_EQ(symlink((outside + "/secret.pt").c_str(), (root + "/link.pt").c_str()), 0);

  // No --model-root: no path at all, not even one that exists.
  Daemon closed(FreshDir("sec_closed"));
  ASSERT_TRUE(closed.serving()) << closed.log();
  grpc::Status exists = Submit(closed, ModelSpec("/etc/passwd"));
  grpc::Status missing = Submit(closed, ModelSpec("/etc/no-such-file-here"));
  EXPECT_EQ(exists.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(exists.error_message().find("spec.base.params.model_path"), std::string::npos)
      << exists.error_message();
  EXPECT_EQ(exists.error_code(), missing.error_code());
  EXPECT_EQ(exists.error_message(), missing.error_message());

  Daemon d(FreshDir("sec_roots"), {"--model-root", root});
  ASSERT_TRUE(d.serving()) << d.log();
  for (const std::string& path :
       {outside + "/secret.pt", root + "/../sec_outside/secret.pt", root + "/link.pt",
        root, std::string("/proc/self/environ")}) {
    grpc::Status s = Submit(d, ModelSpec(path));
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << path;
    EXPECT_EQ(s.error_message(), exists.error_message()) << path;
  }
  // A file under the root is accepted; it is not a model, so its run fails.
  std::string id;
  ASSERT_TRUE(Submit(d, ModelSpec(root + "/inside.pt"), "", &id).ok());
  EXPECT_EQ(WaitForJob(d, id).state(), v1::JOB_STATE_FAILED);
  auto runs = Runs(d, id);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_FAILED);
}

TEST(Security, ModelHashThatIsNotAHashIsInvalidArgument) {
  Daemon d(FreshDir("sec_hash"));
  ASSERT_TRUE(d.serving()) << d.log();
  for (const std::string& bad :
       {std::string("../../etc/passwd"), std::string(64, 'A'), std::string(63, 'a'),
        std::string(64, 'a') + "/"}) {
    grpc::Status s = Submit(d, ModelSpec("", bad));
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_NE(s.error_message().find("spec.base.params.model_sha256"), std::string::npos)
        << s.error_message();
  }
  // A well-formed hash of a model nobody uploaded.
  grpc::Status s = Submit(d, ModelSpec("", std::string(64, 'a')));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("upload it first"), std::string::npos) << s.error_message();
}

TEST(Security, AotiPackagesNeedAnAdminUploaderAndReachTheirOwnLoader) {
  const std::string dir = FreshDir("sec_aoti");
  Daemon d(dir, {"--token-file", WriteTokenFile(dir)});
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string package = "PK\x03\x04 pretend AOTI package";
  // A submitter may upload TorchScript but not native code.
  EXPECT_EQ(Upload(d, package, v1::MODEL_FORMAT_AOTI_PACKAGE, kAlice).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Upload(d, package, v1::MODEL_FORMAT_AOTI_PACKAGE, kReader).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::ModelInfo script;
  ASSERT_TRUE(Upload(d, "torchscript bytes", v1::MODEL_FORMAT_TORCHSCRIPT, kAlice, &script).ok());
  EXPECT_EQ(script.uploaded_by(), "alice");
  EXPECT_EQ(script.uploader_role(), v1::ROLE_SUBMIT);

  // An admin's package is stored as AOTI and goes to the AOTI loader, not
  // torch::jit::load (this one is not a real package, so the run fails there).
  v1::ModelInfo aoti;
  ASSERT_TRUE(Upload(d, package, v1::MODEL_FORMAT_AOTI_PACKAGE, kAdmin, &aoti).ok());
  EXPECT_EQ(aoti.format(), v1::MODEL_FORMAT_AOTI_PACKAGE);
  std::string id;
  ASSERT_TRUE(Submit(d, ModelSpec("", aoti.sha256()), kAlice, &id).ok());
  WaitForJob(d, id, kAlice);
  auto runs = Runs(d, id, kAlice);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(runs[0].error().find("AOTInductor"), std::string::npos) << runs[0].error();

  // A package that reached the store without an admin uploader (an older
  // daemon) is refused at submit.
  {
    auto store = storage::Store::Open({dir + "/gpubench.db"});
    ASSERT_TRUE(store.ok()) << store.status();
    v1::ModelInfo planted = aoti;
    planted.set_sha256(std::string(64, 'b'));
    planted.set_uploader_role(v1::ROLE_SUBMIT);
    ASSERT_TRUE((*store)->models().Put(planted).ok());
  }
  grpc::Status s = Submit(d, ModelSpec("", std::string(64, 'b')), kAdmin);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_NE(s.error_message().find("--allow-uploaded-aoti"), std::string::npos);
}

TEST(Security, NetworkListenNeedsTlsAndTokensOrInsecure) {
  const std::string dir = FreshDir("sec_listen");
  Daemon refused(dir, {"--listen", "0.0.0.0:0"});
  EXPECT_FALSE(refused.serving());
  const int status = refused.Stop(SIGKILL);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  EXPECT_NE(refused.log().find("refusing to listen on 0.0.0.0:0"), std::string::npos)
      << refused.log();

  Daemon insecure(FreshDir("sec_listen_insecure"), {"--listen", "0.0.0.0:0", "--insecure"});
  ASSERT_TRUE(insecure.serving()) << insecure.log();
  EXPECT_NE(insecure.log().find("Z W gpubenchd: --insecure: serving"), std::string::npos) << insecure.log();
}

// Authorization runs before gRPC dispatches a call (the credentials'
// AuthMetadataProcessor), so it covers paths no handler serves: a method the
// service lacks, and another service's. Only an admin gets as far as
// UNIMPLEMENTED.
TEST(Security, AuthorizationRunsBeforeDispatchEvenForPathsWithoutAHandler) {
  const std::string dir = FreshDir("sec_paths");
  Daemon d(dir, {"--token-file", WriteTokenFile(dir)});
  ASSERT_TRUE(d.serving()) << d.log();
  auto channel = grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  auto call = [&](const std::string& path, const std::string& token) {
    grpc::ClientContext ctx;
    Auth(&ctx, token);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Slice slice(std::string("\x0a\x01x"));  // a valid protobuf: field 1 = "x"
    grpc::ByteBuffer request(&slice, 1), response;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    grpc::Status status;
    generic.UnaryCall(&ctx, path, grpc::StubOptions(), &request, &response,
                      [&](grpc::Status s) {
                        std::lock_guard<std::mutex> lock(mu);
                        status = std::move(s);
                        done = true;
                        cv.notify_all();
                      });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
    return status;
  };
  for (const std::string path : {"/gpubench.v1.BenchService/NoSuchRpc",
                                 "/grpc.channelz.v1.Channelz/GetTopChannels"}) {
    EXPECT_EQ(call(path, "").error_code(), grpc::StatusCode::UNAUTHENTICATED) << path;
    EXPECT_EQ(call(path, "wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED) << path;
    grpc::Status reader = call(path, kReader);
    EXPECT_EQ(reader.error_code(), grpc::StatusCode::PERMISSION_DENIED) << path;
    EXPECT_NE(reader.error_message().find("needs the admin role; dashboards has read"),
              std::string::npos) << reader.error_message();
    EXPECT_EQ(call(path, kAlice).error_code(), grpc::StatusCode::PERMISSION_DENIED) << path;
    EXPECT_EQ(call(path, kAdmin).error_code(), grpc::StatusCode::UNIMPLEMENTED) << path;
  }
  // A real rpc through the same path: the reader's GetJob reaches its handler.
  EXPECT_EQ(call("/gpubench.v1.BenchService/GetJob", kReader).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // The standard health service is the one path open without a token: it
  // answers for a service it does not know ("x") with NOT_FOUND.
  EXPECT_EQ(call("/grpc.health.v1.Health/Check", "").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(d.log().find(kReader), std::string::npos) << "a token reached the log";
}

// Tokens on plaintext across a network could not be checked (and the CLI
// never sends one there): refused at start, even with --insecure.
TEST(Security, TokensOnANetworkAddressNeedTls) {
  const std::string dir = FreshDir("sec_plain_tokens");
  Daemon d(dir, {"--listen", "0.0.0.0:0", "--insecure", "--token-file", WriteTokenFile(dir)});
  EXPECT_FALSE(d.serving());
  const int status = d.Stop(SIGKILL);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  EXPECT_NE(d.log().find("need TLS on 0.0.0.0:0"), std::string::npos) << d.log();
}

TEST(Security, OnlyAdminsCancelOtherPeoplesJobsAndJobsRecordTheirSubmitter) {
  const std::string dir = FreshDir("sec_cancel");
  Daemon d(dir, {"--token-file", WriteTokenFile(dir)});
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("empty");
  spec.mutable_base()->set_device("cpu");
  spec.mutable_measurement()->set_min_time_ms(60000);
  spec.mutable_measurement()->set_max_time_ms(60000);
  spec.mutable_measurement()->set_max_iterations(100000000);  // the default cap ends it in ~1 s
  std::string id;
  ASSERT_TRUE(Submit(d, spec, kAlice, &id).ok());
  auto cancel = [&](const std::string& token) {
    grpc::ClientContext ctx;
    Auth(&ctx, token);
    v1::CancelJobRequest req;
    req.set_job_id(id);
    v1::CancelJobResponse resp;
    return d.stub()->CancelJob(&ctx, req, &resp);
  };
  EXPECT_EQ(cancel(kBob).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(cancel(kReader).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(cancel("not-a-token").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(cancel(kAdmin).ok());
  const v1::Job job = WaitForJob(d, id, kAlice);
  EXPECT_EQ(job.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(job.submitted_by(), "alice");
  // Tokens never reach the log or the store.
  std::string bytes;
  for (const char* file : {"/gpubench.db", "/gpubench.db-wal"}) {
    std::ifstream db(dir + file, std::ios::binary);
    bytes.append(std::istreambuf_iterator<char>(db), {});
  }
  for (const char* token : {kAdmin, kAlice, kBob, kReader}) {
    EXPECT_EQ(bytes.find(token), std::string::npos) << token;
    EXPECT_EQ(d.log().find(token), std::string::npos) << token;
  }
}

TEST(Security, UploadsAreBoundedPerFileAndInTotalAndAdminsDeleteModels) {
  const std::string dir = FreshDir("sec_quota");
  ASSERT_EQ(std::system(("mkdir -p " + dir + "/models").c_str()), 0);
  std::ofstream(dir + "/models/.upload-leftover-1") << "half an upload from a crash";
  Daemon d(dir, {"--token-file", WriteTokenFile(dir), "--max-model-bytes", "1000",
                 "--models-quota-bytes", "2500"});
  ASSERT_TRUE(d.serving()) << d.log();
  EXPECT_FALSE(std::ifstream(dir + "/models/.upload-leftover-1").good());
  EXPECT_NE(d.log().find("removed 1 unfinished upload"), std::string::npos) << d.log();

  grpc::Status big = Upload(d, std::string(1001, 'x'), v1::MODEL_FORMAT_TORCHSCRIPT, kAlice);
  EXPECT_EQ(big.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(big.error_message().find("header.size_bytes"), std::string::npos);
  v1::ModelInfo first;
  ASSERT_TRUE(Upload(d, std::string(900, 'a'), v1::MODEL_FORMAT_TORCHSCRIPT, kAlice, &first).ok());
  ASSERT_TRUE(Upload(d, std::string(900, 'b'), v1::MODEL_FORMAT_TORCHSCRIPT, kAlice).ok());
  grpc::Status over = Upload(d, std::string(900, 'c'), v1::MODEL_FORMAT_TORCHSCRIPT, kAlice);
  EXPECT_EQ(over.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << over.error_message();

  auto remove = [&](const std::string& token, const std::string& sha256) {
    grpc::ClientContext ctx;
    Auth(&ctx, token);
    v1::DeleteModelRequest req;
    req.set_sha256(sha256);
    v1::DeleteModelResponse resp;
    return d.stub()->DeleteModel(&ctx, req, &resp);
  };
  EXPECT_EQ(remove(kAlice, first.sha256()).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(remove(kAdmin, "../x").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(remove(kAdmin, first.sha256()).ok());
  EXPECT_FALSE(std::ifstream(dir + "/models/" + first.sha256()).good());
  EXPECT_EQ(remove(kAdmin, first.sha256()).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(Upload(d, std::string(900, 'c'), v1::MODEL_FORMAT_TORCHSCRIPT, kAlice).ok());
}

TEST(Security, PriorityAboveTheCeilingNeedsAdmin) {
  const std::string dir = FreshDir("sec_priority");
  Daemon d(dir, {"--token-file", WriteTokenFile(dir)});
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec;
  spec.mutable_base()->set_workload("empty");
  spec.mutable_base()->set_device("cpu");
  spec.set_priority(11);
  grpc::Status s = Submit(d, spec, kAlice);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("spec.priority: above 10 needs the admin role"),
            std::string::npos)
      << s.error_message();
  EXPECT_TRUE(Submit(d, spec, kAdmin).ok());
  // The same connection again: the admin's call before does not make Alice
  // one (gRPC shares an AuthContext among a connection's calls).
  EXPECT_EQ(Submit(d, spec, kAlice).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  spec.set_priority(10);
  EXPECT_TRUE(Submit(d, spec, kAlice).ok());
}

}  // namespace
}  // namespace gpubench
