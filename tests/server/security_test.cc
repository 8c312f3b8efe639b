// Attacks a remote client could try, each tried against a real gpubenchd
// process on loopback with real worker processes: loading host files as
// models, escaping the model directory, uploading native code, listening
// on the network unprotected, and cancelling other people's jobs.
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

// --- Confinement: a user model is code, and its worker runs confined. ---

// Landlock, which the workers' confinement needs; where the kernel has none
// the daemon runs workers unconfined and says so (tested below).
bool LandlockAvailable() {
  return syscall(444 /* landlock_create_ruleset */, nullptr, 0, 1 /* VERSION */) > 0;
}

// A 0600 file at path holding text; returns path.
std::string PrivateFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  chmod(path.c_str(), 0600);
  return path;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Everything a read-role caller can see of a job: its events' texts, its
// error, its runs' errors.
std::string VisibleText(Daemon& d, const std::string& id) {
  std::string text;
  grpc::ClientContext ctx;
  Auth(&ctx, kReader);
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::GetJobResponse resp;
  if (d.stub()->GetJob(&ctx, req, &resp).ok()) text += resp.job().DebugString();
  for (const v1::Run& r : Runs(d, id, kReader)) text += r.DebugString();
  return text;
}

TEST(Security, HostileTorchScriptFromASubmitterCannotReadWriteOrDamageTheHost) {
#ifndef GPUBENCH_SCRIPT_MODEL_PATH
  GTEST_SKIP() << "needs the script_model tool (a build with the worker)";
#endif
  if (!LandlockAvailable()) GTEST_SKIP() << "the kernel has no Landlock";
  const std::string dir = FreshDir("sec_hostile");
  const std::string data = dir + "/data", root = dir + "/models", outside = dir + "/outside";
  ASSERT_EQ(std::system(("mkdir -p " + data + " " + root + " " + outside).c_str()), 0);
  // A 0600 file outside every model root, and a file a model tries to overwrite.
  const std::string kSecret = "TOPSECRET-7f3a9c-do-not-leak";
  const std::string secret = PrivateFile(outside + "/secret", kSecret);
  const std::string target = outside + "/target";
  const std::string kTarget = "the host's own bytes";
  std::ofstream(target) << kTarget;
  const std::string tokens = WriteTokenFile(dir);
  Daemon d(data, {"--token-file", tokens, "--model-root", root});
  ASSERT_TRUE(d.serving()) << d.log();
  // A good job first: committed results that must survive.
  std::string good;
  v1::JobSpec tiny = testing_support::TinySpec();
  ASSERT_TRUE(Submit(d, tiny, kAlice, &good).ok());
  ASSERT_EQ(WaitForJob(d, good, kAlice).state(), v1::JOB_STATE_SUCCEEDED);

  // The probe's attacks: read a file and raise its bytes, write through a
  // shared mapping (a host file, the database's WAL, the token file), and
  // torch.save to a path.
  const std::string read_bytes =
      "def forward(self, x):\n"
      "    t = torch.from_file(\"" + secret + "\", False, " + std::to_string(kSecret.size()) +
      ", dtype=0)\n"
      "    vals: List[int] = t.tolist()\n"
      "    s = \"\"\n"
      "    for v in vals:\n"
      "        s = s + chr(v)\n"
      "    assert False, s\n"
      "    return x\n";
  auto overwrite = [](const std::string& path) {
    return "def forward(self, x):\n"
           "    t = torch.from_file(\"" + path + "\", True, 8, dtype=0)\n"
           "    t.fill_(88)\n"
           "    return x\n";
  };
  const std::string save =
      "def forward(self, x):\n"
      "    torch.save(x, \"" + outside + "/planted.pt\")\n"
      "    torch.save(x, \"" + data + "/planted.pt\")\n"
      "    return x\n";
  // The database has a WAL while the daemon runs.
  const std::string wal = data + "/gpubench.db-wal";
  struct Attack {
    std::string name, source;
  };
  const std::vector<Attack> attacks = {{"read", read_bytes},
                                       {"write", overwrite(target)},
                                       {"wal", overwrite(wal)},
                                       {"tokens", overwrite(tokens)},
                                       {"save", save}};
  std::vector<std::string> ids;
  for (size_t i = 0; i < attacks.size(); ++i) {
    const std::string model = root + "/" + attacks[i].name + ".pt";
    const std::string bytes = ScriptModel(model, attacks[i].source);
    ASSERT_FALSE(bytes.empty()) << attacks[i].name;
    std::string id;
    if (i == 0) {
      // By upload: the model then lives in the data directory, which the
      // worker may not open, except for this one file.
      v1::ModelInfo info;
      ASSERT_TRUE(Upload(d, bytes, v1::MODEL_FORMAT_TORCHSCRIPT, kAlice, &info).ok());
      ASSERT_TRUE(Submit(d, ModelSpec("", info.sha256()), kAlice, &id).ok());
    } else {
      ASSERT_TRUE(Submit(d, ModelSpec(model), kAlice, &id).ok());
    }
    ids.push_back(id);
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    WaitForJob(d, ids[i], kAlice);
    const std::vector<v1::Run> runs = Runs(d, ids[i], kAlice);
    ASSERT_EQ(runs.size(), 1u) << attacks[i].name;
    // Each attack fails (its file operation was refused), or runs without
    // effect; the checks below look at the effects.
    if (attacks[i].name == "read") {
      EXPECT_EQ(runs[0].state(), v1::RUN_STATE_FAILED);
      // The model itself loaded (its file was readable); the secret was not.
      EXPECT_NE(runs[0].error().find(secret), std::string::npos) << runs[0].error();
    }
    const std::string visible = VisibleText(d, ids[i]);
    EXPECT_EQ(visible.find(kSecret), std::string::npos) << attacks[i].name << ": " << visible;
  }
  EXPECT_EQ(d.log().find(kSecret), std::string::npos);
  EXPECT_EQ(ReadAll(target), kTarget);
  EXPECT_EQ(ReadAll(tokens).find("XXXXXXXX"), std::string::npos);
  EXPECT_FALSE(std::ifstream(outside + "/planted.pt").good());
  EXPECT_FALSE(std::ifstream(data + "/planted.pt").good());
  EXPECT_EQ(ReadAll(wal).find("XXXXXXXX"), std::string::npos);
  // What a power cut leaves: the database's files copied as they are. It
  // opens, and every job is there.
  const std::string copy = dir + "/copy";
  ASSERT_EQ(std::system(("mkdir -p " + copy + " && cp " + data + "/gpubench.db* " + copy)
                            .c_str()),
            0);
  d.Stop(SIGKILL);
  Daemon again(copy);
  ASSERT_TRUE(again.serving()) << again.log();
  EXPECT_EQ(testing_support::JobOf(again, good).state(), v1::JOB_STATE_SUCCEEDED);
  for (const std::string& id : ids) {
    EXPECT_EQ(testing_support::JobRuns(again, id).size(), 1u) << id;
  }
  EXPECT_EQ(testing_support::JobRuns(again, good).size(), 1u);
}

