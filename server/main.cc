// gpubenchd: the daemon. See README.md.
//   gpubenchd [--listen 127.0.0.1:50051] [--data-dir DIR] [--config FILE] ...
// Every flag may also be given in the config file as "name = value" lines
// (without the dashes); flags on the command line win.
#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
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
#include "common/address.h"
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
  --max-db-bytes N           the database grows no larger; beyond, submits are refused
                             with RESOURCE_EXHAUSTED (default 16 GiB; 0: the disk)
  --token-file PATH          accepted tokens, one "SHA256HEX NAME ROLE" line each (role
                             read, submit or admin); a file with one bare token is that
                             token as admin. Every call then needs "authorization: Bearer"
  --tls-cert PATH            serve TLS with this PEM certificate chain ...
  --tls-key PATH             ... and this PEM private key
  --tls-client-ca PATH       mutual TLS: require client certificates signed by these PEM
                             roots; a certificate's subject is the caller's name
  --client-cert-role ROLE    role of a caller known by its certificate alone (default
                             submit); a token, when sent, decides instead
  --max-model-bytes N        largest model upload (default 2 GiB)
  --models-quota-bytes N     all uploaded models together (default 20 GiB)
  --worker-max-rss-bytes N   a worker whose resident memory passes N is killed and its
                             run failed, saying so (default 3/4 of this host's memory)
  --worker-max-open-files N  RLIMIT_NOFILE of each worker (default 4096)
  --max-priority N           highest spec.priority without the admin role (default 10)
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

// Deletes the ".upload-*" temporaries an interrupted upload left behind.
void RemoveLeftoverUploads(const std::string& model_dir) {
  DIR* dir = opendir(model_dir.c_str());
  if (dir == nullptr) return;
  int removed = 0;
  while (dirent* e = readdir(dir)) {
    if (absl::StartsWith(e->d_name, ".upload-") &&
        std::remove((model_dir + "/" + e->d_name).c_str()) == 0) {
      ++removed;
    }
  }
  closedir(dir);
  if (removed > 0) {
    std::cerr << "gpubenchd: removed " << removed << " unfinished upload(s) from " << model_dir
              << "\n";
  }
}

bool Switch(const Flags& flags, const std::string& name) {
  auto it = flags.find(name);
  return it != flags.end() && (it->second == "true" || it->second == "1" || it->second == "yes");
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
      {"model-root", true}, {"tls-client-ca", true}, {"client-cert-role", true}, {"allow-uploaded-aoti", false}, {"insecure", false},
      {"max-db-bytes", true}, {"max-model-bytes", true}, {"models-quota-bytes", true},
      {"max-priority", true}, {"worker-max-rss-bytes", true},
      {"worker-max-open-files", true}};
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
  int64_t max_db_bytes = int64_t{16} << 30;  // a client must not be able to fill the disk
  storage::RetentionLimits& retention = options.retention;
  if (!ToInt(flags, "max-queue", &max_queue, &error) ||
      !ToInt(flags, "max-job-seconds", &options.max_job_seconds, &error) ||
      !ToInt(flags, "stop-grace-ms", &options.stop_grace_ms, &error) ||
      !ToInt(flags, "max-requeues", &max_requeues, &error) ||
      !ToInt(flags, "keep-samples-runs", &retention.max_runs_with_samples, &error) ||
      !ToInt(flags, "keep-trace-bytes", &retention.max_trace_bytes, &error) ||
      !ToInt(flags, "max-db-bytes", &max_db_bytes, &error)) {
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
  server::ServiceOptions service_options;
  service_options.model_dir = options.model_dir;
  service_options.allow_uploaded_aoti = options.allow_uploaded_aoti;
  int64_t max_priority = service_options.max_priority_without_admin;
  options.worker_max_rss_bytes =
      static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) / 4 * 3;
  if (!ToInt(flags, "worker-max-rss-bytes", &options.worker_max_rss_bytes, &error) ||
      !ToInt(flags, "worker-max-open-files", &options.worker_limits.max_open_files, &error)) {
    std::cerr << "gpubenchd: " << error << "\n";
    return 2;
  }
  if (!ToInt(flags, "max-model-bytes", &service_options.max_model_bytes, &error) ||
      !ToInt(flags, "models-quota-bytes", &service_options.models_quota_bytes, &error) ||
      !ToInt(flags, "max-priority", &max_priority, &error)) {
    std::cerr << "gpubenchd: " << error << "\n";
    return 2;
  }
  service_options.max_priority_without_admin = static_cast<int>(std::min<int64_t>(max_priority, 1000));
  for (const std::string& dir : {data_dir, options.model_dir}) {
    if (auto s = MakeDirs(dir); !s.ok()) {
      std::cerr << "gpubenchd: " << s.message() << "\n";
      return 1;
    }
  }
  // One daemon per data directory: two would both recover and run its queue.
  auto lock = DataDirLock::Acquire(data_dir);
  if (!lock.ok()) {
    std::cerr << "gpubenchd: " << lock.status().message() << "\n";
    return 1;
  }
  // An upload cut off by a crash leaves its temporary file; nothing else
  // would ever remove it.
  RemoveLeftoverUploads(options.model_dir);

  // A damaged database stops start-up, saying why; it is never rewritten.
  storage::StoreOptions store_options;
  store_options.path = data_dir + "/gpubench.db";
  store_options.check_integrity = true;
  store_options.max_bytes = max_db_bytes;
  auto store = storage::Store::Open(store_options);
  if (!store.ok()) {
    std::cerr << "gpubenchd: " << store.status().message() << "\n";
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
  std::string token, cert, key, client_ca;
  for (auto [flag, out] : {std::pair<const char*, std::string*>{"token-file", &token},
                           {"tls-cert", &cert}, {"tls-key", &key},
                           {"tls-client-ca", &client_ca}}) {
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
  if (!client_ca.empty()) {
    if (cert.empty()) {
      std::cerr << "gpubenchd: --tls-client-ca needs --tls-cert and --tls-key\n";
      return 2;
    }
    auto role = server::ParseRole(flags.count("client-cert-role") ? flags["client-cert-role"]
                                                                  : "submit");
    if (!role.ok()) {
      std::cerr << "gpubenchd: --client-cert-role: " << role.status().message() << "\n";
      return 2;
    }
    auth_options.client_cert_role = *role;
  }
  // Callers must prove who they are: a token, or a verified client certificate.
  const bool tokens_required = !auth_options.tokens.empty() || !client_ca.empty();
  if (cert.empty() != key.empty()) {
    std::cerr << "gpubenchd: --tls-cert and --tls-key go together\n";
    return 2;
  }
  if (!IsLoopbackAddress(listen)) {
    if (!Switch(flags, "insecure") && (cert.empty() || !tokens_required)) {
      std::cerr << "gpubenchd: refusing to listen on " << listen
                << " without TLS and tokens: anyone who reaches it could run jobs on this "
                   "host. Give --tls-cert, --tls-key and --token-file (README, Security), "
                   "listen on 127.0.0.1, or pass --insecure on a network you trust\n";
      return 2;
    }
    if (!tokens_required) {
      // (With tokens, plaintext is refused below: they could not be checked.)
      std::cerr << "gpubenchd: WARNING: --insecure: serving " << listen << " without "
                << (cert.empty() ? "TLS and " : "") << "tokens; any client that reaches this "
                   "port may submit jobs as admin\n";
    }
  }
  auto auth = server::Authorizer::Create(std::move(auth_options));
  if (!auth.ok()) {
    std::cerr << "gpubenchd: " << auth.status().message() << "\n";
    return 1;
  }
  grpc::SslServerCredentialsOptions ssl;
  if (!cert.empty()) {
    ssl.pem_key_cert_pairs.push_back({key, cert});
    if (!client_ca.empty()) {
      ssl.pem_root_certs = client_ca;
      ssl.client_certificate_request =
          GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    }
  }
  auto credentials = server::ServerCredentialsFor(listen, cert.empty() ? nullptr : &ssl, *auth);
  if (!credentials.ok()) {
    std::cerr << "gpubenchd: " << credentials.status().message() << "\n";
    return 2;
  }
  server::BenchServiceImpl service(&jobs, &scheduler, store->get(), auth->get(),
                                   service_options);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, *credentials, &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(8 << 20);
  // What the CLI accepts (client/fleet.cc); a larger reply would fail there.
  builder.SetMaxSendMessageSize(64 << 20);
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
  // Where `gpubench run` finds this daemon: the address with the port chosen.
  const std::string served =
      absl::EndsWith(listen, ":0") ? absl::StrCat(listen.substr(0, listen.size() - 1), port)
                                   : listen;
  if (auto s = (*lock)->SetAddress(served); !s.ok()) {
    std::cerr << "gpubenchd: warning: " << s.message() << "\n";
  }
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
