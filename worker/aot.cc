#include "worker/aot.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <utility>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/environment.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "launcher/ipc.h"
#include "worker/run_as.h"

#ifndef GPUBENCH_PYTHON_SOURCE_DIR
#define GPUBENCH_PYTHON_SOURCE_DIR ""
#endif

namespace gpubench::worker {
namespace {

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Changes to the twin (its layers or how it compiles) make new packages.
std::string TwinDigest(const std::string& dir) {
  Sha256 sha;
  for (const char* file : {"gpubench_models/models.py", "gpubench_models/aot.py",
                           "gpubench_models/lm.py", "gpubench_models/lm_aot.py"}) {
    sha.Update(ReadFile(dir + "/" + file));
  }
  return sha.HexDigest();
}

std::string CacheKey(const std::vector<std::string>& model_args, const std::string& target,
                     const std::string& twin_digest) {
  Sha256 sha;
  sha.Update(absl::StrJoin(model_args, "\x1f"));
  sha.Update("\x1e" + target + "\x1e" + twin_digest);
  return sha.HexDigest();
}

}  // namespace

std::vector<std::string> AotModelArgs(const engine::RunConfig& c) {
  // A serving run's package: its cache holds the longest prompt and output.
  const auto [input, output] =
      c.mode == engine::Mode::kServe ? engine::LongestServed(c) : std::pair<int64_t, int64_t>();
  return {"--workload", c.workload,
          "--model-size", c.model_size,
          "--image-size", absl::StrCat(c.image_size),
          "--num-classes", absl::StrCat(c.num_classes),
          "--sequence-length", absl::StrCat(c.sequence_length),
          "--num-layers", absl::StrCat(c.num_layers),
          "--hidden-size", absl::StrCat(c.hidden_size),
          "--num-heads", absl::StrCat(c.num_heads),
          "--decoder", c.decoder ? "1" : "0",
          "--vocab-size", absl::StrCat(c.vocab_size),
          "--batch", absl::StrCat(c.batch_size),
          "--precision", PrecisionName(c.precision),
          "--channels-last", c.channels_last ? "1" : "0",
          "--num-kv-heads", absl::StrCat(c.num_kv_heads),
          "--ffn-size", absl::StrCat(c.ffn_hidden_size),
          "--prompt-length", absl::StrCat(c.prompt_length),
          "--new-tokens", absl::StrCat(c.new_tokens),
          "--attention", engine::AttentionName(c.attention),
          "--serve-input-len", absl::StrCat(input),
          "--serve-output-len", absl::StrCat(output)};
}

namespace {

// Why a compile failed: the compiler's own reason (its line that starts
// "gpubench_models.aot: "), else its last line and the two before it.
std::string Tail(const std::string& output) {
  std::vector<std::string> lines = absl::StrSplit(output, '\n', absl::SkipWhitespace());
  constexpr absl::string_view kReason = "gpubench_models.aot: ";
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (absl::StartsWith(*it, kReason)) return it->substr(kReason.size(), 1500);
  }
  // Python's own warnings say nothing about why it failed.
  lines.erase(std::remove_if(lines.begin(), lines.end(),
                             [](const std::string& l) {
                               return absl::StrContains(l, "Warning") ||
                                      absl::StrContains(l, "warnings.warn");
                             }),
              lines.end());
  // The last line (a Python exception's message) first, then the two
  // before it (where it was raised).
  const size_t keep = std::min<size_t>(lines.size(), 3);
  std::string tail = keep == 0 ? "" : lines.back();
  if (keep > 1) {
    absl::StrAppend(&tail, " (", absl::StrJoin(lines.end() - keep, lines.end() - 1, " | "), ")");
  }
  if (tail.size() > 1500) tail = "..." + tail.substr(tail.size() - 1500);
  return tail;
}

struct Child {
  int exit_code = -1;  // -1: killed
  std::string output;  // stdout and stderr
};

// This process's environment with PYTHONPATH=python_dir first, and every
// cache and temporary file in the compile's work folder, which goes when the
// compile ends: nothing piles up in /tmp, and a confined compiler may write
// nowhere else.
std::vector<std::string> CompileEnvironment(const std::string& python_dir,
                                            const std::string& work_dir, bool confined) {
  const char* old = std::getenv("PYTHONPATH");
  std::map<std::string, std::string> set = {
      {"PYTHONPATH", old && *old ? python_dir + ":" + old : python_dir},
      {"TORCHINDUCTOR_CACHE_DIR", work_dir + "/inductor"},
      {"TRITON_CACHE_DIR", work_dir + "/triton"},
      {"TRITON_HOME", work_dir},
      {"TMPDIR", work_dir},
      {"XDG_CACHE_HOME", work_dir + "/cache"},
      {"CUDA_CACHE_PATH", work_dir + "/cuda"},
      // `python -m` puts the current folder first on sys.path: the child
      // starts in its empty work folder, and Python 3.11+ leaves it out.
      {"PYTHONSAFEPATH", "1"}};
  // Inductor's pool of compile processes would each have a /proc/PID the
  // compiler's domain does not open: one process compiles.
  if (confined) set["TORCHINDUCTOR_COMPILE_THREADS"] = "1";
  return EnvironmentWith(set);
}

// In the forked child: its output into the pipe, in work_dir, confined
// where asked (its work folder and its own /proc/PID writable: CUDA names
// its threads there), then argv. Never returns.
[[noreturn]] void ExecChild(char* const* argv, char* const* envp, int out_fd,
                            const std::string& work_dir, const ConfinementPolicy* policy) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int devnull = open("/dev/null", O_RDONLY);
  dup2(devnull, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  closefrom(3);
  if (chdir(work_dir.c_str()) != 0) _exit(127);
  if (policy != nullptr) {
    ConfinementPolicy mine = *policy;
    mine.write_trees.push_back(work_dir);
    mine.write_trees.push_back("/proc/self");  // resolves to this child's PID
    mine.forbid_exec = false;                  // Python, then its C++ compiler and ptxas
    mine.forbid_processes = false;
    if (absl::Status s = Confine(mine); !s.ok()) {
      const std::string line =
          absl::StrCat("gpubench_models.aot: cannot confine the compiler: ", s.message(), "\n");
      (void)!write(STDOUT_FILENO, line.data(), line.size());
      _exit(126);
    }
  }
  execvpe(argv[0], argv, envp);
  _exit(127);
}

// Runs argv with PYTHONPATH=python_dir in work_dir, collecting its output;
// kills it when cancelled() turns true. The child dies with this process.
// With a policy, the child confines itself before its exec. Called in the
// compile server, which has one thread: the child may allocate.
absl::StatusOr<Child> Run(const std::vector<std::string>& argv, const std::string& python_dir,
                          const std::string& work_dir, const std::function<bool()>& cancelled,
                          const ConfinementPolicy* policy) {
  std::vector<std::string> env = CompileEnvironment(python_dir, work_dir, policy != nullptr);
  const std::vector<char*> envp = EnvironmentPointers(env);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) ExecChild(args.data(), envp.data(), out[1], work_dir, policy);
  close(out[1]);
  Child child;
  char buffer[4096];
  bool killed = false;
  while (true) {
    pollfd p = {out[0], POLLIN, 0};
    const int ready = poll(&p, 1, 200);
    if (!killed && cancelled()) {
      kill(pid, SIGKILL);
      killed = true;
    }
    if (ready <= 0) continue;
    const ssize_t n = read(out[0], buffer, sizeof(buffer));
    if (n <= 0) break;
    if (child.output.size() < (1 << 20)) child.output.append(buffer, n);
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (killed) return absl::CancelledError("cancelled while compiling");
  child.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return child;
}

// Leftovers of compiles that were killed (a temporary package, a work
// folder) older than any job may run: never one still in use.
void RemoveLeftovers(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> old;
  const time_t cutoff = time(nullptr) - 48 * 3600;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (!absl::StartsWith(name, ".compile-") && !absl::StartsWith(name, ".work-")) continue;
    struct stat st;
    const std::string path = dir + "/" + name;
    if (lstat(path.c_str(), &st) == 0 && st.st_mtime < cutoff) old.push_back(path);
  }
  closedir(d);
  for (const std::string& path : old) RemoveTree(path);
}