TEST(Security, ConfinementCheckShowsAWorkerCannotOpenTheDaemonsFiles) {
  if (!LandlockAvailable()) GTEST_SKIP() << "the kernel has no Landlock";
  const std::string dir = FreshDir("sec_check");
  const std::string data = dir + "/data";
  const std::string secret = PrivateFile(dir + "/secret", "private");
  const std::string tokens = WriteTokenFile(dir);
  {
    Daemon d(data, {"--token-file", tokens});  // makes the database
    ASSERT_TRUE(d.serving()) << d.log();
  }
  const std::string command = std::string(GPUBENCH_DAEMON_PATH) + " --data-dir " + data +
                              " --worker " + GPUBENCH_WORKER_PATH + " --token-file " + tokens +
                              " --check-confinement --check-confinement-path " + secret +
                              " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_EQ(out.find("UNEXPECTED"), std::string::npos) << out;
  // The daemon names a protected file by its canonical path (a worker, in
  // its scratch folder, could not resolve a relative one).
  char token_path[PATH_MAX];
  ASSERT_NE(realpath(tokens.c_str(), token_path), nullptr);
  for (const std::string& denied :
       {"read  denied  " + data + "/gpubench.db", "read  denied  " + std::string(token_path),
        "read  denied  " + secret, std::string("read  denied  /etc/shadow"),
        "write denied  " + data, std::string("write denied  /tmp"),
        std::string("start denied  a child process"),
        std::string("uring denied  io_uring_setup"),
        "conn  denied  " + data + "/.confinement-check.sock", std::string("sock  denied  inet"),
        std::string("sock  denied  inet6"), std::string("sock  allowed unix")}) {
    EXPECT_NE(out.find(denied), std::string::npos) << denied << " in\n" << out;
  }
  // The scratch folder, DATA_DIR/work/worker-*, by its canonical path.
  char real[PATH_MAX];
  ASSERT_NE(realpath(data.c_str(), real), nullptr);
  EXPECT_NE(out.find("write allowed " + std::string(real) + "/work/worker-"), std::string::npos)
      << out;
  EXPECT_NE(out.find("read  allowed " + std::string(GPUBENCH_WORKER_PATH)), std::string::npos)
      << out;
}

