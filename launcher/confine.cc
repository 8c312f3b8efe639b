#include "launcher/confine.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/paths.h"

#ifdef __linux__
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

namespace gpubench::worker {
namespace {

#if defined(__linux__) && defined(SYS_landlock_create_ruleset)

// Landlock's uapi, spelled here: Debian's linux-libc-dev (6.1) lacks the
// rights and fields of later ABIs, and the running kernel decides which
// apply.
constexpr uint64_t kExecute = 1ULL << 0;
constexpr uint64_t kWriteFile = 1ULL << 1;
constexpr uint64_t kReadFile = 1ULL << 2;
constexpr uint64_t kReadDir = 1ULL << 3;
constexpr uint64_t kAbi1All = (1ULL << 13) - 1;  // execute .. make_sym
constexpr uint64_t kRefer = 1ULL << 13;           // ABI 2
constexpr uint64_t kTruncate = 1ULL << 14;        // ABI 3
constexpr uint64_t kNetBindTcp = 1ULL << 0;       // ABI 4
constexpr uint64_t kNetConnectTcp = 1ULL << 1;    // ABI 4
constexpr uint64_t kScopeAbstractUnix = 1ULL << 0;  // ABI 6
constexpr uint64_t kScopeSignal = 1ULL << 1;      // ABI 6
constexpr uint32_t kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;

struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;  // ABI 4
  uint64_t scoped = 0;              // ABI 6
};

struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

// The rights a file (not a folder) may carry in a rule.
constexpr uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate;

int QueryAbi() {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

uint64_t HandledFs(int abi) {
  uint64_t handled = kAbi1All;
  if (abi >= 2) handled |= kRefer;
  if (abi >= 3) handled |= kTruncate;
  return handled;
}

class RulesetBuilder {
 public:
  RulesetBuilder(int fd, uint64_t handled, std::vector<std::string> protected_paths)
      : fd_(fd), handled_(handled), protected_(std::move(protected_paths)) {}

  // A folder and everything below it, split around protected paths.
  void Tree(const std::string& path, uint64_t rights) {
    const std::string real = RealPath(path);
    if (real.empty()) return;
    struct stat st;
    if (stat(real.c_str(), &st) != 0) return;
    if (!S_ISDIR(st.st_mode)) {
      File(real, rights);
      return;
    }
    for (const std::string& p : protected_) {
      if (IsWithin(real, p)) return;  // never opened through a tree rule
    }
    SplitTree(real, rights, 0);
  }

  // One file (or a folder named explicitly), even below a protected path:
  // the scratch folder and the model the worker was given.
  void Exactly(const std::string& path, uint64_t rights) {
    const std::string real = RealPath(path);
    if (real.empty()) return;
    struct stat st;
    if (stat(real.c_str(), &st) != 0) return;
    Add(real, S_ISDIR(st.st_mode) ? rights : rights & kFileRights);
  }

  void File(const std::string& real, uint64_t rights) {
    for (const std::string& p : protected_) {
      if (IsWithin(real, p)) return;
    }
    Add(real, rights & kFileRights);
  }

  const absl::Status& status() const { return status_; }

 private:
  void SplitTree(const std::string& dir, uint64_t rights, int depth) {
    bool holds_protected = false;
    for (const std::string& p : protected_) {
      if (p != dir && IsWithin(p, dir)) holds_protected = true;
    }
    if (!holds_protected) {
      Add(dir, rights);
      return;
    }
    if (depth > 64) return;
    // The folder itself stays closed (it could not be listed without
    // showing the protected entry's name, which is harmless, but opening
    // it would grant its files); each entry off the protected path opens.
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return;
    std::vector<std::string> entries;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      entries.push_back(dir == "/" ? "/" + name : dir + "/" + name);
    }
    closedir(d);
    for (const std::string& entry : entries) {
      struct stat st;
      if (lstat(entry.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
      bool is_protected = false;
      for (const std::string& p : protected_) {
        if (IsWithin(entry, p)) is_protected = true;
      }
      if (is_protected) continue;
      if (S_ISDIR(st.st_mode)) {
        SplitTree(entry, rights, depth + 1);
      } else {
        Add(entry, rights & kFileRights);
      }
    }
  }

  void Add(const std::string& real, uint64_t rights) {
    rights &= handled_;
    if (rights == 0 || !added_.insert(real).second) return;
    // Not following a link swapped in since the path was resolved.
    const int fd = open(real.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    PathBeneathAttr attr = {rights, fd};
    if (syscall(SYS_landlock_add_rule, fd_, kRulePathBeneath, &attr, 0) != 0 && status_.ok()) {
      status_ = absl::FailedPreconditionError(
          absl::StrCat("landlock_add_rule ", real, ": ", std::strerror(errno)));
    }
    close(fd);
  }

  const int fd_;
  const uint64_t handled_;
  const std::vector<std::string> protected_;
  std::set<std::string> added_;
  absl::Status status_;
};

using Filter = std::vector<sock_filter>;

sock_filter Ret(uint32_t value) { return sock_filter BPF_STMT(BPF_RET | BPF_K, value); }

sock_filter LoadNr() {
  return sock_filter BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
}

// "Syscall nr fails with errno": if equal, fall through to the return.
void Refuse(Filter* filter, uint32_t nr, int error) {
  filter->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
  filter->push_back(Ret(SECCOMP_RET_ERRNO | static_cast<uint32_t>(error)));
}

// A UNIX socket reaches no one: connect answers ENOENT (what CUDA's start-up
// sees where no MPS control daemon runs), and nothing is sent to an address
// (sendto with one, sendmsg, sendmmsg). Landlock does not check a path
// socket's connect, and a root worker could otherwise talk to any socket
// root may write: its own daemon's, a container runtime's. socket() of any
// family but AF_UNIX fails (CUDA asks for the MPS control socket).
void AddSocketRules(Filter* filter) {
  Refuse(filter, __NR_connect, ENOENT);
  Refuse(filter, __NR_sendmsg, EACCES);
  Refuse(filter, __NR_sendmmsg, EACCES);
  // sendto(fd, buf, len, flags, dest_addr, addrlen): only without dest_addr.
  filter->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendto, 0, 6));
  filter->push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[4])));
  filter->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3));
  filter->push_back(
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[4]) + 4));
  filter->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1));
  filter->push_back(Ret(SECCOMP_RET_ALLOW));
  filter->push_back(Ret(SECCOMP_RET_ERRNO | EACCES));
  filter->push_back(LoadNr());
  // socket(family, ...)
  filter->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 4));
  filter->push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])));
  filter->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1));
  filter->push_back(Ret(SECCOMP_RET_ALLOW));
  filter->push_back(Ret(SECCOMP_RET_ERRNO | EACCES));
  filter->push_back(LoadNr());
}

