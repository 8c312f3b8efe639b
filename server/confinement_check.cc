#include "server/confinement_check.h"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gpubench/v1/worker.pb.h"

namespace gpubench::server {

absl::Status CheckConfinement(const std::string& worker_path, const worker::WorkerLimits& limits,
                              const std::string& data_dir,
                              const std::vector<std::string>& must_not_read, std::ostream& out) {
  v1::WorkerRequest request;
  request.set_job_id("confinement-check");
  v1::WorkerConfinement* confinement = request.mutable_confinement();
  auto probe = [&](const std::string& path, bool write, bool allowed) {
    v1::ConfinementProbe* p = confinement->add_probes();
    p->set_path(path);
    p->set_write(write);
    p->set_expect_allowed(allowed);
  };
  for (const std::string& path : limits.protected_paths) probe(path, false, false);
  probe(data_dir + "/gpubench.db", false, false);
  probe("/etc/shadow", false, false);
  for (const std::string& path : must_not_read) probe(path, false, false);
  for (const std::string& path : {data_dir, std::string("/"), std::string("/tmp"),
                                  std::string("/var/tmp"), std::string("/dev/shm")}) {
    probe(path, true, false);
  }
  probe(worker_path, false, true);  // its own binary
  if (DIR* dev = opendir("/dev")) {  // the GPUs, for CUDA and NVML
    while (dirent* e = readdir(dev)) {
      if (std::string(e->d_name).rfind("nvidia", 0) == 0 && e->d_type == DT_CHR) {
        probe(std::string("/dev/") + e->d_name, true, true);
      }
    }
    closedir(dev);
  }
  probe("$TMPDIR", true, true);     // its scratch folder
  // No child can outlive it, and no network; a UNIX socket, for CUDA (the
  // MPS control socket).
  confinement->add_probes()->set_kind(v1::ConfinementProbe::START_PROCESS);
  confinement->add_probes()->set_kind(v1::ConfinementProbe::IO_URING);
  for (const char* family : {"inet", "inet6", "unix"}) {
    v1::ConfinementProbe* p = confinement->add_probes();
    p->set_kind(v1::ConfinementProbe::OPEN_SOCKET);
    p->set_path(family);
    p->set_expect_allowed(std::string(family) == "unix");
  }
  // A UNIX socket of the daemon's, listening: the worker may not reach it
  // (a path socket's connect is not Landlock's to refuse).
  const std::string listener_path = data_dir + "/.confinement-check.sock";
  unlink(listener_path.c_str());
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  listener_path.copy(address.sun_path, sizeof(address.sun_path) - 1);
  if (listener >= 0 &&
      bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      listen(listener, 1) == 0) {
    v1::ConfinementProbe* p = confinement->add_probes();
    p->set_kind(v1::ConfinementProbe::CONNECT_UNIX);
    p->set_path(listener_path);
  }
  struct Cleanup {
    int fd;
    std::string path;
    ~Cleanup() {
      if (fd >= 0) close(fd);
      unlink(path.c_str());
    }
  } cleanup{listener, listener_path};
  auto worker = worker::WorkerProcess::Start(worker_path, request, limits);
  if (!worker.ok()) return worker.status();
  v1::WorkerEvent event;
  while (true) {
    auto next = (*worker)->Next(&event);
    if (!next.ok()) return next.status();
    if (!*next) break;
    if (event.has_log()) out << event.log().text() << "\n";
  }
  const worker::ExitInfo exit = (*worker)->Wait();
  if (!exit.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the confined worker ended with ", exit.Describe(), ": ", exit.stderr_tail));
  }
  return absl::OkStatus();
}

}  // namespace gpubench::server
