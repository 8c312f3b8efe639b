// gpubenchd --worker-user: a daemon started as root runs each worker as
// another user, who opens nothing of the daemon's. Tried with Landlock off
// (--confine-workers=false), so that the user's own rights are all that
// stands between a hostile model and the host: its uploaded model and its
// model in a root-only folder still load (the worker opened them before it
// switched), and it can neither read a root-only file nor write a root-owned
// one.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "gpubench/v1/service.grpc.pb.h"
#include "tests/support/callers.h"
#include "tests/support/daemon_process.h"
#include "tests/support/script_model.h"
#include "tests/support/read_file.h"

namespace gpubench {
namespace {

using testing_support::Daemon;
using testing_support::FreshDir;
using testing_support::ModelSpec;
using testing_support::ScriptModel;

constexpr char kUser[] = "nobody";

// A fresh folder the worker user may pass down to: under /tmp itself, since
// the tests' own temporary folder may be a private (0700) one.
std::string ReachableDir(const std::string& name) {
  const std::string dir = "/tmp/gpubench_test_" + name + "_" + std::to_string(getpid());
  EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
  EXPECT_EQ(mkdir(dir.c_str(), 0755), 0) << dir;
  chmod(dir.c_str(), 0755);  // whatever the umask
  return dir;
}

using testing_support::ReadFile;

// Runs spec and returns its one run.
v1::Run RunOne(Daemon& d, const v1::JobSpec& spec) {
  std::string id;
  EXPECT_TRUE(testing_support::Submit(d, spec, "", &id).ok());
  testing_support::WaitForJobEnd(d, id);
  const std::vector<v1::Run> runs = testing_support::JobRuns(d, id);
  EXPECT_EQ(runs.size(), 1u);
  return runs.empty() ? v1::Run() : runs[0];
}

TEST(WorkerUser, AWorkerUserLoadsItsModelsAndReachesNothingOfRoots) {
#ifndef GPUBENCH_SCRIPT_MODEL_PATH
  GTEST_SKIP() << "needs the script_model tool (a build with the worker)";
#endif
  if (geteuid() != 0) GTEST_SKIP() << "only root may start workers as another user";
  const passwd* user = getpwnam(kUser);
  if (user == nullptr) GTEST_SKIP() << "no user " << kUser;
  const std::string dir = ReachableDir("worker_user");
  const std::string roots_only = dir + "/roots_only";  // 0700: the worker user cannot enter
  ASSERT_EQ(mkdir(roots_only.c_str(), 0700), 0);
  const std::string secret = roots_only + "/secret";
  std::ofstream(secret) << "TOPSECRET-worker-user";
  chmod(secret.c_str(), 0600);
  const std::string target = dir + "/target";  // root's, 0644: readable, not writable
  std::ofstream(target) << "the host's own bytes";
  chmod(target.c_str(), 0644);

  const std::string good = ScriptModel(roots_only + "/good.pt",
                                       "def forward(self, x):\n    return x * 2\n");
  ASSERT_FALSE(good.empty());
  chmod((roots_only + "/good.pt").c_str(), 0600);
  ScriptModel(roots_only + "/read.pt",
              "def forward(self, x):\n"
              "    t = torch.from_file(\"" + secret + "\", False, 8, dtype=0)\n"
              "    return x + t.sum().float()\n");
  ScriptModel(roots_only + "/write.pt",
              "def forward(self, x):\n"
              "    t = torch.from_file(\"" + target + "\", True, 8, dtype=0)\n"
              "    t.fill_(88)\n"
              "    return x\n");

  Daemon d(dir + "/data", {"--worker-user", kUser, "--confine-workers=false",
                           "--allow-unconfined-user-models", "--model-root", roots_only});
  ASSERT_TRUE(d.serving()) << d.log();
  struct stat st;
  ASSERT_EQ(stat((dir + "/data").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);  // passable, not listable

  // An upload (0600 in the daemon's 0700 model folder) and a model in a
  // root-only folder: both load.
  v1::ModelInfo info;
  ASSERT_TRUE(testing_support::Upload(d, good, v1::MODEL_FORMAT_TORCHSCRIPT, "", &info).ok());
  v1::Run uploaded = RunOne(d, ModelSpec("", info.sha256()));
  EXPECT_EQ(uploaded.state(), v1::RUN_STATE_SUCCEEDED) << uploaded.error();
  v1::Run by_path = RunOne(d, ModelSpec(roots_only + "/good.pt", ""));
  EXPECT_EQ(by_path.state(), v1::RUN_STATE_SUCCEEDED) << by_path.error();

  // The hostile ones: the worker user may not open either file.
  v1::Run read = RunOne(d, ModelSpec(roots_only + "/read.pt", ""));
  EXPECT_EQ(read.state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(read.error().find("Permission denied"), std::string::npos) << read.error();
  // It fails, or writes a private mapping: either way the file is as it was.
  RunOne(d, ModelSpec(roots_only + "/write.pt", ""));
  EXPECT_EQ(ReadFile(target), "the host's own bytes");
  EXPECT_EQ(d.log().find("TOPSECRET"), std::string::npos);
}

// The confinement check shows the user a worker runs as.
TEST(WorkerUser, TheConfinementCheckShowsTheWorkersUser) {
  if (geteuid() != 0) GTEST_SKIP() << "only root may start workers as another user";
  const passwd* user = getpwnam(kUser);
  if (user == nullptr) GTEST_SKIP() << "no user " << kUser;
  if (syscall(444 /* landlock_create_ruleset */, nullptr, 0, 1) <= 0) {
    GTEST_SKIP() << "the kernel has no Landlock";
  }
  const std::string dir = ReachableDir("worker_user_check");
  const std::string command = std::string(GPUBENCH_DAEMON_PATH) + " --data-dir " + dir +
                              "/data --worker " + GPUBENCH_WORKER_PATH + " --worker-user " +
                              kUser + " --check-confinement 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  EXPECT_EQ(WEXITSTATUS(pclose(pipe)), 0) << out;
  EXPECT_NE(out.find("ok          runs as uid " + std::to_string(user->pw_uid)),
            std::string::npos)
      << out;
}

// A daemon that is not root, or a user that does not exist or is root, is
// refused at start-up naming the flag.
TEST(WorkerUser, AnUnknownOrRootUserIsRefusedNamingTheFlag) {
  const std::string dir = FreshDir("worker_user_bad");
  for (const char* name : {"no-such-user-gpubench", "root"}) {
    const std::string command = std::string(GPUBENCH_DAEMON_PATH) + " --data-dir " + dir +
                                "/data --listen 127.0.0.1:0 --worker-user " + name + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    std::string out;
    char buf[512];
    while (size_t n = fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
    EXPECT_EQ(WEXITSTATUS(pclose(pipe)), 2) << out;
    EXPECT_NE(out.find("--worker-user"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace gpubench
