// Attacks a remote client could try, each tried against a real gpubenchd
// process on loopback with real worker processes: loading host files as
// models, escaping the model directory, uploading native code, listening
// on the network unprotected, cancelling other people's jobs, holding the
// upload quota. The confinement of user models: security_confinement_test.cc.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpubench/v1/service.grpc.pb.h"
#include "common/sha256.h"
#include "storage/store.h"
#include "tests/support/callers.h"
#include "tests/support/daemon_process.h"
#include "tests/server/security_test_util.h"
#include "tests/support/script_model.h"

namespace gpubench {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;

using testing_support::kAdmin;
using testing_support::kAlice;
using testing_support::kBob;
using testing_support::kReader;
using testing_support::WriteTokenFile;
using testing_support::Auth;
using testing_support::Submit;
using testing_support::Upload;
using testing_support::ModelSpec;
using testing_support::ScriptModel;
using security_test::Runs;
using security_test::WaitForJob;

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

// An upload as token, open after its header, for the test to feed or leave
// quiet.
struct OpenUpload {
  OpenUpload(Daemon& d, const std::string& token) {
    Auth(&ctx, token);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    writer = d.stub()->UploadModel(&ctx, &resp);
  }

  // Announces size bytes hashing to sha256; false if the daemon ended the
  // upload.
  bool SendHeader(const std::string& name, const std::string& sha256, size_t size) {
    v1::UploadModelRequest req;
    req.mutable_header()->set_name(name);
    req.mutable_header()->set_sha256(sha256);
    req.mutable_header()->set_size_bytes(size);
    return writer->Write(req);
  }