// Removes the least recently used packages until the cache holds at most
// max_bytes, never `keep`.
void Evict(const std::string& dir, int64_t max_bytes, const std::string& keep) {
  if (max_bytes <= 0) return;
  struct Entry {
    std::string path;
    int64_t bytes;
    int64_t mtime_ns;
  };
  std::vector<Entry> entries;
  int64_t total = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (!absl::EndsWith(name, ".pt2") || absl::StartsWith(name, ".")) continue;
      struct stat st;
      const std::string path = dir + "/" + name;
      if (stat(path.c_str(), &st) != 0) continue;
      entries.push_back({path, st.st_size,
                         int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec});
      total += st.st_size;
    }
    closedir(d);
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.mtime_ns < b.mtime_ns; });
  for (const Entry& e : entries) {
    if (total <= max_bytes) break;
    if (e.path == keep) continue;
    if (std::remove(e.path.c_str()) == 0) total -= e.bytes;
  }
}

}  // namespace

std::string AotCacheKey(const engine::RunConfig& c, const std::string& target,
                        const std::string& twin_digest) {
  return CacheKey(AotModelArgs(c), target, twin_digest);
}

std::string PythonDir() {
  if (const char* env = std::getenv("GPUBENCH_PYTHON_DIR"); env && *env) return env;
  // bin/gpubench-worker -> share/gpubench/python (deploy/install.sh).
  std::string installed = InstalledBinary("", "GPUBENCH_NO_SUCH_VARIABLE");
  installed += "../share/gpubench/python";
  if (IsDir(installed + "/gpubench_models")) return installed;
  return GPUBENCH_PYTHON_SOURCE_DIR;
}

