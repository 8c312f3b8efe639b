#include "server/http_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gpubench::server {

struct HttpListener::Connection {
  int fd = -1;
  SSL* ssl = nullptr;
  bool wants_write = false;  // the last call waits for the socket to be writable
  std::string head;          // read so far: at most max_head_bytes + 1
  absl::Time deadline;       // the whole request by then

  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    if (ssl != nullptr) SSL_free(ssl);
    if (fd >= 0) close(fd);
  }
};

namespace {

using Connection = HttpListener::Connection;

#ifdef MSG_NOSIGNAL
constexpr int kSendFlags = MSG_NOSIGNAL;
#else
constexpr int kSendFlags = 0;
#endif

// Written by the polling thread itself, once and without waiting: a client
// that does not read them loses them.
constexpr char kTooLarge[] =
    "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\n"
    "Connection: close\r\n\r\n";
constexpr char kBusy[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\n"
    "Connection: close\r\n\r\n";

enum class Io { kData, kAgain, kClosed };

bool SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 &&
         fcntl(fd, F_SETFD, FD_CLOEXEC) == 0;
}

Io Receive(Connection& c, char* buf, size_t size, size_t* got) {
  if (c.ssl != nullptr) {
    ERR_clear_error();
    const int n = SSL_read(c.ssl, buf, static_cast<int>(size));
    if (n > 0) {
      *got = static_cast<size_t>(n);
      return Io::kData;
    }
    switch (SSL_get_error(c.ssl, n)) {
      case SSL_ERROR_WANT_READ: c.wants_write = false; return Io::kAgain;
      case SSL_ERROR_WANT_WRITE: c.wants_write = true; return Io::kAgain;
      default: return Io::kClosed;
    }
  }
  for (;;) {
    const ssize_t n = recv(c.fd, buf, size, 0);
    if (n > 0) {
      *got = static_cast<size_t>(n);
      return Io::kData;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      c.wants_write = false;
      return Io::kAgain;
    }
    return Io::kClosed;
  }
}

Io Send(Connection& c, const char* data, size_t size, size_t* sent) {
  if (c.ssl != nullptr) {
    ERR_clear_error();
    const int n = SSL_write(c.ssl, data, static_cast<int>(std::min<size_t>(size, 1 << 20)));
    if (n > 0) {
      *sent = static_cast<size_t>(n);
      return Io::kData;
    }
    switch (SSL_get_error(c.ssl, n)) {
      case SSL_ERROR_WANT_READ: c.wants_write = false; return Io::kAgain;
      case SSL_ERROR_WANT_WRITE: c.wants_write = true; return Io::kAgain;
      default: return Io::kClosed;
    }
  }
  for (;;) {
    const ssize_t n = send(c.fd, data, size, kSendFlags);
    if (n >= 0) {
      *sent = static_cast<size_t>(n);
      return Io::kData;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      c.wants_write = true;
      return Io::kAgain;
    }
    return Io::kClosed;
  }
}

// Waits until the socket can go on (readable, or writable where the last call
// asked for it); false at the deadline or on an error.
bool Wait(const Connection& c, absl::Time deadline) {
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p{c.fd, static_cast<short>(c.wants_write ? POLLOUT : POLLIN), 0};
    const int n = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (n > 0) return (p.revents & (POLLIN | POLLOUT | POLLHUP)) != 0;
    if (n < 0 && errno != EINTR) return false;
  }
}

// Once, without waiting.
void ReplyAndDrop(Connection& c, const char* reply) {
  size_t sent = 0;
  (void)Send(c, reply, std::strlen(reply), &sent);
}

// The end of an answered connection: the client reads the response to its end.
void Finish(Connection& c) {
  if (c.ssl != nullptr) SSL_shutdown(c.ssl);
  shutdown(c.fd, SHUT_WR);
}

enum class Head { kMore, kWhole, kTooLarge, kGone };

