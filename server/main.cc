// gpubenchd: the daemon. See README.md.
//   gpubenchd [--listen 127.0.0.1:50051] [--data-dir DIR] [--config FILE] ...
// Every flag may also be given in the config file as "name = value" lines
// (without the dashes); flags on the command line win.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/paths.h"
#include "server/job_manager.h"
#include "server/scheduler.h"
#include "server/service.h"
#include "storage/store.h"
#include "worker/process.h"

namespace {

constexpr char kUsage[] = R"(usage: gpubenchd [flags]
  --listen HOST:PORT         address to serve (default 127.0.0.1:50051; port 0 picks one)
  --data-dir DIR             SQLite file, models and traces (default: the user's data
                             directory, /var/lib/gpubench under systemd)
  --config FILE              "name = value" lines for any flag below
  --worker PATH              gpubench-worker binary (default: beside gpubenchd)
  --max-queue N              queued jobs before RESOURCE_EXHAUSTED (default 1000)
  --max-job-seconds N        longest a job may run; bounds spec timeout_s (default 86400)
  --stop-grace-ms N          SIGTERM to SIGKILL delay for cancel and shutdown (default 10000)
  --max-requeues N           times an interrupted job is requeued (default 1)
  --keep-samples-runs N      keep samples of the newest N runs (default 0: all)
  --keep-trace-bytes N       keep the newest traces within N bytes (default 0: all)
  --port-file PATH           write the bound port here once serving
  --token-file PATH          accepted tokens, one "SHA256HEX NAME ROLE" line each (role
                             read, submit or admin); a file with one bare token is that
                             token as admin. Every call then needs "authorization: Bearer"
  --tls-cert PATH            serve TLS with this PEM certificate chain ...
  --tls-key PATH             ... and this PEM private key
  --model-root DIR           params.model_path may name files under DIR (repeatable;
                             default none: only uploaded models run)
  --allow-uploaded-aoti      run uploaded AOTInductor packages (native code) even when
                             the uploader did not hold the admin role
  --insecure                 allow a non-loopback --listen without TLS and tokens
                             (anyone who reaches the port may submit jobs)
)";

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

using Flags = std::map<std::string, std::string>;

// Flags that may be given more than once; each value is kept.
bool Repeatable(const std::string& name) { return name == "model-root"; }
void SetFlag(Flags* flags, std::vector<std::string>* repeated, const std::string& name,
             std::string value) {
  if (Repeatable(name)) {
    repeated->push_back(std::move(value));
  } else {
    (*flags)[name] = std::move(value);
  }
}

bool ReadConfig(const std::string& path, Flags* flags, std::vector<std::string>* repeated,
                std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = absl::StrCat("cannot read config file ", path);
    return false;
  }
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    absl::string_view l = absl::StripAsciiWhitespace(line);
    if (l.empty() || l[0] == '#') continue;
    const size_t eq = l.find('=');
    if (eq == absl::string_view::npos) {
      *error = absl::StrCat(path, ":", n, ": expected name = value");
      return false;
    }
    const std::string name(absl::StripAsciiWhitespace(l.substr(0, eq)));
    const std::string value(absl::StripAsciiWhitespace(l.substr(eq + 1)));
    if (Repeatable(name)) {
      repeated->push_back(value);
    } else {
      flags->emplace(name, value);
    }
  }
  return true;
}

bool ToInt(const Flags& flags, const std::string& name, int64_t* out, std::string* error) {
  auto it = flags.find(name);
  if (it == flags.end()) return true;
  if (!absl::SimpleAtoi(it->second, out) || *out < 0) {
    *error = absl::StrCat("--", name, ": expected a non-negative integer, got \"",
                          it->second, "\"");
    return false;
  }
  return true;
}

bool Switch(const Flags& flags, const std::string& name) {
  auto it = flags.find(name);
  return it != flags.end() && (it->second == "true" || it->second == "1" || it->second == "yes");
}