namespace {

// The package a request names, from the cache or compiled now. In the
// compile server.
absl::StatusOr<AotPackage> CompileOrFind(const v1::AotCompileRequest& request,
                                         const v1::AotSettings& settings,
                                         const std::function<bool()>& cancelled,
                                         const ConfinementPolicy* policy) {
  // Absolute, so that nothing depends on the folder the worker started in.
  const std::string python_dir = RealPath(PythonDir());
  if (python_dir.empty() || !IsDir(python_dir + "/gpubench_models")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "execution aot: the gpubench_models Python package is not installed (looked in \"",
        PythonDir(), "\"; deploy/install.sh puts it in share/gpubench/python)"));
  }
  AotPackage package;
  const std::string key = CacheKey({request.model_args().begin(), request.model_args().end()},
                                   request.target(), TwinDigest(python_dir));
  std::string dir = settings.cache_dir();
  if (dir.empty()) {
    std::string tmpl = TempDir() + "/gpubench-aot-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      return absl::InternalError("cannot make a temporary folder");
    }
    dir = tmpl;
    package.temporary = true;
  } else if (auto s = MakeDirs(dir); !s.ok()) {
    return s;
  }
  package.path = absl::StrCat(dir, "/", key, ".pt2");
  if (!package.temporary && access(package.path.c_str(), R_OK) == 0) {
    utimensat(AT_FDCWD, package.path.c_str(), nullptr, 0);  // recently used
    package.cached = true;
    return package;
  }
  const std::string python = settings.python().empty() ? "python3" : settings.python();
  RemoveLeftovers(dir);
  std::string work = dir + "/.work-XXXXXX";
  if (mkdtemp(work.data()) == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("execution aot: cannot write in ", dir));
  }
  // The compiler writes in its work folder only; the package moves into
  // the cache from there.
  const std::string compiled = work + "/package.pt2";
  std::vector<std::string> argv = {python, "-m", "gpubench_models.aot"};
  argv.insert(argv.end(), request.model_args().begin(), request.model_args().end());
  argv.insert(argv.end(),
              {"--device", absl::StartsWith(request.target(), "cuda") ? "cuda" : "cpu",
               "--out", compiled});
  ConfinementPolicy confined;
  if (policy != nullptr) {
    confined = *policy;
    confined.read_trees.push_back(python_dir);
  }
  const auto start = std::chrono::steady_clock::now();
  auto child = Run(argv, python_dir, work, cancelled, policy != nullptr ? &confined : nullptr);
  const bool made = child.ok() && child->exit_code == 0 && access(compiled.c_str(), R_OK) == 0 &&
                    std::rename(compiled.c_str(), package.path.c_str()) == 0;
  RemoveTree(work);
  if (!child.ok()) return child.status();
  package.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
          .count();
  if (child->exit_code == 127) {
    return absl::FailedPreconditionError(absl::StrCat(
        "execution aot: cannot run ", python, ": install Python 3 with the PyTorch wheel "
        "whose LibTorch gpubench-worker links (pip install torch==2.11.0), or point "
        "gpubenchd --python at it"));
  }
  if (child->exit_code == 3 || child->exit_code == 126) {
    // aot.py: no torch, or one without AOTInductor; or no confinement.
    return absl::FailedPreconditionError(
        absl::StrCat("execution aot: ", python, ": ", Tail(child->output)));
  }
  if (!made) {
    return absl::FailedPreconditionError(absl::StrCat(
        "execution aot: compiling ", request.workload(), " failed (",
        child->exit_code < 0 ? std::string("killed") : absl::StrCat("exit ", child->exit_code),
        "): ", Tail(child->output)));
  }
  if (!package.temporary) Evict(dir, settings.cache_bytes(), package.path);
  return package;
}

