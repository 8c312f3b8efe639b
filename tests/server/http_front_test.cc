// The daemon's HTTP port (--metrics-listen) as its users reach it: Prometheus
// metrics read by promtool and scraped by a real Prometheus on loopback, the
// HTML view opened in headless Chromium, and tokens asked of both.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "common/sha256.h"
#include "tests/support/command.h"
#include "tests/support/daemon_process.h"

namespace gpubench {
namespace {

using testing_support::CommandResult;
using testing_support::Daemon;
using testing_support::FreePort;
using testing_support::FreshDir;
using testing_support::RunCommand;
using testing_support::TinySpec;

const std::vector<std::string> kMetricsOn = {"--metrics-listen", "127.0.0.1:0"};

// Submits a tiny job over gRPC and waits for it to end; returns its id.
std::string RunTinyJob(Daemon& d) {
  grpc::ClientContext ctx;
  v1::SubmitJobRequest req;
  *req.mutable_spec() = TinySpec();
  v1::SubmitJobResponse resp;
  grpc::Status s = d.stub()->SubmitJob(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  const std::string id = resp.job().job_id();
  for (int i = 0; i < 600; ++i) {
    grpc::ClientContext get_ctx;
    v1::GetJobRequest get;
    get.set_job_id(id);
    v1::GetJobResponse job;
    if (d.stub()->GetJob(&get_ctx, get, &job).ok() && job.job().state() >= v1::JOB_STATE_SUCCEEDED) {
      EXPECT_EQ(job.job().state(), v1::JOB_STATE_SUCCEEDED) << job.job().error();
      return id;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "job " << id << " did not end";
  return id;
}

struct Reply {
  int status = 0;
  std::string body;
  httplib::Headers headers;
};

Reply Get(int port, const std::string& path, const std::string& authorization = "") {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(30, 0);
  client.set_read_timeout(30, 0);
  client.set_write_timeout(30, 0);
  httplib::Headers headers;
  if (!authorization.empty()) headers.emplace("Authorization", authorization);
  auto res = client.Get(path.c_str(), headers);
  if (!res) return Reply{-1, httplib::to_string(res.error()), {}};
  return Reply{res->status, res->body, res->headers};
}

std::string Header(const Reply& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// What `promtool check metrics` says of a page: "" when it passes.
std::string Promtool(const std::string& dir, const std::string& page) {
  WriteFile(dir + "/metrics.txt", page);
  const CommandResult r = RunCommand("promtool check metrics < '" + dir + "/metrics.txt'");
  if (r.exit_code == 0) return "";
  return "promtool (Debian's prometheus package; deploy/test.sh installs it) exit " +
         std::to_string(r.exit_code) + ":\n" + r.output;
}

TEST(HttpFront, MetricsCountJobsAndRunsAndPassPromtool) {
  Daemon d(FreshDir("http_metrics"), kMetricsOn);
  ASSERT_TRUE(d.serving()) << d.log();
  ASSERT_GT(d.metrics_port(), 0) << d.log();
  const Reply before = Get(d.metrics_port(), "/metrics");
  ASSERT_EQ(before.status, 200) << before.body;
  EXPECT_NE(before.body.find("gpubench_queue_depth 0\n"), std::string::npos) << before.body;
  EXPECT_NE(before.body.find("gpubench_jobs{state=\"succeeded\"} 0\n"), std::string::npos);
  EXPECT_EQ(before.body.find("gpubench_runs_total{"), std::string::npos) << before.body;

  RunTinyJob(d);
  RunTinyJob(d);
  const Reply after = Get(d.metrics_port(), "/metrics");
  ASSERT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(Header(after, "Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(after.body.find("gpubench_jobs{state=\"succeeded\"} 2\n"), std::string::npos)
      << after.body;
  EXPECT_NE(after.body.find("gpubench_runs_total{workload=\"mlp\",state=\"succeeded\"} 2\n"),
            std::string::npos)
      << after.body;
  // One series for the one config, its throughput a positive number.
  std::smatch m;
  const std::regex last(
      "gpubench_last_throughput_samples_per_second\\{workload=\"mlp\",config=\"([^\"]+)\","
      "config_key=\"[0-9a-f]{12}\",device=\"cpu\"\\} ([0-9.e+]+)\n");
  ASSERT_TRUE(std::regex_search(after.body, m, last)) << after.body;
  EXPECT_NE(m[1].str().find("b8"), std::string::npos) << m[1];
  EXPECT_GT(std::stod(m[2].str()), 0);
  EXPECT_EQ(std::distance(std::sregex_iterator(after.body.begin(), after.body.end(), last),
                          std::sregex_iterator()),
            1);
  EXPECT_NE(after.body.find("gpubench_gpu_telemetry_available 0\n"), std::string::npos);
  EXPECT_EQ(Promtool(d.data_dir(), after.body), "");
}

TEST(HttpFront, TokensGuardTheViewAndMetricsAndBrowsersMayLogIn) {
  const std::string dir = FreshDir("http_tokens");
  WriteFile(dir + "/tokens", Sha256Hex("reader-token") + " dashboards read\n");
  {
    Daemon d(FreshDir("http_tokens_data"),
             {"--metrics-listen", "127.0.0.1:0", "--token-file", dir + "/tokens"});
    ASSERT_TRUE(d.serving()) << d.log();
    for (const char* path : {"/", "/metrics", "/jobs/j0000000000000000"}) {
      const Reply anonymous = Get(d.metrics_port(), path);
      EXPECT_EQ(anonymous.status, 401) << path;
      EXPECT_NE(Header(anonymous, "WWW-Authenticate").find("Basic"), std::string::npos);
      EXPECT_EQ(Get(d.metrics_port(), path, "Bearer wrong").status, 401) << path;
    }
    EXPECT_EQ(Get(d.metrics_port(), "/metrics", "Bearer reader-token").status, 200);
    const Reply basic = Get(d.metrics_port(), "/",
                            "Basic " + absl::Base64Escape("anyone:reader-token"));
    EXPECT_EQ(basic.status, 200) << basic.body;
    EXPECT_NE(basic.body.find("No jobs."), std::string::npos) << basic.body;
    // Unknown pages are 404, anything but GET is 405 (nothing here changes state).
    EXPECT_EQ(Get(d.metrics_port(), "/jobs/../etc", "Bearer reader-token").status, 404);
    httplib::Client client("127.0.0.1", d.metrics_port());
    auto post = client.Post("/metrics", httplib::Headers{{"Authorization", "Bearer reader-token"}},
                            "x", "text/plain");
    ASSERT_TRUE(post);
    EXPECT_EQ(post->status, 405);
  }
  Daemon open_metrics(FreshDir("http_tokens_open"),
                      {"--metrics-listen", "127.0.0.1:0", "--token-file", dir + "/tokens",
                       "--metrics-without-token"});
  ASSERT_TRUE(open_metrics.serving()) << open_metrics.log();
  EXPECT_EQ(Get(open_metrics.metrics_port(), "/metrics").status, 200);
  EXPECT_EQ(Get(open_metrics.metrics_port(), "/").status, 401);
}

TEST(HttpFront, ANetworkAddressWithoutTlsIsRefused) {
  Daemon d(FreshDir("http_refused"), {"--metrics-listen", "0.0.0.0:0"});
  EXPECT_FALSE(d.serving());
  EXPECT_NE(d.log().find("refusing --metrics-listen 0.0.0.0:0 without TLS"), std::string::npos)
      << d.log();
}

// A real Prometheus (Debian's) scrapes the daemon with a bearer token, and
// the run count comes back through Prometheus's query API.
TEST(HttpFront, PrometheusScrapesTheDaemon) {
  const std::string dir = FreshDir("http_prometheus");
  WriteFile(dir + "/tokens", Sha256Hex("scraper-token") + " prometheus read\n");
  Daemon d(FreshDir("http_prometheus_data"),
           {"--metrics-listen", "127.0.0.1:0", "--token-file", dir + "/tokens"});
  ASSERT_TRUE(d.serving()) << d.log();
  ASSERT_EQ(RunCommand("command -v prometheus").exit_code, 0)
      << "no prometheus on PATH (Debian's prometheus package; deploy/test.sh installs it)";
  WriteFile(dir + "/prometheus.yml",
            "global:\n  scrape_interval: 1s\n"
            "scrape_configs:\n  - job_name: gpubench\n"
            "    authorization:\n      type: Bearer\n      credentials: scraper-token\n"
            "    static_configs:\n      - targets: ['127.0.0.1:" +
                std::to_string(d.metrics_port()) + "']\n");
  const int port = FreePort();
  const pid_t prometheus = fork();
  if (prometheus == 0) {
    freopen((dir + "/prometheus.log").c_str(), "w", stderr);
    const std::string config = "--config.file=" + dir + "/prometheus.yml";
    const std::string data = "--storage.tsdb.path=" + dir + "/data";
    const std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port);
    execlp("prometheus", "prometheus", config.c_str(), data.c_str(), listen.c_str(),
           static_cast<char*>(nullptr));
    _exit(127);
  }
  // Prometheus's own view of the target, then a metric through its API.
  std::string last;
  bool found = false;
  const std::string query = "/api/v1/query?query=gpubench_jobs%7Bstate%3D%22queued%22%7D";
  for (int i = 0; i < 300 && !found; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const Reply r = Get(port, query);
    last = r.body;
    found = r.status == 200 && last.find("\"job\":\"gpubench\"") != std::string::npos;
  }
  kill(prometheus, SIGTERM);
  waitpid(prometheus, nullptr, 0);
  std::ifstream log(dir + "/prometheus.log");
  ASSERT_TRUE(found) << "last answer: " << last << "\n"
                     << std::string(std::istreambuf_iterator<char>(log), {});
  // [time, "0"]: no job queued on a fresh daemon.
  EXPECT_NE(last.find("\"state\":\"queued\""), std::string::npos) << last;
  EXPECT_NE(last.find(",\"0\"]"), std::string::npos) << last;
}

// Headless Chromium opens the index, follows it to the job's report, and
// with tokens on logs in with the token as the password.
TEST(HttpFront, ChromiumShowsRecentJobsAndTheirReports) {
  Daemon d(FreshDir("http_chromium"), kMetricsOn);
  ASSERT_TRUE(d.serving()) << d.log();
  const std::string id = RunTinyJob(d);
  const Reply index = Get(d.metrics_port(), "/");
  ASSERT_EQ(index.status, 200);
  EXPECT_NE(Header(index, "Content-Security-Policy").find("default-src 'none'"),
            std::string::npos);
  const std::string dir = FreshDir("http_chromium_profile");
  auto dump = [&](const std::string& url) {
    const CommandResult r = RunCommand(
        "timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run "
        "--disable-dev-shm-usage --user-data-dir='" +
        dir + "' --dump-dom '" + url + "' 2>/dev/null");
    EXPECT_EQ(r.exit_code, 0) << "headless chromium (deploy/test.sh installs it): " << r.output;
    return r.output;
  };
  const std::string base = "http://127.0.0.1:" + std::to_string(d.metrics_port());
  const std::string dom = dump(base + "/");
  EXPECT_NE(dom.find("href=\"jobs/" + id + "\""), std::string::npos) << dom;
  EXPECT_NE(dom.find("succeeded"), std::string::npos) << dom;
  const std::string report = dump(base + "/jobs/" + id);
  EXPECT_NE(report.find("id=\"job-" + id + "\""), std::string::npos) << report;
  EXPECT_NE(report.find("class=\"runs\""), std::string::npos) << report;  // its runs table
  EXPECT_EQ(report.find("<script"), std::string::npos);
}

// A running job's page says where it is: its run, phase and iterations,
// and that no run has finished yet (not "No runs").
TEST(HttpFront, ARunningJobsPageSaysWhereItIs) {
  Daemon d(FreshDir("http_running"), kMetricsOn);
  ASSERT_TRUE(d.serving()) << d.log();
  v1::SubmitJobRequest req;
  req.mutable_spec()->mutable_base()->set_workload("empty");
  req.mutable_spec()->mutable_base()->set_device("cpu");
  req.mutable_spec()->mutable_measurement()->set_min_time_ms(20000);
  req.mutable_spec()->mutable_measurement()->set_max_time_ms(30000);
  req.mutable_spec()->mutable_measurement()->set_cv_threshold(0.000001);
  req.mutable_spec()->mutable_measurement()->set_max_iterations(100000000);
  grpc::ClientContext ctx;
  v1::SubmitJobResponse resp;
  ASSERT_TRUE(d.stub()->SubmitJob(&ctx, req, &resp).ok());
  const std::string id = resp.job().job_id();
  Reply page;
  for (int i = 0; i < 100; ++i) {
    page = Get(d.metrics_port(), "/jobs/" + id);
    if (page.body.find("iterations") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(page.body.find("run 1 of 1: empty"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("iterations"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("No run has finished yet"), std::string::npos) << page.body;
  grpc::ClientContext cancel_ctx;
  v1::CancelJobRequest cancel;
  cancel.set_job_id(id);
  v1::CancelJobResponse cancelled;
  EXPECT_TRUE(d.stub()->CancelJob(&cancel_ctx, cancel, &cancelled).ok());
}

TEST(HttpFront, ChromiumLogsInWithTheTokenAsItsPassword) {
  const std::string dir = FreshDir("http_chromium_login");
  WriteFile(dir + "/tokens", Sha256Hex("reader-token") + " dashboards read\n");
  Daemon d(FreshDir("http_chromium_login_data"),
           {"--metrics-listen", "127.0.0.1:0", "--token-file", dir + "/tokens"});
  ASSERT_TRUE(d.serving()) << d.log();
  auto dump = [&](const std::string& credentials) {
    return RunCommand("timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run "
                      "--disable-dev-shm-usage --user-data-dir='" +
                      dir + "/profile' --dump-dom 'http://" + credentials + "127.0.0.1:" +
                      std::to_string(d.metrics_port()) + "/' 2>/dev/null")
        .output;
  };
  const std::string refused = dump("");
  EXPECT_EQ(refused.find("No jobs."), std::string::npos) << refused;
  const std::string in = dump("me:reader-token@");
  EXPECT_NE(in.find("No jobs."), std::string::npos) << in;
}

// A raw TCP connection to the HTTP port, every wait on it bounded by 30 s.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << errno;
  return fd;
}

// The daemon's resident memory (VmRSS), in KiB.
long RssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// True when the daemon has closed (or reset) the connection within 30 s.
bool ClosedByTheDaemon(int fd) {
  char buf[256];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 30000) <= 0) return false;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    if (n < 0) return false;  // (any response bytes before the end are read on)
  }
}

// The probe's bomb: 4 connections, each 40 MB of short header lines (each
// line under cpp-httplib's own 8 KiB bound on one line). The daemon grew from
// 31 MB to 274 MB and stayed there; now each is cut off after a few KiB.
TEST(HttpFront, AHeaderBombIsCutOffAndTheDaemonStaysSmall) {
  Daemon d(FreshDir("http_bomb"), kMetricsOn);
  ASSERT_TRUE(d.serving()) << d.log();
  ASSERT_EQ(Get(d.metrics_port(), "/metrics").status, 200);
  const long before_kib = RssKib(d.pid());
  ASSERT_GT(before_kib, 0);
  constexpr size_t kBombBytes = 40 << 20;
  std::string lines;
  while (lines.size() < (64 << 10)) lines += "X-Bomb: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
  constexpr int kBombs = 4;
  std::vector<size_t> sent(kBombs, 0);
  std::vector<int> error(kBombs, 0);
  std::vector<std::thread> bombers;
  for (int i = 0; i < kBombs; ++i) {
    bombers.emplace_back([&, i] {
      const int fd = Connect(d.metrics_port());
      const std::string start = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";
      send(fd, start.data(), start.size(), MSG_NOSIGNAL);
      while (sent[i] < kBombBytes) {
        const ssize_t n = send(fd, lines.data(), lines.size(), MSG_NOSIGNAL);
        if (n <= 0) {
          error[i] = errno;
          break;
        }
        sent[i] += static_cast<size_t>(n);
      }
      close(fd);
    });
  }
  for (std::thread& t : bombers) t.join();
  for (int i = 0; i < kBombs; ++i) {
    EXPECT_LT(sent[i], kBombBytes) << "bomb " << i << " was read to its end";
    // Closed by the daemon (not a send that timed out on a stalled reader).
    EXPECT_TRUE(error[i] == EPIPE || error[i] == ECONNRESET) << "bomb " << i << ": " << error[i];
  }
  const long after_kib = RssKib(d.pid());
  EXPECT_LT(after_kib - before_kib, 64 << 10)
      << "VmRSS " << before_kib << " KiB before the bombs, " << after_kib << " KiB after";
  const Reply metrics = Get(d.metrics_port(), "/metrics");
  EXPECT_EQ(metrics.status, 200) << metrics.body;
  // One header too many is refused as well, however short the request.
  std::string many = "GET /metrics HTTP/1.1\r\n";
  for (int i = 0; i < 80; ++i) many += "X-" + std::to_string(i) + ": 1\r\n";
  many += "\r\n";
  const int fd = Connect(d.metrics_port());
  ASSERT_EQ(send(fd, many.data(), many.size(), MSG_NOSIGNAL), static_cast<ssize_t>(many.size()));
  char reply[64] = {};
  ASSERT_GT(recv(fd, reply, sizeof reply - 1, 0), 0);
  EXPECT_EQ(std::string(reply).rfind("HTTP/1.1 431", 0), 0u) << reply;
  close(fd);
}

// 200 idle clients and 8 that trickle their headers held 8 threads of
// cpp-httplib's pool and queued everything else behind them: /metrics and
// the view waited for as long as they were held. Now a scraper is answered
// while they are connected, and they are cut off after a few seconds.
TEST(HttpFront, MetricsAreServedWhileSlowAndIdleClientsAreConnected) {
  Daemon d(FreshDir("http_slow"), kMetricsOn);
  ASSERT_TRUE(d.serving()) << d.log();
  std::vector<int> held;
  for (int i = 0; i < 200; ++i) held.push_back(Connect(d.metrics_port()));
  const std::string partial = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
  for (int i = 0; i < 8; ++i) {
    const int fd = Connect(d.metrics_port());
    send(fd, partial.data(), partial.size(), MSG_NOSIGNAL);
    held.push_back(fd);
  }
  // A byte now and then from the slow ones while the scraper asks.
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    while (!done.load()) {
      for (size_t i = 200; i < held.size(); ++i) send(held[i], "a", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  const Reply metrics = Get(d.metrics_port(), "/metrics");
  EXPECT_EQ(metrics.status, 200) << metrics.body;
  EXPECT_NE(metrics.body.find("gpubench_queue_depth 0\n"), std::string::npos) << metrics.body;
  const Reply index = Get(d.metrics_port(), "/");
  EXPECT_EQ(index.status, 200) << index.body;
  EXPECT_NE(index.body.find("No jobs."), std::string::npos) << index.body;
  int still_open = 0;
  for (int fd : held) still_open += ClosedByTheDaemon(fd) ? 0 : 1;
  done = true;
  trickle.join();
  EXPECT_EQ(still_open, 0) << "of " << held.size() << " slow and idle clients";
  for (int fd : held) close(fd);
}

// HTTPS (--tls-cert, --tls-key) through the same bounded reader.
TEST(HttpFront, ServesHttpsWithTheDaemonsCertificate) {
  const std::string dir = FreshDir("http_tls");
  const CommandResult cert = RunCommand(
      "cd '" + dir + "' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
      "-nodes -days 2 -subj /CN=localhost -keyout key.pem -out cert.pem 2>&1");
  ASSERT_EQ(cert.exit_code, 0) << cert.output;
  Daemon d(FreshDir("http_tls_data"), {"--metrics-listen", "127.0.0.1:0", "--tls-cert",
                                       dir + "/cert.pem", "--tls-key", dir + "/key.pem"});
  ASSERT_GT(d.metrics_port(), 0) << d.log();
  httplib::SSLClient client("127.0.0.1", d.metrics_port());
  client.enable_server_certificate_verification(false);
  client.set_connection_timeout(30, 0);
  client.set_read_timeout(30, 0);
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("gpubench_queue_depth 0\n"), std::string::npos) << res->body;
  // Plaintext to the HTTPS port gets nothing.
  EXPECT_EQ(Get(d.metrics_port(), "/metrics").status, -1);
}

}  // namespace
}  // namespace gpubench