// True for addresses only this machine can reach: 127.0.0.0/8, [::1],
// localhost, and unix sockets.
bool IsLoopback(const std::string& listen) {
  if (absl::StartsWith(listen, "unix:")) return true;
  std::string host = listen.substr(0, listen.rfind(':'));
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {
    host = host.substr(1, host.size() - 2);
  }
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpubench;
  Flags flags;
  std::vector<std::string> model_roots;
  // Whether each flag takes a value; the others are switches ("true").
  const std::map<std::string, bool> known = {
      {"listen", true}, {"data-dir", true}, {"config", true}, {"worker", true},
      {"max-queue", true}, {"max-job-seconds", true}, {"stop-grace-ms", true},
      {"max-requeues", true}, {"keep-samples-runs", true}, {"keep-trace-bytes", true},
      {"port-file", true}, {"token-file", true}, {"tls-cert", true}, {"tls-key", true},
      {"model-root", true}, {"allow-uploaded-aoti", false}, {"insecure", false}};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    }
    std::string name = arg.rfind("--", 0) == 0 ? arg.substr(2) : "";
    std::string value;
    const bool inline_value = name.find('=') != std::string::npos;
    if (inline_value) {
      value = name.substr(name.find('=') + 1);
      name = name.substr(0, name.find('='));
    }
    auto flag = known.find(name);
    if (flag == known.end() || (flag->second && !inline_value && i + 1 >= argc)) {
      std::cerr << "gpubenchd: unknown or incomplete flag \"" << arg << "\"\n" << kUsage;
      return 2;
    }
    if (!inline_value) value = flag->second ? argv[++i] : "true";
    SetFlag(&flags, &model_roots, name, value);
  }
  std::string error;
  if (flags.count("config")) {
    Flags from_file;
    std::vector<std::string> roots_from_file;
    if (!ReadConfig(flags["config"], &from_file, &roots_from_file, &error)) {
      std::cerr << "gpubenchd: " << error << "\n";
      return 2;
    }
    model_roots.insert(model_roots.end(), roots_from_file.begin(), roots_from_file.end());
    for (auto& [name, value] : from_file) {
      if (!known.count(name)) {
        std::cerr << "gpubenchd: config file " << flags["config"] << ": unknown setting \""
                  << name << "\"\n";
        return 2;
      }
      flags.emplace(name, value);  // the command line wins
    }
  }
  // Before any thread or child exists: a worker dying mid-write must not
  // SIGPIPE the daemon, and SIGTERM always means a clean shutdown.
  if (geteuid() == 0) {
    std::cerr << "gpubenchd: WARNING: running as root; workers load user models as root too. "
                 "Run it as an unprivileged user (deploy/gpubenchd.service)\n";
  }
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  server::DaemonOptions options;
  int64_t max_queue = options.max_queue, max_requeues = options.max_requeues;
  storage::RetentionLimits& retention = options.retention;
  if (!ToInt(flags, "max-queue", &max_queue, &error) ||
      !ToInt(flags, "max-job-seconds", &options.max_job_seconds, &error) ||
      !ToInt(flags, "stop-grace-ms", &options.stop_grace_ms, &error) ||
      !ToInt(flags, "max-requeues", &max_requeues, &error) ||
      !ToInt(flags, "keep-samples-runs", &retention.max_runs_with_samples, &error) ||
      !ToInt(flags, "keep-trace-bytes", &retention.max_trace_bytes, &error)) {
    std::cerr << "gpubenchd: " << error << "\n";
    return 2;
  }
  if (options.max_job_seconds < 1) {
    std::cerr << "gpubenchd: --max-job-seconds: must be at least 1\n";
    return 2;
  }
  options.max_queue = static_cast<int>(max_queue);
  options.max_requeues = static_cast<int>(max_requeues);
  const std::string listen =
      flags.count("listen") ? flags["listen"] : std::string("127.0.0.1:50051");
  const std::string data_dir =
      flags.count("data-dir") ? flags["data-dir"] : DefaultDataDir();
  options.worker_path =
      flags.count("worker") ? flags["worker"] : worker::DefaultWorkerPath();
  options.model_dir = data_dir + "/models";
  for (const std::string& root : model_roots) {
    auto canonical = CanonicalDir(root);
    if (!canonical.ok()) {
      std::cerr << "gpubenchd: --model-root: " << canonical.status().message() << "\n";
      return 2;
    }
    options.model_roots.push_back(*canonical);
  }
  options.allow_uploaded_aoti = Switch(flags, "allow-uploaded-aoti");
  for (const std::string& dir : {data_dir, options.model_dir}) {
    if (auto s = MakeDirs(dir); !s.ok()) {
      std::cerr << "gpubenchd: " << s.message() << "\n";
      return 1;
    }
  }

  // A corrupt or unreadable database stops start-up; it is never rewritten.
  auto store = storage::Store::Open({data_dir + "/gpubench.db"});
  if (!store.ok()) {
    std::cerr << "gpubenchd: " << store.status().message() << "\n";
    return 1;
  }
  auto integrity = (*store)->IntegrityCheck();
  if (!integrity.ok() || *integrity != "ok") {
    std::cerr << "gpubenchd: database " << data_dir << "/gpubench.db failed "
              << "integrity_check: "
              << (integrity.ok() ? *integrity : std::string(integrity.status().message()))
              << "; it was left untouched\n";
    return 1;
  }
  std::string warning;
  v1::HostInfo host = server::ProbeHost(listen, options.worker_path, &warning);
  if (!warning.empty()) std::cerr << "gpubenchd: warning: " << warning << "\n";
  if (auto s = (*store)->PutHost(host); !s.ok()) {
    std::cerr << "gpubenchd: " << s.message() << "\n";
    return 1;
  }
  if (auto pruned = (*store)->Prune(retention); !pruned.ok()) {
    std::cerr << "gpubenchd: retention: " << pruned.status().message() << "\n";
  }

  server::JobManager jobs(options, store->get(), host);
  server::Scheduler scheduler(&jobs, store->get());
  jobs.SetRunHook([&scheduler](const v1::Job& job, v1::Run* run) {
    scheduler.CompareWithHistory(job, run);
  });
  std::string token, cert, key;
  for (auto [flag, out] : {std::pair<const char*, std::string*>{"token-file", &token},
                           {"tls-cert", &cert}, {"tls-key", &key}}) {
    if (!flags.count(flag)) continue;
    std::ifstream in(flags[flag]);
    if (!in) {
      std::cerr << "gpubenchd: --" << flag << ": cannot read " << flags[flag] << "\n";
      return 2;
    }
    out->assign(std::istreambuf_iterator<char>(in), {});
  }
  server::AuthOptions auth_options;
  if (flags.count("token-file")) {
    auto tokens = server::ParseTokenFile(token);
    token.clear();  // only hashes are kept
    if (!tokens.ok()) {
      std::cerr << "gpubenchd: --token-file " << flags["token-file"] << ": "
                << tokens.status().message() << "\n";
      return 2;
    }
    auth_options.tokens = std::move(*tokens);
  }
  const bool tokens_required = !auth_options.tokens.empty();
  if (cert.empty() != key.empty()) {
    std::cerr << "gpubenchd: --tls-cert and --tls-key go together\n";
    return 2;
  }
  if (!IsLoopback(listen)) {
    if (!Switch(flags, "insecure") && (cert.empty() || !tokens_required)) {
      std::cerr << "gpubenchd: refusing to listen on " << listen
                << " without TLS and tokens: anyone who reaches it could run jobs on this "
                   "host. Give --tls-cert, --tls-key and --token-file (README, Security), "
                   "listen on 127.0.0.1, or pass --insecure on a network you trust\n";
      return 2;
    }
    if (cert.empty() || !tokens_required) {
      std::cerr << "gpubenchd: WARNING: --insecure: serving " << listen << " without "
                << (cert.empty() ? "TLS" : "")
                << (cert.empty() && !tokens_required ? " and " : "")
                << (tokens_required ? "" : "tokens")
                << (tokens_required ? "; tokens cross the network in the clear"
                                    : "; any client that reaches this port may submit jobs "
                                      "as admin")
                << "\n";
    }
  }
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!cert.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({key, cert});
    credentials = grpc::SslServerCredentials(ssl);
  }
  auto auth = server::Authorizer::Create(std::move(auth_options));
  if (!auth.ok()) {
    std::cerr << "gpubenchd: " << auth.status().message() << "\n";
    return 1;
  }
  server::BenchServiceImpl service(&jobs, &scheduler, store->get(), auth->get(),
                                   options.model_dir, options.allow_uploaded_aoti);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, credentials, &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(8 << 20);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::cerr << "gpubenchd: cannot listen on " << listen << "\n";
    return 1;
  }
  if (auto s = jobs.Start(); !s.ok()) {
    std::cerr << "gpubenchd: recovery failed: " << s.message() << "\n";
    return 1;
  }
  scheduler.Start();
  if (flags.count("port-file")) {
    const std::string tmp = flags["port-file"] + ".tmp";
    std::ofstream(tmp) << port << "\n";
    std::rename(tmp.c_str(), flags["port-file"].c_str());
  }
  std::cerr << "gpubenchd: serving on " << listen << " (port " << port << ""
            << (cert.empty() ? "" : ", TLS") << (tokens_required ? ", token required" : "")
            << "), data in "
            << data_dir << ", " << host.gpus_size() << " GPU(s)\n";

  while (!g_stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::cerr << "gpubenchd: shutting down\n";
  // Stop the queue first (running jobs get the grace period and end
  // INTERRUPTED, which watchers see), then the server: in-flight calls get a
  // moment, then are cancelled.
  scheduler.Stop();
  jobs.Shutdown();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  std::cerr << "gpubenchd: stopped\n";
  return 0;
}