// The compile server's life: a request, a reply, until the worker closes
// its end. A byte on cancel_fd stops the compile in progress and every
// later one.
// The package at *path as a copy for hand_to, in a new folder under dir.
absl::Status HandOver(const v1::RunAs& hand_to, const std::string& dir, AotPackage* package) {
  std::string folder = dir + "/aot-XXXXXX";
  if (mkdtemp(folder.data()) == nullptr || chown(folder.c_str(), hand_to.uid(), hand_to.gid())) {
    return absl::FailedPreconditionError(
        absl::StrCat("execution aot: cannot hand the package over in ", dir));
  }
  const std::string copy = folder + "/package.pt2";
  if (auto s = CopyForUser(package->path, copy, hand_to); !s.ok()) return s;
  if (package->temporary) std::remove(package->path.c_str());
  package->path = copy;
  package->temporary = true;  // the worker removes the copy and its folder
  return absl::OkStatus();
}

[[noreturn]] void Serve(int requests_fd, int cancel_fd, const v1::AotSettings& settings,
                        const std::optional<ConfinementPolicy>& policy,
                        const std::optional<v1::RunAs>& hand_to, const std::string& hand_to_dir) {
  ipc::MessageReader reader(requests_fd);
  ipc::MessageWriter writer(requests_fd);
  bool cancelled = false;
  auto check = [&] {
    pollfd p = {cancel_fd, POLLIN, 0};
    if (!cancelled && poll(&p, 1, 0) > 0) cancelled = true;  // a byte, or the worker gone
    return cancelled;
  };
  v1::AotCompileRequest request;
  while (true) {
    auto got = reader.Read(&request);
    if (!got.ok() || !*got) _exit(0);
    auto package = check() ? absl::CancelledError("cancelled while compiling")
                           : CompileOrFind(request, settings, check,
                                           policy ? &*policy : nullptr);
    if (package.ok() && hand_to) {
      if (auto s = HandOver(*hand_to, hand_to_dir, &*package); !s.ok()) package = s;
    }
    v1::AotCompileReply reply;
    if (package.ok()) {
      reply.set_path(package->path);
      reply.set_compile_ms(package->compile_ms);
      reply.set_cached(package->cached);
      reply.set_temporary(package->temporary);
    } else {
      reply.set_error_code(static_cast<int>(package.status().code()));
      reply.set_error(std::string(package.status().message()));
    }
    if (!writer.Write(reply).ok()) _exit(0);
  }
}

}  // namespace