// No new process: clone3, fork and vfork fail, and clone unless it makes a
// thread (CLONE_THREAD in the low word). Must come last: it leaves the
// argument loaded.
void AddProcessRules(Filter* filter) {
#ifdef __NR_clone3
  Refuse(filter, __NR_clone3, ENOSYS);  // its flags are in memory, out of a filter's reach
#else
  Refuse(filter, 435, ENOSYS);  // clone3, the same number on every architecture
#endif
#if defined(__x86_64__)
  Refuse(filter, __NR_fork, EPERM);
  Refuse(filter, __NR_vfork, EPERM);
#endif
  filter->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3));
  filter->push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])));
  filter->push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0));
  filter->push_back(Ret(SECCOMP_RET_ERRNO | EPERM));
}

// The seccomp filter for what policy forbids: execve and execveat, new
// processes, sockets. Every syscall of another ABI fails, which this
// process never makes: no way around the filter through the 32-bit entry
// points.
absl::Status InstallSeccomp(const ConfinementPolicy& policy) {
#if defined(__x86_64__)
  constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
  return absl::FailedPreconditionError("seccomp: no filter for this architecture");
#endif
  Filter filter = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      Ret(SECCOMP_RET_ERRNO | ENOSYS),
      LoadNr(),
  };
#if defined(__x86_64__)
  // x32's numbers have bit 30 set.
  filter.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
  filter.push_back(Ret(SECCOMP_RET_ERRNO | EPERM));
#endif
  if (policy.forbid_exec) {
    Refuse(&filter, __NR_execve, EPERM);
    Refuse(&filter, __NR_execveat, EPERM);
  }
  // io_uring runs its operations (a socket, a connect, an open) without the
  // system calls the rest of this filter sees: an outside probe made a TCP
  // connection through it past the socket rule. Nothing of the worker's
  // uses it.
  Refuse(&filter, __NR_io_uring_setup, ENOSYS);
  Refuse(&filter, __NR_io_uring_enter, ENOSYS);
  Refuse(&filter, __NR_io_uring_register, ENOSYS);
  if (policy.forbid_sockets) AddSocketRules(&filter);
  if (policy.forbid_processes) AddProcessRules(&filter);
  filter.push_back(Ret(SECCOMP_RET_ALLOW));
  struct sock_fprog program = {static_cast<unsigned short>(filter.size()), filter.data()};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("seccomp filter: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// A worker started as root keeps uid 0 but no capability: no reading
// /proc/kcore (CAP_SYS_RAWIO), no loading a module, no bypassing a file's
// mode (CAP_DAC_OVERRIDE), none to regain later (the bounding set).
absl::Status DropCapabilities() {
  for (int cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL && errno != EPERM) {
      return absl::FailedPreconditionError(
          absl::StrCat("dropping capability ", cap, ": ", std::strerror(errno)));
    }
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &header, data) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("dropping capabilities: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

int ThreadCount() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    int n = 0;
    if (absl::StartsWith(line, "Threads:") && absl::SimpleAtoi(line.substr(8), &n)) return n;
  }
  return 0;
}

#else  // no Landlock

int QueryAbi() { return 0; }

#endif

}  // namespace

int LandlockAbi() {
  static const int abi = QueryAbi();
  return abi;
}