// execution aot runs the host's Python, in a process the worker forked
// before it confined itself: the compiler gets a domain of its own. A
// stand-in for that Python (a shell script, as --python) tries the host and
// reports: it reads its own installation but not the secret or the
// database, and writes its work folder only (not the data directory, the
// package cache or /tmp).
TEST(Security, TheAotCompilerRunsConfinedToItsWorkFolder) {
  if (!LandlockAvailable()) GTEST_SKIP() << "the kernel has no Landlock";
  const std::string dir = FreshDir("sec_aot_compiler");
  const std::string data = dir + "/data";
  const std::string secret = PrivateFile(dir + "/secret", "private");
  const std::string python = dir + "/python/bin/python3";
  ASSERT_EQ(std::system(("mkdir -p " + dir + "/python/bin").c_str()), 0);
  const std::string planted = "/tmp/gpubench-aot-planted-" + std::to_string(getpid());
  std::ofstream(python) << "#!/bin/sh\n"
                        << "r=\n"
                        << "try() { if eval \"$2\" >/dev/null 2>&1; then r=\"$r $1\"; "
                           "else r=\"$r no-$1\"; fi; }\n"
                        << "try read-own 'cat " << python << "'\n"
                        << "try read-secret 'cat " << secret << "'\n"
                        << "try read-db 'cat " << data << "/gpubench.db'\n"
                        << "try write-data 'echo x > " << data << "/planted'\n"
                        << "try write-cache 'echo x > " << data << "/aot-cache/planted.pt2'\n"
                        << "try write-tmp 'echo x > " << planted << "'\n"
                        << "try write-work 'echo x > ./inside'\n"
                        << "echo \"gpubench_models.aot: probe:$r\"\n"
                        << "exit 2\n";
  chmod(python.c_str(), 0755);
  const std::string tokens = WriteTokenFile(dir);
  Daemon d(data, {"--token-file", tokens, "--python", python});
  ASSERT_TRUE(d.serving()) << d.log();
  v1::JobSpec spec;
  v1::RunConfig* c = spec.mutable_base();
  c->set_workload("mlp");
  c->set_device("cpu");
  c->set_mode(v1::MODE_INFER);
  c->set_batch_size(2);
  c->set_execution(v1::EXECUTION_AOT);
  std::string id;
  ASSERT_TRUE(Submit(d, spec, kAlice, &id).ok());
  WaitForJob(d, id, kAlice);
  const std::vector<v1::Run> runs = Runs(d, id, kAlice);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_NE(runs[0].error().find("probe: read-own no-read-secret no-read-db no-write-data "
                                 "no-write-cache no-write-tmp write-work"),
            std::string::npos)
      << runs[0].error();
  EXPECT_FALSE(std::ifstream(data + "/planted").good());
  EXPECT_FALSE(std::ifstream(planted).good());
  std::remove(planted.c_str());
}

TEST(Security, AModelRootAboveTheDataDirectoryDoesNotMakeItsFilesModels) {
  const std::string dir = FreshDir("sec_root_above");
  const std::string tokens = WriteTokenFile(dir);
  ASSERT_EQ(std::system(("mkdir -p " + dir + "/data").c_str()), 0);
  std::ofstream(dir + "/model.pt") << "not a model";
  Daemon d(dir + "/data", {"--token-file", tokens, "--model-root", dir});
  ASSERT_TRUE(d.serving()) << d.log();
  for (const std::string& path : {tokens, dir + "/data/gpubench.db"}) {
    const grpc::Status s = Submit(d, ModelSpec(path), kAlice);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << path;
    EXPECT_NE(s.error_message().find("spec.base.params.model_path"), std::string::npos);
  }
  EXPECT_TRUE(Submit(d, ModelSpec(dir + "/model.pt"), kAlice).ok());
}

