#include "server/http_front.h"

#include <httplib.h>

#include <fstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/address.h"
#include "report/report.h"
#include "server/http_listener.h"
#include "server/job_manager.h"
#include "storage/store.h"

namespace gpubench::server {

// cpp-httplib's server as a router: its request parsing, routes and response
// writing, called by HttpListener on a connection that it has read.
class HttpFront::Router : public httplib::Server {
 public:
  using httplib::Server::process_request;
};

namespace {

// Jobs on the index page.
constexpr int kIndexJobs = 100;

// Pages are self-contained: inline CSS and SVG, nothing to run or fetch.
const httplib::Headers kPageHeaders = {
    {"Content-Security-Policy",
     "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; "
     "frame-ancestors 'none'"},
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"Cache-Control", "no-store"},
};

void Fail(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(message + "\n", "text/plain; charset=utf-8");
}

// The HTTP status a store or job-manager error gets.
int HttpStatus(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kUnavailable: return 503;
    default: return 500;
  }
}

bool Readable(const std::string& path) { return std::ifstream(path).good(); }

}  // namespace

absl::StatusOr<std::unique_ptr<HttpFront>> HttpFront::Start(const HttpOptions& options,
                                                             JobManager* jobs,
                                                             storage::Store* store,
                                                             const Authorizer* auth) {
  HttpListenerOptions listen;
  if (auto s = SplitHostPort(options.listen, &listen.host, &listen.port); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--metrics-listen: ", s.message()));
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  for (const std::string& path : {options.tls_cert_file, options.tls_key_file}) {
    if (!path.empty() && !Readable(path)) return absl::InvalidArgumentError("cannot read " + path);
  }
  listen.tls_cert_file = options.tls_cert_file;
  listen.tls_key_file = options.tls_key_file;
  std::unique_ptr<HttpFront> front(new HttpFront());
  // The router's own listen is never called: it only parses, routes and
  // writes, on the listener's threads (http_listener.h says why).
  front->router_ = std::make_unique<Router>();
  front->router_->set_payload_max_length(1 << 10);  // GET only
  front->gpus_ = std::make_unique<GpuGauges>(jobs->host());
  front->Route(jobs, store, auth, options.metrics_without_token);
  Router* router = front->router_.get();
  auto listener = HttpListener::Start(listen, [router](httplib::Stream& stream) {
    bool closed = true;
    router->process_request(stream, /*close_connection=*/true, closed,
                            [](httplib::Request&) {});
  });
  if (!listener.ok()) {
    return absl::Status(listener.status().code(),
                        absl::StrCat("--metrics-listen: ",
                                     listener.status().code() == absl::StatusCode::kUnavailable
                                         ? absl::StrCat("cannot listen on ", options.listen, ": ")
                                         : "",
                                     listener.status().message()));
  }
  front->listener_ = *std::move(listener);
  front->port_ = front->listener_->port();
  return front;
}

void HttpFront::Route(JobManager* jobs, storage::Store* store, const Authorizer* auth,
                      bool metrics_without_token) {
  Router& server = *router_;
  server.set_pre_routing_handler([auth, metrics_without_token](const httplib::Request& req,
                                                               httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD") {
      Fail(res, 405, "only GET");
      res.set_header("Allow", "GET, HEAD");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (metrics_without_token && req.path == "/metrics") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    auto caller = auth->AuthenticateHttp(req.get_header_value("Authorization"));
    if (!caller.ok()) {
      Fail(res, 401, std::string(caller.status().message()));
      // Browsers then ask for a user and password: the token is the password.
      res.set_header("WWW-Authenticate", "Basic realm=\"gpubench\", charset=\"UTF-8\"");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (caller->role < v1::ROLE_READ) {
      Fail(res, 403, caller->name + " has no role that may read");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  GpuGauges* gpus = gpus_.get();
  server.Get("/metrics", [jobs, store, gpus](const httplib::Request&, httplib::Response& res) {
    res.set_content(RenderMetrics(jobs, store, gpus), "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/", [jobs, store](const httplib::Request&, httplib::Response& res) {
    auto page = store->jobs().List(storage::JobFilter{}, kIndexJobs, "");
    if (!page.ok()) return Fail(res, HttpStatus(page.status()), page.status().ToString());
    jobs->OverlayUnsaved(&page->items);
    const std::string& hostname = jobs->host().hostname();
    res.set_content(report::RenderJobIndex(page->items, "gpubench: " + hostname, hostname, "jobs/"),
                    "text/html; charset=utf-8");
    for (const auto& [name, value] : kPageHeaders) res.set_header(name, value);
  });
  server.Get(R"(/jobs/([A-Za-z0-9_-]{1,64}))",
             [jobs, store](const httplib::Request& req, httplib::Response& res) {
               const std::string id = req.matches[1];
               report::ReportJob rj;
               rj.host = jobs->host().hostname();
               auto job = jobs->GetJob(id);
               if (!job.ok()) return Fail(res, HttpStatus(job.status()), job.status().ToString());
               rj.job = *std::move(job);
               auto runs = store->runs().List(id, /*include_samples=*/false);
               if (!runs.ok()) return Fail(res, HttpStatus(runs.status()), runs.status().ToString());
               rj.runs = *std::move(runs);
               if (rj.job.state() == v1::JOB_STATE_RUNNING) {
                 // Where it is now, from its live events.
                 std::vector<v1::ProgressEvent> events;
                 bool ended = false;
                 if (jobs->EventsAfter(id, 0, &events, &ended).ok()) {
                   for (const v1::ProgressEvent& e : events) {
                     if (e.has_run_started()) rj.current_run = e.run_started();
                     if (e.has_run_progress()) rj.current_progress = e.run_progress();
                   }
                 }
               }
               res.set_content(report::RenderReport({rj}, "gpubench report"),
                               "text/html; charset=utf-8");
               for (const auto& [name, value] : kPageHeaders) res.set_header(name, value);
             });
}

HttpFront::HttpFront() = default;
HttpFront::~HttpFront() { Stop(); }

void HttpFront::Stop() {
  if (listener_) listener_->Stop();
}

}  // namespace gpubench::server
