// A user model is code, and its worker runs confined: a hostile TorchScript
// model, the confinement check, the aot compiler's own domain, model roots
// above the data directory, private daemon files, and unconfined workers
// only where the operator allows them. Each against a real gpubenchd.
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
#include "tests/server/security_test_util.h"
#include "tests/support/read_file.h"

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

using testing_support::ReadFile;

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

// The hostile models' forward methods, in TorchScript.

// Reads size bytes of the file at path and raises them as its error.
std::string ReadAndRaiseSource(const std::string& path, size_t size) {
  return "def forward(self, x):\n"
         "    t = torch.from_file(\"" + path + "\", False, " + std::to_string(size) +
         ", dtype=0)\n"
         "    vals: List[int] = t.tolist()\n"
         "    s = \"\"\n"
         "    for v in vals:\n"
         "        s = s + chr(v)\n"
         "    assert False, s\n"
         "    return x\n";
}

// Writes through a shared mapping of the file at path.
std::string OverwriteSource(const std::string& path) {
  return "def forward(self, x):\n"
         "    t = torch.from_file(\"" + path + "\", True, 8, dtype=0)\n"
         "    t.fill_(88)\n"
         "    return x\n";
}

// torch.saves to planted.pt in each directory.
std::string SaveSource(const std::string& dir, const std::string& other_dir) {
  return "def forward(self, x):\n"
         "    torch.save(x, \"" + dir + "/planted.pt\")\n"
         "    torch.save(x, \"" + other_dir + "/planted.pt\")\n"
         "    return x\n";
}

// Compiles source to the model file at path and submits it as alice: by
// upload, or by its path (under a model root); leaves the job's id in *id.
void SubmitScriptModel(Daemon& d, const std::string& path, const std::string& source,
                       bool by_upload, std::string* id) {
  const std::string bytes = ScriptModel(path, source);
  ASSERT_FALSE(bytes.empty()) << path;
  if (by_upload) {
    v1::ModelInfo info;
    ASSERT_TRUE(Upload(d, bytes, v1::MODEL_FORMAT_TORCHSCRIPT, kAlice, &info).ok());
    ASSERT_TRUE(Submit(d, ModelSpec("", info.sha256()), kAlice, id).ok());
  } else {
    ASSERT_TRUE(Submit(d, ModelSpec(path), kAlice, id).ok());
  }
}

// What a power cut leaves: the database's files in data copied as they are
// (to copy) while d runs. It opens, with the good job and each of ids there.
void ExpectACopyOfTheDatabaseHasEveryJob(Daemon& d, const std::string& data,
                                         const std::string& copy, const std::string& good,
                                         const std::vector<std::string>& ids) {
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
  // shared mapping (a host file, the database's WAL, which it has while the
  // daemon runs, the token file), and torch.save to a path.
  const std::string wal = data + "/gpubench.db-wal";
  struct Attack {
    std::string name, source;
  };
  const std::vector<Attack> attacks = {{"read", ReadAndRaiseSource(secret, kSecret.size())},
                                       {"write", OverwriteSource(target)},
                                       {"wal", OverwriteSource(wal)},
                                       {"tokens", OverwriteSource(tokens)},
                                       {"save", SaveSource(outside, data)}};
  std::vector<std::string> ids;
  for (size_t i = 0; i < attacks.size(); ++i) {
    std::string id;
    // The first by upload: the model then lives in the data directory, which
    // the worker may not open, except for this one file.
    ASSERT_NO_FATAL_FAILURE(SubmitScriptModel(d, root + "/" + attacks[i].name + ".pt",
                                              attacks[i].source, i == 0, &id));
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
  EXPECT_EQ(ReadFile(target), kTarget);
  EXPECT_EQ(ReadFile(tokens).find("XXXXXXXX"), std::string::npos);
  EXPECT_FALSE(std::ifstream(outside + "/planted.pt").good());
  EXPECT_FALSE(std::ifstream(data + "/planted.pt").good());
  EXPECT_EQ(ReadFile(wal).find("XXXXXXXX"), std::string::npos);
  ExpectACopyOfTheDatabaseHasEveryJob(d, data, dir + "/copy", good, ids);
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
                              " --check-confinement-path " + dir + "/no-such-file 2>&1";
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
  // A path that is not there was never tried: not checked, never "ok".
  EXPECT_NE(out.find("not checked read  " + dir + "/no-such-file (does not exist)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("ok          read  denied  " + dir + "/no-such-file"), std::string::npos)
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

}  // namespace
}  // namespace gpubench
