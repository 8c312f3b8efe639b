#include "bench/bench_process.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpubench::bench {

using std::chrono::milliseconds;

std::string BesideSelf(const std::string& name) {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return name;
  std::string dir(self, n);
  return dir.substr(0, dir.rfind('/') + 1) + name;
}

bool DaemonChild::Start(const std::string& daemon, const std::string& worker,
                        const std::string& data_dir) {
  log_path_ = data_dir + "/daemon.log";
  const std::string port_file = data_dir + "/port";
  std::vector<std::string> args = {daemon,       "--listen", "127.0.0.1:0",
                                   "--data-dir", data_dir,   "--port-file",
                                   port_file,    "--worker", worker};
  pid_ = fork();
  if (pid_ < 0) return false;
  if (pid_ == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (!freopen(log_path_.c_str(), "a", stderr)) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  for (int i = 0; i < 1200; ++i) {
    std::ifstream in(port_file);
    if (in >> port_ && port_ > 0) return true;
    if (!Alive()) return false;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

bool DaemonChild::Alive() {
  if (exited_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
  return !exited_;
}

std::string DaemonChild::Stop() {
  if (!exited_ && pid_ > 0) {
    kill(pid_, SIGTERM);
    for (int i = 0; i < 600 && Alive(); ++i) std::this_thread::sleep_for(milliseconds(100));
    if (!exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
      exited_ = true;
      return absl::StrCat("killed after 60 s without exiting (signal ", SIGKILL, ")");
    }
  }
  return Describe();
}

std::string DaemonChild::Describe() const {
  if (!exited_) return "running";
  if (WIFEXITED(status_)) return absl::StrCat("exit ", WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return absl::StrCat("signal ", WTERMSIG(status_));
  return "ended";
}

bool DaemonChild::clean_exit() const {
  return exited_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
}

// "VmRSS 41.2 MiB, VmHWM (peak) 45.0 MiB, 37 threads" from /proc/<pid>/status.
std::string MemoryOf(pid_t pid) {
  if (pid <= 0) return "unknown (--address given)";
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line, rss = "?", hwm = "?", threads = "?";
  auto value = [](const std::string& l) {
    const size_t start = l.find_first_not_of(" \t", l.find(':') + 1);
    return start == std::string::npos ? std::string() : l.substr(start);
  };
  auto mib = [](const std::string& kb) {
    return absl::StrFormat("%.1f MiB", std::atof(kb.c_str()) / 1024.0);
  };
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) rss = mib(value(line));
    if (line.rfind("VmHWM:", 0) == 0) hwm = mib(value(line));
    if (line.rfind("Threads:", 0) == 0) threads = value(line);
  }
  return absl::StrCat("VmRSS ", rss, ", VmHWM (peak) ", hwm, ", ", threads, " threads");
}

// CPU seconds (user + system) the process has used, from /proc/<pid>/stat;
// -1 when unknown. Its workers are other processes and are not counted.
double CpuSecondsOf(pid_t pid) {
  if (pid <= 0) return -1;
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  std::getline(in, stat);
  // Fields after the command name (which may hold spaces) start at ") ".
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::atof(field.c_str());  // utime, stime
  }
  return ticks / sysconf(_SC_CLK_TCK);
}

double OwnCpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto s = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return s(usage.ru_utime) + s(usage.ru_stime);
}

// The first line of /proc/loadavg: the machine may be shared, and the
// figures mean little without it.
std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace gpubench::bench
