#include "worker/aot.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/paths.h"
#include "common/sha256.h"

#ifndef GPUBENCH_PYTHON_SOURCE_DIR
#define GPUBENCH_PYTHON_SOURCE_DIR ""
#endif

namespace gpubench::worker {
namespace {

const char* PrecisionName(engine::Precision p) {
  switch (p) {
    case engine::Precision::kTf32: return "tf32";
    case engine::Precision::kFp16: return "fp16";
    case engine::Precision::kBf16: return "bf16";
    default: return "fp32";
  }
}

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
  for (const char* file : {"gpubench_models/models.py", "gpubench_models/aot.py"}) {
    sha.Update(ReadFile(dir + "/" + file));
  }
  return sha.HexDigest();
}

}  // namespace

std::vector<std::string> AotModelArgs(const engine::RunConfig& c) {
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
          "--channels-last", c.channels_last ? "1" : "0"};
}

namespace {

// Why a compile failed: the compiler's own reason (its line that starts
// "gpubench_models.aot: "), else the last lines of its output.
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
  const size_t keep = std::min<size_t>(lines.size(), 3);
  std::string tail = absl::StrJoin(lines.end() - keep, lines.end(), " | ");
  if (tail.size() > 1500) tail = "..." + tail.substr(tail.size() - 1500);
  return tail;
}

struct Child {
  int exit_code = -1;  // -1: killed
  std::string output;  // stdout and stderr
};

// Runs argv with PYTHONPATH=python_dir, collecting its output; kills it when
// *cancel turns true. The child dies with this thread.
absl::StatusOr<Child> Run(const std::vector<std::string>& argv, const std::string& python_dir,
                          const std::string& work_dir, const std::atomic<bool>* cancel) {
  // Everything the child needs is built here: between fork and exec it only
  // calls async-signal-safe functions (the worker may have other threads,
  // and one could hold malloc's lock at the fork).
  const char* old = std::getenv("PYTHONPATH");
  const std::map<std::string, std::string> set = {
      {"PYTHONPATH", old && *old ? python_dir + ":" + old : python_dir},
      // Inductor's and Triton's own caches in the compile's work folder,
      // which goes when the compile ends: nothing piles up in /tmp.
      {"TORCHINDUCTOR_CACHE_DIR", work_dir + "/inductor"},
      {"TRITON_CACHE_DIR", work_dir + "/triton"},
      // `python -m` puts the current folder first on sys.path: the child
      // starts in its empty work folder, and Python 3.11+ leaves it out.
      {"PYTHONSAFEPATH", "1"}};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (set.count(entry.substr(0, entry.find('='))) == 0) env.push_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    closefrom(3);
    if (chdir(work_dir.c_str()) != 0) _exit(127);
    execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out[1]);
  Child child;
  char buffer[4096];
  bool killed = false;
  while (true) {
    pollfd p = {out[0], POLLIN, 0};
    const int ready = poll(&p, 1, 200);
    if (cancel != nullptr && cancel->load() && !killed) {
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
  Sha256 sha;
  sha.Update(absl::StrJoin(AotModelArgs(c), "\x1f"));
  sha.Update("\x1e" + target + "\x1e" + twin_digest);
  return sha.HexDigest();
}

std::string PythonDir() {
  if (const char* env = std::getenv("GPUBENCH_PYTHON_DIR"); env && *env) return env;
  // bin/gpubench-worker -> share/gpubench/python (deploy/install.sh).
  std::string installed = InstalledBinary("", "GPUBENCH_NO_SUCH_VARIABLE");
  installed += "../share/gpubench/python";
  if (IsDir(installed + "/gpubench_models")) return installed;
  return GPUBENCH_PYTHON_SOURCE_DIR;
}

absl::StatusOr<AotPackage> EnsureAotPackage(const engine::RunConfig& config,
                                            const std::string& target,
                                            const v1::AotSettings& settings,
                                            const std::atomic<bool>* cancel) {
  // Absolute, so that nothing depends on the folder the worker started in.
  const std::string python_dir = RealPath(PythonDir());
  if (python_dir.empty() || !IsDir(python_dir + "/gpubench_models")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "execution aot: the gpubench_models Python package is not installed (looked in \"",
        PythonDir(), "\"; deploy/install.sh puts it in share/gpubench/python)"));
  }
  AotPackage package;
  const std::string key = AotCacheKey(config, target, TwinDigest(python_dir));
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
  std::vector<std::string> argv = {python, "-m", "gpubench_models.aot"};
  for (std::string& a : AotModelArgs(config)) argv.push_back(std::move(a));
  argv.insert(argv.end(), {"--device", absl::StartsWith(target, "cuda") ? "cuda" : "cpu",
                           "--out", package.path});
  RemoveLeftovers(dir);
  std::string work = dir + "/.work-XXXXXX";
  if (mkdtemp(work.data()) == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("execution aot: cannot write in ", dir));
  }
  const auto start = std::chrono::steady_clock::now();
  auto child = Run(argv, python_dir, work, cancel);
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
  if (child->exit_code == 3) {  // aot.py: no torch, or one without AOTInductor
    return absl::FailedPreconditionError(
        absl::StrCat("execution aot: ", python, ": ", Tail(child->output)));
  }
  if (child->exit_code != 0 || access(package.path.c_str(), R_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "execution aot: compiling ", config.workload, " failed (",
        child->exit_code < 0 ? std::string("killed") : absl::StrCat("exit ", child->exit_code),
        "): ", Tail(child->output)));
  }
  if (!package.temporary) Evict(dir, settings.cache_bytes(), package.path);
  return package;
}

}  // namespace gpubench::worker