std::string ConfinementSummary() {
  const int abi = LandlockAbi();
  if (abi <= 0) {
#ifdef __linux__
    return "none (the kernel offers no Landlock: Linux 5.13+ with landlock in lsm=)";
#else
    return "none (Landlock is Linux only)";
#endif
  }
  return absl::StrCat("landlock ABI ", abi,
                      ", no_new_privs, seccomp (no execve, no new process, no network "
                      "socket but a distributed rank's)");
}

ConfinementPolicy SystemPolicy() {
  ConfinementPolicy policy;
  policy.read_exec_trees = {"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"};
  policy.read_trees = {"/proc", "/sys"};
  // What the loader, the C library and the GPU stack read in /etc; never
  // all of it (shadow, keys).
  for (const char* f : {"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "passwd",
                        "group", "hosts", "host.conf", "resolv.conf", "gai.conf", "localtime",
                        "timezone", "os-release", "alternatives", "nvidia", "machine-id"}) {
    policy.read_trees.push_back(absl::StrCat("/etc/", f));
  }
  policy.device_files = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};
  if (DIR* d = opendir("/dev")) {
    while (dirent* e = readdir(d)) {
      if (absl::StartsWith(e->d_name, "nvidia")) {
        policy.device_files.push_back(absl::StrCat("/dev/", e->d_name));
      }
    }
    closedir(d);
  }
  // The folders of every library mapped now (the worker's own, LibTorch,
  // CUDA's), since their neighbours are opened later (cuDNN's engines,
  // NVRTC, CUPTI): a Python wheel's whole site-packages.
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::set<std::string> dirs;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string file = line.substr(slash);
    struct stat st;  // not "/memfd:x (deleted)", nor a device
    if (stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    for (const char* packages : {"/site-packages/", "/dist-packages/"}) {
      const size_t at = file.find(packages);
      if (at != std::string::npos) file = file.substr(0, at + std::strlen(packages) - 1) + "/x";
    }
    dirs.insert(file.substr(0, file.rfind('/')));
  }
  // Never a whole home folder or the root, which a library mapped from
  // there would otherwise open (the library itself stays readable).
  const char* home_env = std::getenv("HOME");
  const std::string home = home_env != nullptr ? RealPath(home_env) : "";
  for (const std::string& dir : dirs) {
    if (dir.empty() || dir == home) continue;
    policy.read_exec_trees.push_back(dir);
  }
  return policy;
}

absl::Status Confine(const ConfinementPolicy& policy) {
#if defined(__linux__) && defined(SYS_landlock_create_ruleset)
  const int abi = LandlockAbi();
  if (abi <= 0) return absl::FailedPreconditionError(ConfinementSummary());
  if (const int threads = ThreadCount(); threads != 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "confinement: the worker has ", threads, " threads; it must confine itself with one"));
  }
  RulesetAttr attr;
  attr.handled_access_fs = HandledFs(abi);
  size_t attr_size = sizeof(uint64_t);
  if (policy.forbid_sockets && abi >= 4) {
    // No TCP bind or connect at all (no rule grants a port), whatever
    // makes the socket: beneath the seccomp filter's socket rule.
    attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
    attr_size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    // Signals only to processes of this domain (its own children), and
    // without sockets no abstract UNIX socket of another domain either.
    attr.scoped = kScopeSignal | (policy.forbid_sockets ? kScopeAbstractUnix : 0);
    attr_size = sizeof(attr);
  }
  const int fd = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0));
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("landlock_create_ruleset: ", std::strerror(errno)));
  }
  std::vector<std::string> protected_paths;
  for (const std::string& p : policy.protected_paths) {
    std::string real = RealPath(p);
    protected_paths.push_back(real.empty() ? p : real);
  }
  RulesetBuilder rules(fd, attr.handled_access_fs, protected_paths);
  const uint64_t read = kReadFile | kReadDir;
  for (const std::string& p : policy.read_exec_trees) rules.Tree(p, read | kExecute);
  for (const std::string& p : policy.read_trees) rules.Tree(p, read);
  for (const std::string& p : policy.read_files) rules.Exactly(p, read);
  for (const std::string& p : policy.device_files) rules.Exactly(p, kReadFile | kWriteFile);
  for (const std::string& p : policy.write_trees) {
    rules.Exactly(p, attr.handled_access_fs & ~kExecute);
  }
  absl::Status status = rules.status();
  if (status.ok()) status = DropCapabilities();
  if (status.ok() && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    status = absl::FailedPreconditionError(absl::StrCat("no_new_privs: ", std::strerror(errno)));
  }
  if (status.ok() && syscall(SYS_landlock_restrict_self, fd, 0) != 0) {
    status = absl::FailedPreconditionError(
        absl::StrCat("landlock_restrict_self: ", std::strerror(errno)));
  }
  close(fd);
  if (status.ok()) status = InstallSeccomp(policy);
  return status;
#else
  (void)policy;
  return absl::FailedPreconditionError(ConfinementSummary());
#endif
}

}  // namespace gpubench::worker
