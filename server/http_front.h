// The daemon's HTTP port (--metrics-listen): Prometheus metrics at /metrics
// and a read-only HTML view of the host's recent jobs (/, and /jobs/ID for
// the report `gpubench report` writes). GET only.
#ifndef GPUBENCH_SERVER_HTTP_FRONT_H_
#define GPUBENCH_SERVER_HTTP_FRONT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/auth.h"
#include "server/metrics.h"

namespace gpubench::storage {
class Store;
}

namespace gpubench::server {

class HttpListener;
class JobManager;

struct HttpOptions {
  std::string listen;  // HOST:PORT; port 0 picks one
  // PEM files: HTTPS with the gRPC port's certificate; both empty: HTTP.
  std::string tls_cert_file, tls_key_file;
  // Serve /metrics without a token where tokens are on (for scrapers that
  // cannot send one, e.g. annotation-based Kubernetes discovery). The HTML
  // view still needs the read role.
  bool metrics_without_token = false;
};

// Every request needs the read role when the daemon has tokens (a bearer
// token, or the token as a Basic password so that a browser can log in);
// anonymous callers get 401. Pages carry a Content-Security-Policy that
// allows no script and no fetch. Thread-safe.
class HttpFront {
 public:
  // Binds and starts serving on a thread of its own. InvalidArgument for a
  // bad address or unreadable certificate, Unavailable when the port cannot
  // be bound.
  static absl::StatusOr<std::unique_ptr<HttpFront>> Start(const HttpOptions& options,
                                                          JobManager* jobs,
                                                          storage::Store* store,
                                                          const Authorizer* auth);
  ~HttpFront();  // Stop()
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  int port() const { return port_; }
  // Stops accepting, ends the serving thread. Idempotent.
  void Stop();

 private:
  class Router;

  HttpFront();
  void Route(JobManager* jobs, storage::Store* store, const Authorizer* auth,
             bool metrics_without_token);

  std::unique_ptr<Router> router_;
  std::unique_ptr<GpuGauges> gpus_;
  std::unique_ptr<HttpListener> listener_;  // last: stopped before the router goes
  int port_ = 0;
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_HTTP_FRONT_H_