  grpc::ClientContext ctx;
  v1::UploadModelResponse resp;
  std::unique_ptr<grpc::ClientWriter<v1::UploadModelRequest>> writer;
};

// Uploads data announced as hashing to sha256, all of it at once.
grpc::Status UploadAtOnce(Daemon& d, const std::string& token, const std::string& data,
                          const std::string& sha256) {
  OpenUpload upload(d, token);
  upload.SendHeader("m", sha256, data.size());
  v1::UploadModelRequest req;
  req.set_chunk(data);
  upload.writer->Write(req);
  upload.writer->WritesDone();
  return upload.writer->Finish();
}

// Tries a small third upload by alice while she holds the trickle and a
// 1000-byte upload that then goes quiet: *third is how the third ended,
// *idle how the quiet one did. A probe still in flight when the quiet header
// arrives refuses the quiet one instead, so each try opens a fresh quiet
// upload and waits longer for its header.
void UploadBesideAQuietOne(Daemon& d, const std::string& no_such_hash, grpc::Status* third,
                           grpc::Status* idle) {
  for (int i = 1; i <= 10; ++i) {
    OpenUpload quiet(d, kAlice);
    ASSERT_TRUE(quiet.SendHeader("quiet", no_such_hash, 1000));
    std::this_thread::sleep_for(std::chrono::milliseconds(25 * i));
    *third = UploadAtOnce(d, kAlice, std::string(1000, 't'), no_such_hash);
    if (third->error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) quiet.ctx.TryCancel();
    *idle = quiet.writer->Finish();  // the held one is cancelled after the 1 s idle timeout
    if (third->error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) return;
  }
}

// One submitter cannot hold the models quota against everyone else: its
// uploads in flight may take at most half the quota (and 2 at a time), and an
// upload that trickles a byte just inside each idle timeout is still cut off
// at the idle timeout plus its size at --upload-min-bytes-per-second, its
// quota given back, with a reason the uploader can read.
TEST(Security, OneSubmittersTrickledUploadsCannotHoldTheSharedModelQuota) {
  const std::string dir = FreshDir("sec_upload_share");
  Daemon d(dir, {"--token-file", WriteTokenFile(dir), "--models-quota-bytes", "4000000",
                 "--max-model-bytes", "2000000", "--upload-idle-timeout-ms", "1000",
                 "--upload-min-bytes-per-second", "500000"});
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string kNoSuchHash(64, '0');  // never stored: its data does not hash to it

  // Alice announces 1.5 MB of the 4 MB and trickles a byte every 300 ms,
  // well inside the 1 s idle timeout.
  const std::string held(1500000, 'h');
  OpenUpload trickle(d, kAlice);
  ASSERT_TRUE(trickle.SendHeader("trickle", Sha256Hex(held), held.size()));
  std::thread trickler([&] {
    for (size_t at = 0; at < held.size(); ++at) {
      v1::UploadModelRequest req;
      req.set_chunk(held.substr(at, 1));
      if (!trickle.writer->Write(req)) return;  // the daemon ended it
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });

  // Her second upload of 2 MB would pass her share (half of 4 MB) ...
  grpc::Status over;
  for (int i = 0; i < 50; ++i) {  // until the trickled upload's header is taken
    over = UploadAtOnce(d, kAlice, std::string(2000000, 'x'), kNoSuchHash);
    if (over.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(over.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << over.error_message();
  EXPECT_NE(over.error_message().find("alice's share of uploads in flight, half the model "
                                      "quota (2000000"),
            std::string::npos)
      << over.error_message();
  // ... and a third upload at once is past her share too, however small.
  grpc::Status third, idle;
  ASSERT_NO_FATAL_FAILURE(UploadBesideAQuietOne(d, kNoSuchHash, &third, &idle));
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << third.error_message();
  EXPECT_NE(third.error_message().find("alice has 2 uploads in flight, its share (at most 2"),
            std::string::npos)
      << third.error_message();
  EXPECT_EQ(idle.error_code(), grpc::StatusCode::CANCELLED) << idle.error_message();
  EXPECT_NE(idle.error_message().find("sent nothing for 1s"), std::string::npos)
      << idle.error_message();

  // Bob's 1.5 MB still fits beside hers.
  const std::string bobs(1500000, 'b');
  grpc::Status bob = UploadAtOnce(d, kBob, bobs, Sha256Hex(bobs));
  EXPECT_TRUE(bob.ok()) << bob.error_message();

  // The trickle is cut off at 1 s + 1.5 MB at 0.5 MB/s, whatever it sends
  // (its client's own deadline, 10 s, would say only "Deadline Exceeded").
  trickler.join();
  grpc::Status cut = trickle.writer->Finish();
  EXPECT_EQ(cut.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << cut.error_message();
  EXPECT_NE(cut.error_message().find("--upload-min-bytes-per-second"), std::string::npos)
      << cut.error_message();
  EXPECT_NE(d.log().find("an upload by alice had "), std::string::npos) << d.log();

  // Its quota is free again: Alice's 1.5 MB goes through (3 MB stored of 4).
  grpc::Status again = UploadAtOnce(d, kAlice, held, Sha256Hex(held));
  EXPECT_TRUE(again.ok()) << again.error_message();
  EXPECT_EQ(d.Stop(SIGTERM), 0);
}

// An id is the daemon's (a job's, a run's): a caller's 100 KB "id" is
// INVALID_ARGUMENT naming the field, never echoed back into a NOT_FOUND
// whose metadata passes gRPC's limit (RESOURCE_EXHAUSTED).
TEST(Security, AHugeIdIsInvalidArgumentNamingTheField) {
  Daemon d(FreshDir("sec_huge_id"));
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string huge(100 * 1024, 'j');
  {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job_id(huge);
    v1::GetJobResponse resp;
    grpc::Status s = d.stub()->GetJob(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message().size();
    EXPECT_EQ(s.error_message().rfind("job_id: ", 0), 0u);
    EXPECT_LT(s.error_message().size(), 200u);
  }
  {
    grpc::ClientContext ctx;
    v1::WatchJobRequest req;
    req.set_job_id(huge);
    auto reader = d.stub()->WatchJob(&ctx, req);
    v1::WatchJobResponse event;
    while (reader->Read(&event)) {
    }
    grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message().size();
  }
  {
    grpc::ClientContext ctx;
    v1::GetTraceRequest req;
    req.set_run_id(huge);
    auto reader = d.stub()->GetTrace(&ctx, req);
    v1::GetTraceResponse chunk;
    while (reader->Read(&chunk)) {
    }
    grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message().size();
    EXPECT_EQ(s.error_message().rfind("run_id: ", 0), 0u);
  }
}

}  // namespace
}  // namespace gpubench
