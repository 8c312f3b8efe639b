// Confines a worker process, as browsers confine renderers: a user model is
// code (TorchScript has file operators; an AOTInductor package is a shared
// library), so the worker that runs it may read only what it needs and write
// only its private scratch folder. Linux Landlock for the file system,
// no_new_privs, and a seccomp filter that refuses execve, new processes and
// (but for distributed ranks) network sockets. Torch-free and proto-free;
// thread-compatible.
#ifndef GPUBENCH_LAUNCHER_CONFINE_H_
#define GPUBENCH_LAUNCHER_CONFINE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gpubench::worker {

// What a confined process may reach. Paths need not be canonical; those that
// do not exist are skipped.
struct ConfinementPolicy {
  std::vector<std::string> read_exec_trees;  // folders: read, list, execute
  std::vector<std::string> read_trees;       // folders: read and list
  std::vector<std::string> read_files;       // exactly these files or folders, read only
  std::vector<std::string> device_files;     // device nodes, read and write
  std::vector<std::string> write_trees;      // folders: everything but execute
  // Never reachable through a tree above them: a tree rule whose folder
  // holds one is split into its other entries, down to the protected path.
  // A rule named for a path at or below one (the scratch folder, the model
  // it was given) still applies to that path alone.
  std::vector<std::string> protected_paths;
  bool forbid_exec = true;  // seccomp: execve and execveat fail with EPERM
  // seccomp: no new process (fork, vfork, clone without CLONE_THREAD fail
  // with EPERM; clone3 with ENOSYS, so the C library makes threads with
  // clone). Threads still start; no child can outlive the worker.
  bool forbid_processes = true;
  // seccomp: socket() of any family but AF_UNIX fails with EACCES: no
  // network (TCP, UDP, raw, netlink). CUDA makes an AF_UNIX socket (for the
  // MPS control socket), but its connect fails with ENOENT and nothing is
  // sent to an address: no UNIX socket of the host either. Landlock adds
  // its TCP and abstract-socket rules. Distributed ranks keep their sockets
  // (rendezvous, NCCL, Gloo).
  bool forbid_sockets = true;
};

// The Landlock ABI this kernel offers; 0 where it has none (an old kernel,
// Landlock not enabled at boot, or not Linux).
int LandlockAbi();

// One line for `gpubench hosts`: "landlock ABI 7, ..., seccomp" where workers can
// be confined, else "none (why)".
std::string ConfinementSummary();

// What every worker needs of the system: the system's libraries and
// programs, the folders of the libraries this process has mapped (their
// whole site-packages for a Python wheel's), a few files of /etc (the loader's
// cache, users, hosts, time zone), /proc and /sys read only, /dev/null and
// the like, and the GPU device nodes (/dev/nvidia*).
ConfinementPolicy SystemPolicy();

// Applies policy to the calling process and every child it starts: the
// Landlock ruleset, no_new_privs, and the seccomp filter (what forbid_*
// names; none when all are false).
// Must be called while the process has one thread, since both apply to the
// calling thread and its later children only. FailedPrecondition saying what
// failed; the process is then unconfined or partly confined, and must not
// go on to run a user model.
absl::Status Confine(const ConfinementPolicy& policy);

}  // namespace gpubench::worker

#endif  // GPUBENCH_LAUNCHER_CONFINE_H_