namespace {

// program as execvp finds it: itself when it names a path, else the first
// executable of that name on PATH; empty when there is none.
std::string OnPath(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':')) {
    const std::string candidate = absl::StrCat(dir, "/", program);
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace

std::vector<std::string> CompilerTrees(const v1::AotSettings& settings) {
  std::vector<std::string> programs = {settings.python().empty() ? "python3" : settings.python(),
                                       "g++", "c++", "gcc", "cc", "clang++"};
  for (const char* variable : {"CXX", "CC"}) {
    if (const char* value = std::getenv(variable); value != nullptr && *value) {
      programs.push_back(value);
    }
  }
  const char* home_env = std::getenv("HOME");
  const std::string home = home_env != nullptr ? RealPath(home_env) : "";
  std::vector<std::string> trees;
  for (const std::string& program : programs) {
    const std::string named = OnPath(program);
    // bin/python3 -> bin, then the prefix above it (lib/python3.x,
    // libexec/gcc). Both as named (a virtual environment: its pyvenv.cfg)
    // and as resolved (the interpreter it links to).
    for (const std::string& binary : {named, RealPath(named)}) {
      if (binary.empty() || binary[0] != '/') continue;
      std::string dir = binary.substr(0, binary.rfind('/'));
      for (int up = 0; up < 2 && !dir.empty() && dir != home; ++up) {
        trees.push_back(dir);
        dir = dir.substr(0, dir.rfind('/'));
      }
    }
  }
  // The CUDA toolkit's headers and nvcc, for a CUDA package's wrapper.
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* value = std::getenv(variable); value != nullptr && *value && value != home) {
      trees.push_back(value);
    }
  }
  return trees;
}

absl::StatusOr<std::unique_ptr<AotCompiler>> AotCompiler::Start(
    const v1::AotSettings& settings, std::optional<ConfinementPolicy> compiler_policy,
    std::optional<v1::RunAs> hand_to, const std::string& hand_to_dir) {
  // Made now, so that the worker's domain (which opens it read only) finds
  // it.
  if (!settings.cache_dir().empty()) {
    if (auto s = MakeDirs(settings.cache_dir()); !s.ok()) return s;
  }
  int sockets[2], cancel[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
    return absl::InternalError("execution aot: socketpair failed");
  }
  if (pipe2(cancel, O_CLOEXEC) != 0) {
    close(sockets[0]);
    close(sockets[1]);
    return absl::InternalError("execution aot: pipe failed");
  }
  if (compiler_policy) {
    for (std::string& tree : CompilerTrees(settings)) {
      compiler_policy->read_exec_trees.push_back(std::move(tree));
    }
  }
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("execution aot: fork failed");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // Only its two ends: not the worker's pipes to the daemon.
    const int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    dup2(sockets[1], 3);
    dup2(cancel[0], 4);
    closefrom(5);
    Serve(3, 4, settings, compiler_policy, hand_to, hand_to_dir);
  }
  close(sockets[1]);
  close(cancel[0]);
  return std::unique_ptr<AotCompiler>(new AotCompiler(pid, sockets[0], cancel[1]));
}

AotCompiler::AotCompiler(pid_t pid, int requests_fd, int cancel_fd)
    : pid_(pid), requests_fd_(requests_fd), cancel_fd_(cancel_fd) {}

AotCompiler::~AotCompiler() {
  close(requests_fd_);
  close(cancel_fd_);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

absl::StatusOr<AotPackage> AotCompiler::Ensure(const engine::RunConfig& config,
                                               const std::string& target,
                                               const std::atomic<bool>* cancel) {
  v1::AotCompileRequest request;
  for (std::string& a : AotModelArgs(config)) request.add_model_args(std::move(a));
  request.set_workload(config.workload);
  request.set_target(target);
  if (auto s = ipc::MessageWriter(requests_fd_).Write(request); !s.ok()) {
    return absl::InternalError(absl::StrCat("execution aot: the compile server is gone: ",
                                            s.message()));
  }
  // The reply, while watching for a cancel (passed on to the server, which
  // kills its compiler and answers Cancelled).
  while (true) {
    if (!cancelled_ && cancel != nullptr && cancel->load()) {
      cancelled_ = true;
      (void)!write(cancel_fd_, "x", 1);
    }
    pollfd p = {requests_fd_, POLLIN, 0};
    if (poll(&p, 1, 200) > 0) break;
  }
  v1::AotCompileReply reply;
  auto got = ipc::MessageReader(requests_fd_).Read(&reply);
  if (!got.ok() || !*got) {
    return absl::InternalError("execution aot: the compile server ended without a reply");
  }
  if (reply.error_code() != 0) {
    return absl::Status(static_cast<absl::StatusCode>(reply.error_code()), reply.error());
  }
  AotPackage package;
  package.path = reply.path();
  package.compile_ms = reply.compile_ms();
  package.cached = reply.cached();
  package.temporary = reply.temporary();
  return package;
}

}  // namespace gpubench::worker