// Reads what the socket has; never more than max_head_bytes + 1 in all.
Head ReadHead(Connection& c, const HttpLimits& limits, char* buf, size_t buf_size) {
  for (;;) {
    const size_t room = limits.max_head_bytes + 1 - c.head.size();
    size_t got = 0;
    switch (Receive(c, buf, std::min(buf_size, room), &got)) {
      case Io::kAgain: return Head::kMore;
      case Io::kClosed: return Head::kGone;
      case Io::kData: break;
    }
    const size_t from = c.head.size() < 3 ? 0 : c.head.size() - 3;
    c.head.append(buf, got);
    const size_t end = c.head.find("\r\n\r\n", from);
    const size_t scanned = end == std::string::npos ? c.head.size() : end + 2;
    // The request line, then one line per header.
    const auto lines = std::count(c.head.begin(), c.head.begin() + scanned, '\n');
    if (lines > limits.max_header_lines + 1) return Head::kTooLarge;
    if (end != std::string::npos) {
      return end + 4 <= limits.max_head_bytes ? Head::kWhole : Head::kTooLarge;
    }
    if (c.head.size() > limits.max_head_bytes) return Head::kTooLarge;
  }
}

void Address(int fd, bool local, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  sockaddr* a = reinterpret_cast<sockaddr*>(&addr);
  if ((local ? getsockname(fd, a, &len) : getpeername(fd, a, &len)) != 0) return;
  char host[NI_MAXHOST], service[NI_MAXSERV];
  if (getnameinfo(a, len, host, sizeof host, service, sizeof service,
                  NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host;
    port = std::atoi(service);
  }
}

// What cpp-httplib reads a request from: the head already read, then (never,
// for GET) the socket until the request's deadline.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(Connection& c, absl::Time write_deadline)
      : c_(c), write_deadline_(write_deadline) {}

  bool is_readable() const override {
    return offset_ < c_.head.size() || (c_.ssl != nullptr && SSL_pending(c_.ssl) > 0) ||
           Wait(c_, c_.deadline);
  }
  bool is_writable() const override {
    pollfd p{c_.fd, POLLOUT, 0};
    const absl::Duration left = write_deadline_ - absl::Now();
    return left > absl::ZeroDuration() &&
           poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) > 0 &&
           (p.revents & POLLOUT) != 0;
  }
  ssize_t read(char* ptr, size_t size) override {
    if (offset_ < c_.head.size()) {
      const size_t n = std::min(size, c_.head.size() - offset_);
      std::memcpy(ptr, c_.head.data() + offset_, n);
      offset_ += n;
      return static_cast<ssize_t>(n);
    }
    for (;;) {
      size_t got = 0;
      switch (Receive(c_, ptr, size, &got)) {
        case Io::kData: return static_cast<ssize_t>(got);
        case Io::kClosed: return -1;
        case Io::kAgain:
          if (!Wait(c_, c_.deadline)) return -1;
      }
    }
  }
  ssize_t write(const char* ptr, size_t size) override {
    size_t done = 0;
    while (done < size) {
      size_t sent = 0;
      switch (Send(c_, ptr + done, size - done, &sent)) {
        case Io::kData: done += sent; break;
        case Io::kClosed: return -1;
        case Io::kAgain:
          if (!Wait(c_, write_deadline_)) return -1;
      }
    }
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(c_.fd, false, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(c_.fd, true, ip, port);
  }
  socket_t socket() const override { return c_.fd; }

 private:
  Connection& c_;
  const absl::Time write_deadline_;
  size_t offset_ = 0;  // of the head, handed to cpp-httplib so far
};

absl::StatusOr<SSL_CTX*> TlsContext(const std::string& cert_file, const std::string& key_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return absl::InternalError("OpenSSL: cannot make a TLS context");
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat("the TLS certificate ", cert_file, " or its key does not load"));
  }
  return ctx;
}

absl::StatusOr<int> BindAndListen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int e = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints,
                                &found);
      e != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", gai_strerror(e)));
  }
  int fd = -1;
  int error = 0;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (!SetNonBlocking(fd) || bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 128) != 0) {
      error = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return absl::UnavailableError(std::strerror(error));
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(
    const HttpListenerOptions& options, HttpAnswer answer) {
  std::unique_ptr<HttpListener> l(new HttpListener());
  l->limits_ = options.limits;
  l->answer_ = std::move(answer);
  if (!options.tls_cert_file.empty()) {
    auto ctx = TlsContext(options.tls_cert_file, options.tls_key_file);
    if (!ctx.ok()) return ctx.status();
    l->tls_ = *ctx;
  }
  auto fd = BindAndListen(options.host, options.port);
  if (!fd.ok()) return fd.status();
  l->listen_fd_ = *fd;
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(l->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    l->port_ = addr.ss_family == AF_INET6
                   ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                   : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  }
  if (pipe(l->wake_fds_) != 0 || !SetNonBlocking(l->wake_fds_[0]) ||
      !SetNonBlocking(l->wake_fds_[1])) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  l->poller_ = std::thread([raw = l.get()] { raw->Poll(); });
  for (int i = 0; i < l->limits_.workers; ++i) {
    l->workers_.emplace_back([raw = l.get()] { raw->Answer(); });
  }
  return l;
}

HttpListener::~HttpListener() {
  Stop();
  for (int fd : {listen_fd_, wake_fds_[0], wake_fds_[1]}) {
    if (fd >= 0) close(fd);
  }
  if (tls_ != nullptr) SSL_CTX_free(tls_);
}

void HttpListener::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (wake_fds_[1] >= 0) {
    const char b = 0;
    (void)!write(wake_fds_[1], &b, 1);
  }
  if (poller_.joinable()) poller_.join();
  for (std::thread& w : workers_) {
    if (w.joinable()) w.join();
  }
  std::deque<std::unique_ptr<Connection>> unanswered;
  absl::MutexLock lock(&mu_);
  unanswered.swap(queued_);
}