TEST(Security, DaemonFilesArePrivateWhateverTheUmask) {
  const std::string dir = FreshDir("sec_private");
  const mode_t old = umask(022);
  {
    Daemon d(dir + "/data");
    umask(old);
    ASSERT_TRUE(d.serving()) << d.log();
    v1::ModelInfo info;
    ASSERT_TRUE(Upload(d, "model bytes", v1::MODEL_FORMAT_TORCHSCRIPT, "", &info).ok());
    struct stat st;
    ASSERT_EQ(stat((dir + "/data").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(stat((dir + "/data/gpubench.db").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0077, 0u);
    ASSERT_EQ(stat((dir + "/data/models/" + info.sha256()).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0077, 0u);
  }
  // An older daemon's readable files become private at the next start.
  ASSERT_EQ(chmod((dir + "/data").c_str(), 0755), 0);
  ASSERT_EQ(chmod((dir + "/data/gpubench.db").c_str(), 0644), 0);
  Daemon d(dir + "/data");
  ASSERT_TRUE(d.serving()) << d.log();
  struct stat st;
  ASSERT_EQ(stat((dir + "/data").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((dir + "/data/gpubench.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u);
}

TEST(Security, UnconfinedWorkersRunUserModelsOnlyForAdminsUnlessTheOperatorAllows) {
  const std::string dir = FreshDir("sec_unconfined");
  const std::string root = dir + "/models";
  ASSERT_EQ(std::system(("mkdir -p " + root + " " + dir + "/a " + dir + "/b " + dir + "/c")
                            .c_str()),
            0);
  std::ofstream(root + "/m.pt") << "not a model";
  const std::string tokens = WriteTokenFile(dir);
  auto host_of = [](Daemon& d) {
    grpc::ClientContext ctx;
    Auth(&ctx, kReader);
    v1::GetHostInfoResponse resp;
    EXPECT_TRUE(d.stub()->GetHostInfo(&ctx, v1::GetHostInfoRequest(), &resp).ok());
    return resp.host();
  };
  {
    Daemon d(dir + "/a", {"--token-file", tokens, "--model-root", root,
                          "--confine-workers=false"});
    ASSERT_TRUE(d.serving()) << d.log();
    const v1::HostInfo host = host_of(d);
    EXPECT_EQ(host.worker_confinement().rfind("none", 0), 0u) << host.worker_confinement();
    EXPECT_FALSE(host.unconfined_user_models_allowed());
    const grpc::Status s = Submit(d, ModelSpec(root + "/m.pt"), kAlice);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_NE(s.error_message().find("spec.base.workload"), std::string::npos)
        << s.error_message();
    EXPECT_TRUE(Submit(d, ModelSpec(root + "/m.pt"), kAdmin).ok());
    EXPECT_TRUE(Submit(d, testing_support::TinySpec(), kAlice).ok());  // built-in models run
    EXPECT_NE(d.log().find("workers run unconfined"), std::string::npos);
  }
  Daemon d(dir + "/b", {"--token-file", tokens, "--model-root", root,
                        "--confine-workers=false", "--allow-unconfined-user-models"});
  ASSERT_TRUE(d.serving()) << d.log();
  EXPECT_TRUE(host_of(d).unconfined_user_models_allowed());
  EXPECT_TRUE(Submit(d, ModelSpec(root + "/m.pt"), kAlice).ok());
  if (LandlockAvailable()) {
    Daemon confined(dir + "/c", {"--token-file", tokens});
    ASSERT_TRUE(confined.serving()) << confined.log();
    EXPECT_EQ(host_of(confined).worker_confinement().rfind("landlock ABI", 0), 0u);
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
                 "--upload-min-bytes-per-second", "1000000"});
  ASSERT_TRUE(d.serving()) << d.log();
  // Uploads data announced as hashing to sha256, all of it at once.
  auto upload = [&](const std::string& token, const std::string& data,
                    const std::string& sha256) {
    grpc::ClientContext ctx;
    Auth(&ctx, token);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::UploadModelResponse resp;
    auto writer = d.stub()->UploadModel(&ctx, &resp);
    v1::UploadModelRequest req;
    req.mutable_header()->set_name("m");
    req.mutable_header()->set_sha256(sha256);
    req.mutable_header()->set_size_bytes(data.size());
    writer->Write(req);
    req.Clear();
    req.set_chunk(data);
    writer->Write(req);
    writer->WritesDone();
    return writer->Finish();
  };
  const std::string kNoSuchHash(64, '0');  // never stored: its data does not hash to it

  // Alice announces 1.5 MB of the 4 MB and trickles a byte every 300 ms,
  // well inside the 1 s idle timeout.
  const std::string held(1500000, 'h');
  grpc::ClientContext trickle_ctx;
  Auth(&trickle_ctx, kAlice);
  trickle_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::UploadModelResponse trickle_resp;
  auto trickle = d.stub()->UploadModel(&trickle_ctx, &trickle_resp);
  {
    v1::UploadModelRequest req;
    req.mutable_header()->set_name("trickle");
    req.mutable_header()->set_sha256(Sha256Hex(held));
    req.mutable_header()->set_size_bytes(held.size());
    ASSERT_TRUE(trickle->Write(req));
  }
  std::thread trickler([&] {
    for (size_t at = 0; at < held.size(); ++at) {
      v1::UploadModelRequest req;
      req.set_chunk(held.substr(at, 1));
      if (!trickle->Write(req)) return;  // the daemon ended it
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });

  // Her second upload of 2 MB would pass her share (half of 4 MB) ...
  grpc::Status over;
  for (int i = 0; i < 50; ++i) {  // until the trickled upload's header is taken
    over = upload(kAlice, std::string(2000000, 'x'), kNoSuchHash);
    if (over.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(over.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << over.error_message();
  EXPECT_NE(over.error_message().find("alice's share of uploads in flight, half the model "
                                      "quota (2000000"),
            std::string::npos)
      << over.error_message();
  // A third upload at once is past her share too, however small: she holds
  // the trickle and a 1000-byte upload that then goes quiet.
  grpc::ClientContext quiet_ctx;
  Auth(&quiet_ctx, kAlice);
  quiet_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::UploadModelResponse quiet_resp;
  auto quiet = d.stub()->UploadModel(&quiet_ctx, &quiet_resp);
  {
    v1::UploadModelRequest req;
    req.mutable_header()->set_name("quiet");
    req.mutable_header()->set_sha256(kNoSuchHash);
    req.mutable_header()->set_size_bytes(1000);
    ASSERT_TRUE(quiet->Write(req));
  }
  grpc::Status third;
  for (int i = 0; i < 40; ++i) {  // until the quiet upload's header is taken
    third = upload(kAlice, std::string(1000, 't'), kNoSuchHash);
    if (third.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << third.error_message();
  EXPECT_NE(third.error_message().find("alice has 2 uploads in flight, its share (at most 2"),
            std::string::npos)
      << third.error_message();
  // The quiet one is cancelled after the 1 s idle timeout, saying why.
  grpc::Status idle = quiet->Finish();
  EXPECT_EQ(idle.error_code(), grpc::StatusCode::CANCELLED) << idle.error_message();
  EXPECT_NE(idle.error_message().find("sent nothing for 1s"), std::string::npos)
      << idle.error_message();

  // Bob's 1.5 MB still fits beside hers.
  const std::string bobs(1500000, 'b');
  grpc::Status bob = upload(kBob, bobs, Sha256Hex(bobs));
  EXPECT_TRUE(bob.ok()) << bob.error_message();

  // The trickle is cut off at 1 s + 1.5 MB at 1 MB/s, whatever it sends
  // (its client's own deadline, 10 s, would say only "Deadline Exceeded").
  trickler.join();
  grpc::Status cut = trickle->Finish();
  EXPECT_EQ(cut.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << cut.error_message();
  EXPECT_NE(cut.error_message().find("--upload-min-bytes-per-second"), std::string::npos)
      << cut.error_message();
  EXPECT_NE(d.log().find("an upload by alice had "), std::string::npos) << d.log();

  // Its quota is free again: Alice's 1.5 MB goes through (3 MB stored of 4).
  grpc::Status again = upload(kAlice, held, Sha256Hex(held));
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
