#include "server/http_front.h"

#include <httplib.h>

#include <chrono>
#include <fstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/address.h"
#include "report/report.h"
#include "server/job_manager.h"
#include "storage/store.h"

namespace gpubench::server {
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
  std::string host;
  int port = 0;
  if (auto s = SplitHostPort(options.listen, &host, &port); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--metrics-listen: ", s.message()));
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  std::unique_ptr<HttpFront> front(new HttpFront());
  if (options.tls_cert_file.empty()) {
    front->server_ = std::make_unique<httplib::Server>();
  } else {
    for (const std::string& path : {options.tls_cert_file, options.tls_key_file}) {
      if (!Readable(path)) return absl::InvalidArgumentError("cannot read " + path);
    }
    auto https = std::make_unique<httplib::SSLServer>(options.tls_cert_file.c_str(),
                                                      options.tls_key_file.c_str());
    if (!https->is_valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--metrics-listen: the TLS certificate ", options.tls_cert_file,
                       " or its key does not load"));
    }
    front->server_ = std::move(https);
  }
  httplib::Server& server = *front->server_;
  // GET only, small requests, and no slow client holds a thread for long.
  server.set_payload_max_length(1 << 10);
  server.set_read_timeout(5, 0);
  server.set_write_timeout(10, 0);
  server.set_keep_alive_max_count(100);
  front->gpus_ = std::make_unique<GpuGauges>(jobs->host());
  front->Route(jobs, store, auth, options.metrics_without_token);
  if (port == 0) {
    front->port_ = server.bind_to_any_port(host);
  } else if (server.bind_to_port(host, port)) {
    front->port_ = port;
  }
  if (front->port_ <= 0) {
    return absl::UnavailableError(
        absl::StrCat("--metrics-listen: cannot listen on ", options.listen));
  }
  front->thread_ = std::thread([&server] { server.listen_after_bind(); });
  // stop() is a no-op until the loop runs: wait for it, so Stop never hangs.
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return front;
}

void HttpFront::Route(JobManager* jobs, storage::Store* store, const Authorizer* auth,
                      bool metrics_without_token) {
  httplib::Server& server = *server_;
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
               res.set_content(report::RenderReport({rj}, "gpubench report"),
                               "text/html; charset=utf-8");
               for (const auto& [name, value] : kPageHeaders) res.set_header(name, value);
             });
}

HttpFront::~HttpFront() { Stop(); }

void HttpFront::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpubench::server
