// Where LibTorch's AOTInductor loader extracts a package in a confined
// worker. The loader (torch 2.x, AOTIModelPackageLoader) extracts each .pt2
// into mkdtemp("/tmp/XXXXXX"), and a confined worker may write only its
// scratch folder. This mkdtemp, linked into gpubench-worker and exported
// (CMakeLists.txt), is the one the loader's call binds to: while the current
// folder is the worker's TMPDIR (ServeOnce moves a confined worker into its
// scratch folder), it makes "aoti-XXXXXX" there instead. Same length, so it
// fits the loader's buffer; a relative path, which the loader only joins,
// opens and dlopens from this same folder, and the launcher removes with the
// scratch folder.
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>

namespace {

bool InTmpdir() {
  const char* tmpdir = std::getenv("TMPDIR");
  char cwd[PATH_MAX], real[PATH_MAX];
  return tmpdir != nullptr && *tmpdir != '\0' && getcwd(cwd, sizeof(cwd)) != nullptr &&
         realpath(tmpdir, real) != nullptr && std::strcmp(cwd, real) == 0 &&
         std::strcmp(real, "/tmp") != 0;
}

}  // namespace

extern "C" char* mkdtemp(char* name) {
  using Mkdtemp = char* (*)(char*);
  static const Mkdtemp libc = reinterpret_cast<Mkdtemp>(dlsym(RTLD_NEXT, "mkdtemp"));
  static_assert(sizeof("/tmp/XXXXXX") == sizeof("aoti-XXXXXX"));
  if (std::strcmp(name, "/tmp/XXXXXX") == 0 && InTmpdir()) {
    std::memcpy(name, "aoti-XXXXXX", sizeof("aoti-XXXXXX"));
  }
  return libc(name);
}
