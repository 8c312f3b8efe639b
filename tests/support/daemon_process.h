// A real gpubenchd child process on a loopback port (port 0: the daemon
// picks one and writes it to a port file), for tests that drive the daemon
// over gRPC or through the CLI. Test-only; not thread-safe.
#ifndef GPUBENCH_TESTS_SUPPORT_DAEMON_PROCESS_H_
#define GPUBENCH_TESTS_SUPPORT_DAEMON_PROCESS_H_

#include <arpa/inet.h>
#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpubench/v1/service.grpc.pb.h"

namespace gpubench::testing_support {

using std::chrono::milliseconds;

// An empty directory under the test's temp dir.
inline std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/gpubench_test_" + name;
  std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str());
  return dir;
}

// One gpubenchd child process.
// A loopback TCP port that was free a moment ago (for a second port the
// daemon takes, e.g. --health-listen).
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// A job of one tiny CPU run (batch 8, 10 iterations or 50 ms) that finishes
// in a second or two.
inline v1::JobSpec TinySpec(const std::string& workload = "mlp") {
  v1::JobSpec spec;
  spec.set_name("tiny");
  spec.mutable_base()->set_workload(workload);
  spec.mutable_base()->set_device("cpu");
  spec.mutable_base()->set_mode(v1::MODE_INFER);
  spec.mutable_base()->set_batch_size(8);
  auto* m = spec.mutable_measurement();
  m->set_warmup_iterations(2);
  m->set_min_iterations(10);
  m->set_min_time_ms(50);
  m->set_max_time_ms(2000);
  return spec;
}

class Daemon {
 public:
  explicit Daemon(std::string data_dir, std::vector<std::string> extra = {})
      : data_dir_(std::move(data_dir)) {
    const std::string port_file = data_dir_ + "/port";
    std::remove(port_file.c_str());
    std::vector<std::string> args = {GPUBENCH_DAEMON_PATH, "--listen", "127.0.0.1:0",
                                     "--data-dir", data_dir_, "--port-file", port_file,
                                     "--worker", GPUBENCH_WORKER_PATH,
                                     "--stop-grace-ms", "2000"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      freopen((data_dir_ + "/daemon.log").c_str(), "a", stderr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 300 && port_ == 0; ++i) {
      std::ifstream in(port_file);
      if (in >> port_) {
        in >> metrics_port_;  // a second line when --metrics-listen is given
      } else {
        port_ = 0;
        int status;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          exited_ = true;
          exit_status_ = status;
          return;
        }
        std::this_thread::sleep_for(milliseconds(50));
      }
    }
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::BenchService::NewStub(channel_);
  }
  ~Daemon() { Stop(SIGKILL); }

  // Sends sig and reaps the process; returns its exit status.
  int Stop(int sig) {
    if (exited_) return exit_status_;
    kill(pid_, sig);
    waitpid(pid_, &exit_status_, 0);
    exited_ = true;
    return exit_status_;
  }

  bool serving() const { return port_ != 0; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // The HTTP port of --metrics-listen (0 without one).
  int metrics_port() const { return metrics_port_; }
  const std::string& data_dir() const { return data_dir_; }
  v1::BenchService::Stub* stub() { return stub_.get(); }
  pid_t pid() const { return pid_; }
  std::string log() const {
    std::ifstream in(data_dir_ + "/daemon.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string data_dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  int metrics_port_ = 0;
  bool exited_ = false;
  int exit_status_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::BenchService::Stub> stub_;
};

// A job submitted to d; its id in *id. The call's status.
inline grpc::Status SubmitJobSpec(Daemon& d, const v1::JobSpec& spec, std::string* id = nullptr) {
  grpc::ClientContext ctx;
  v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  v1::SubmitJobResponse resp;
  grpc::Status s = d.stub()->SubmitJob(&ctx, req, &resp);
  if (id) *id = resp.job().job_id();
  return s;
}

inline v1::Job JobOf(Daemon& d, const std::string& id) {
  grpc::ClientContext ctx;
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::GetJobResponse resp;
  EXPECT_TRUE(d.stub()->GetJob(&ctx, req, &resp).ok());
  return resp.job();
}

// Polls the job until it is neither queued nor running (at most a minute).
inline v1::Job WaitForJobEnd(Daemon& d, const std::string& id) {
  for (int i = 0; i < 1200; ++i) {
    v1::Job job = JobOf(d, id);
    if (job.state() != v1::JOB_STATE_QUEUED && job.state() != v1::JOB_STATE_RUNNING) {
      return job;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "job " << id << " did not end";
  return JobOf(d, id);
}

// The job's stored runs, without samples.
inline std::vector<v1::Run> JobRuns(Daemon& d, const std::string& id) {
  grpc::ClientContext ctx;
  v1::ListRunsRequest req;
  req.set_job_id(id);
  v1::ListRunsResponse resp;
  EXPECT_TRUE(d.stub()->ListRuns(&ctx, req, &resp).ok());
  return {resp.runs().begin(), resp.runs().end()};
}

// The gpubench-worker children of a process.
inline std::vector<pid_t> WorkerChildren(pid_t parent) {
  std::vector<pid_t> pids;
  DIR* dir = opendir("/proc");
  while (dirent* e = readdir(dir)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::string(e->d_name) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    const std::string comm = stat.substr(stat.find('(') + 1, close - stat.find('(') - 1);
    int ppid = 0;
    char state;
    std::sscanf(stat.c_str() + close + 2, "%c %d", &state, &ppid);
    if (ppid == parent && comm.rfind("gpubench-work", 0) == 0) pids.push_back(pid);
  }
  closedir(dir);
  return pids;
}

}  // namespace gpubench::testing_support

#endif  // GPUBENCH_TESTS_SUPPORT_DAEMON_PROCESS_H_
