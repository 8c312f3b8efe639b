// The HTTP front's sockets, with bounds: it accepts connections, reads each
// request's head (request line and headers) on one thread that polls them all,
// and hands only complete heads to a few threads that answer them.
//
// Why not cpp-httplib's own listen: Debian's 0.11 reads headers without a
// bound on their count (4 connections x 40 MB of headers grew the daemon by
// 240 MB, which malloc kept) and gives each connection a thread of a small
// pool for as long as it trickles (8 slow clients, or 200 idle ones queued
// behind them, blocked /metrics). Here a connection costs at most
// `max_head_bytes` until its head is whole, however slow it is.
#ifndef GPUBENCH_SERVER_HTTP_LISTENER_H_
#define GPUBENCH_SERVER_HTTP_LISTENER_H_

#include <httplib.h>

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gpubench::server {

struct HttpLimits {
  size_t max_head_bytes = 8 << 10;  // request line and headers together; beyond: 431
  int max_header_lines = 64;        // headers in one request; beyond: 431
  // From accept to the head's blank line (the whole request: GET has no
  // body); a client still sending then is closed.
  absl::Duration head_deadline = absl::Seconds(5);
  // Connections still sending their head; a new one closes the oldest.
  int max_pending = 64;
  int workers = 4;      // threads that build and write responses
  int max_queued = 64;  // complete requests waiting for a worker; beyond: 503
  absl::Duration write_deadline = absl::Seconds(10);  // to write one response
};

struct HttpListenerOptions {
  std::string host;  // an address or a name; "" is every address
  int port = 0;      // 0 picks one
  // PEM files: TLS (1.2 and later); both empty: plaintext.
  std::string tls_cert_file, tls_key_file;
  HttpLimits limits;
};

// Answers one request read from `stream` (cpp-httplib's Server::process_request
// with the connection to be closed afterwards). Called on the worker threads,
// several at a time.
using HttpAnswer = std::function<void(httplib::Stream& stream)>;

// One request per connection (responses say `Connection: close`), so an idle
// keep-alive connection holds nothing. Thread-safe.
class HttpListener {
 public:
  // Binds, listens and starts its threads. InvalidArgument for a certificate
  // or key that does not load, Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(const HttpListenerOptions& options,
                                                             HttpAnswer answer);
  ~HttpListener();  // Stop()
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  int port() const { return port_; }
  // Stops accepting, closes the connections not yet answered, waits for the
  // answers under way (each bounded by write_deadline). Idempotent.
  void Stop();

  struct Connection;  // a socket, its TLS session and what was read of it

 private:
  HttpListener() = default;
  void Poll();    // the one thread that accepts and reads heads
  void Answer();  // a worker
  void Hand(std::unique_ptr<Connection> c);  // to the workers, or 503
  bool HasWorkOrStops() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Const after Start.
  HttpLimits limits_;
  HttpAnswer answer_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // a pipe: Stop wakes Poll through it
  int port_ = 0;
  SSL_CTX* tls_ = nullptr;  // owned; null for plaintext
  std::thread poller_;
  std::vector<std::thread> workers_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::unique_ptr<Connection>> queued_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_HTTP_LISTENER_H_
