// gpubenchd as an object, the way gRPC's route_guide runs its server: what
// the flags asked for (DaemonConfig), the data directory made ready, then
// the parts it serves with, started in order and stopped in reverse.
#ifndef GPUBENCH_SERVER_DAEMON_H_
#define GPUBENCH_SERVER_DAEMON_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/paths.h"
#include "launcher/clock_control.h"
#include "server/auth.h"
#include "server/http_front.h"
#include "server/job_manager.h"
#include "server/scheduler.h"
#include "server/service.h"
#include "storage/store.h"

namespace gpubench::server {

// Everything gpubenchd's flags set, checked for range by the caller.
struct DaemonConfig {
  std::string listen = "127.0.0.1:50051";
  std::string data_dir;  // absolute
  std::string port_file;
  std::string token_file, tls_cert, tls_key, tls_client_ca;
  std::string client_cert_role = "submit";
  std::string worker_user;
  std::string metrics_listen, health_listen;
  bool insecure = false;
  bool metrics_without_token = false;
  bool allow_unconfined_user_models = false;
  bool allow_clock_control = false;  // runs may set GPU power limits and clock locks
  int64_t max_db_bytes = int64_t{16} << 30;  // no client fills the disk
  DaemonOptions jobs;                        // the queue and its workers
  ServiceOptions service;                    // the front end's limits
};

// Makes the data directory ready (0700, its models and work folders, a
// worker user's way to its scratch folders) and fills in what follows from
// it: the worker limits' scratch root and, with config->worker_user, the
// user. InvalidArgument for a bad setting (gpubenchd exits 2), another
// code where the host refuses (exit 1).
absl::Status PrepareDataDir(DaemonConfig* config);

class Daemon {
 public:
  // Serves config (PrepareDataDir done): takes the data directory's lock,
  // opens the store, probes the host, recovers the queue, listens. The
  // status codes as PrepareDataDir's.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(DaemonConfig config);
  ~Daemon() { Shutdown(); }

  // The queue first (running jobs get the grace period and end
  // INTERRUPTED, which watchers see), then the servers. Idempotent.
  void Shutdown();

 private:
  explicit Daemon(DaemonConfig config) : config_(std::move(config)) {}
  absl::Status Open();
  void RecoverClocks();
  absl::Status Serve();
  // What the servers listen on, once they do.
  struct Listening {
    int port = 0;
    int health_port = 0;
    bool tls = false;
    bool tokens_required = false;
  };
  absl::Status Listen(Listening* listening);
  void Announce(const Listening& listening);
  void SetServing(bool serving);

  DaemonConfig config_;
  v1::HostInfo host_;
  std::unique_ptr<DataDirLock> lock_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<ClockControl> clock_control_;  // also undoes a crashed daemon's
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<Scheduler> scheduler_;
  std::shared_ptr<Authorizer> auth_;
  std::unique_ptr<BenchServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::Server> health_server_;
  std::unique_ptr<HttpFront> http_;
  bool stopped_ = false;
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_DAEMON_H_