bool HttpListener::HasWorkOrStops() const { return stopping_ || !queued_.empty(); }

void HttpListener::Poll() {
  std::vector<std::unique_ptr<Connection>> pending;  // oldest first
  std::vector<std::unique_ptr<Connection>> still;
  std::vector<pollfd> fds;
  char buf[4096];
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    absl::Time now = absl::Now();
    // A client still sending when its time is up is cut off.
    pending.erase(std::remove_if(pending.begin(), pending.end(),
                                 [now](const auto& c) { return c->deadline <= now; }),
                  pending.end());
    absl::Time next = now + absl::Seconds(1);
    fds.clear();
    fds.push_back({wake_fds_[0], POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const auto& c : pending) {
      fds.push_back({c->fd, static_cast<short>(c->wants_write ? POLLOUT : POLLIN), 0});
      next = std::min(next, c->deadline);
    }
    const int wait_ms = static_cast<int>(
        absl::ToInt64Milliseconds(std::max(next - now, absl::ZeroDuration()))) + 1;
    if (poll(fds.data(), fds.size(), wait_ms) < 0) {
      if (errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (fds[0].revents != 0) {
      char drain[16];
      while (read(wake_fds_[0], drain, sizeof drain) > 0) {
      }
    }
    still.clear();
    for (size_t i = 0; i < pending.size(); ++i) {
      if (fds[i + 2].revents == 0) {
        still.push_back(std::move(pending[i]));
        continue;
      }
      switch (ReadHead(*pending[i], limits_, buf, sizeof buf)) {
        case Head::kMore: still.push_back(std::move(pending[i])); break;
        case Head::kWhole: Hand(std::move(pending[i])); break;
        case Head::kTooLarge: ReplyAndDrop(*pending[i], kTooLarge); break;
        case Head::kGone: break;
      }
    }
    pending.swap(still);
    still.clear();  // closes the ones cut off above
    if ((fds[1].revents & POLLIN) == 0) continue;
    now = absl::Now();
    for (int i = 0; i < limits_.max_pending; ++i) {
      const int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // The listening socket stays readable: do not spin on it.
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        break;
      }
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      c->deadline = now + limits_.head_deadline;
      if (!SetNonBlocking(fd)) continue;
      if (tls_ != nullptr) {
        c->ssl = SSL_new(tls_);
        if (c->ssl == nullptr || SSL_set_fd(c->ssl, fd) != 1) continue;
        SSL_set_accept_state(c->ssl);
      }
      // The oldest one still sending its head makes room: slow and idle
      // clients cannot keep out a scraper that sends its request at once.
      if (pending.size() >= static_cast<size_t>(limits_.max_pending)) {
        pending.erase(pending.begin());
      }
      pending.push_back(std::move(c));
    }
  }
}

void HttpListener::Hand(std::unique_ptr<Connection> c) {
  {
    absl::MutexLock lock(&mu_);
    if (queued_.size() < static_cast<size_t>(limits_.max_queued)) {
      queued_.push_back(std::move(c));
      return;
    }
  }
  ReplyAndDrop(*c, kBusy);
}

void HttpListener::Answer() {
  for (;;) {
    std::unique_ptr<Connection> c;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &HttpListener::HasWorkOrStops));
      if (stopping_) return;
      c = std::move(queued_.front());
      queued_.pop_front();
    }
    ConnectionStream stream(*c, absl::Now() + limits_.write_deadline);
    answer_(stream);
    Finish(*c);
  }
}

}  // namespace gpubench::server
