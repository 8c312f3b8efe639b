#include "server/daemon.h"

#include <dirent.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/address.h"
#include "common/log.h"
#include "common/version.h"
#include "server/host_probe.h"
#include "launcher/confine.h"
#include "launcher/process.h"

namespace gpubench::server {
namespace {

// A setting gpubenchd cannot serve with (it exits 2).
absl::Status Usage(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}
// What the host refused (it exits 1).
absl::Status Refused(absl::string_view message) {
  return absl::FailedPreconditionError(message);
}

// chmod go-rwx on the data directory and what the daemon keeps there (an
// older version, or a umask of 022, left them readable by every local user).
void MakePrivate(const std::string& data_dir) {
  chmod(data_dir.c_str(), 0700);
  for (const std::string& dir : {data_dir, data_dir + "/models"}) {
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) continue;
    while (dirent* e = readdir(d)) {
      const std::string path = dir + "/" + e->d_name;
      struct stat st;
      if (e->d_name[0] == '.' || lstat(path.c_str(), &st) != 0) continue;
      if (S_ISREG(st.st_mode)) chmod(path.c_str(), st.st_mode & 0700);
      if (S_ISDIR(st.st_mode)) chmod(path.c_str(), 0700);
    }
    closedir(d);
  }
}

// Deletes what a crash left behind in dir: the entries named prefix*
// (an upload's ".upload-" temporaries, a worker's "worker-" scratch
// folder); nothing else would ever remove them. The number removed.
int RemoveLeftovers(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> stale;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (absl::StartsWith(e->d_name, prefix)) stale.push_back(e->d_name);
    }
    closedir(d);
  }
  for (const std::string& name : stale) RemoveTree(dir + "/" + name);
  return static_cast<int>(stale.size());
}

// The files the credentials come from, read whole.
struct Secrets {
  std::string token, cert, key, client_ca;
};

absl::StatusOr<Secrets> ReadSecrets(const DaemonConfig& c) {
  Secrets s;
  for (auto [flag, path, out] :
       {std::tuple<const char*, std::string, std::string*>{
            "token-file", c.token_file, &s.token},
        {"tls-cert", c.tls_cert, &s.cert},
        {"tls-key", c.tls_key, &s.key},
        {"tls-client-ca", c.tls_client_ca, &s.client_ca}}) {
    if (path.empty()) continue;
    std::ifstream in(path);
    if (!in) return Usage(absl::StrCat("--", flag, ": cannot read ", path));
    try {
      out->assign(std::istreambuf_iterator<char>(in), {});
    } catch (const std::ios_base::failure&) {  // a directory: read(2) says EISDIR
      return Usage(absl::StrCat("--", flag, ": cannot read ", path));
    }
  }
  return s;
}

// Who may call, from the secrets; refuses what would expose the host.
absl::StatusOr<AuthOptions> AuthFor(const DaemonConfig& c, Secrets* secrets) {
  AuthOptions auth;
  if (!c.token_file.empty()) {
    auto tokens = ParseTokenFile(secrets->token);
    secrets->token.clear();  // only hashes are kept
    if (!tokens.ok()) {
      return Usage(absl::StrCat("--token-file ", c.token_file, ": ",
                                tokens.status().message()));
    }
    auth.tokens = std::move(*tokens);
  }
  if (!secrets->client_ca.empty()) {
    if (secrets->cert.empty())
      return Usage("--tls-client-ca needs --tls-cert and --tls-key");
    auto role = ParseRole(c.client_cert_role);
    if (!role.ok())
      return Usage(
          absl::StrCat("--client-cert-role: ", role.status().message()));
    auth.client_cert_role = *role;
  }
  // Callers must prove who they are: a token, or a verified client certificate.
  const bool tokens_required =
      !auth.tokens.empty() || !secrets->client_ca.empty();
  if (secrets->cert.empty() != secrets->key.empty()) {
    return Usage("--tls-cert and --tls-key go together");
  }
  if (!IsLoopbackAddress(c.listen)) {
    if (!c.insecure && (secrets->cert.empty() || !tokens_required)) {
      return Usage(absl::StrCat(
          "refusing to listen on ", c.listen,
          " without TLS and tokens: anyone who reaches it could run jobs on "
          "this "
          "host. Give --tls-cert, --tls-key and --token-file (docs/security.md), "
          "listen on 127.0.0.1, or pass --insecure on a network you trust"));
    }
    if (!tokens_required) {
      // (With tokens, plaintext is refused later: they could not be checked.)
      Log(LogLevel::kWarning, "--insecure: serving ", c.listen, " without ",
          secrets->cert.empty() ? "TLS and " : "",
          "tokens; any client that reaches this port may submit jobs as admin");
    }
  }
  if (!c.metrics_listen.empty() && !IsLoopbackAddress(c.metrics_listen) &&
      secrets->cert.empty() && !c.insecure) {
    return Usage(absl::StrCat(
        "refusing --metrics-listen ", c.metrics_listen,
        " without TLS: tokens and job data would cross the network in the "
        "clear. "
        "Give --tls-cert and --tls-key (HTTPS), listen on 127.0.0.1, or pass "
        "--insecure on a network you trust"));
  }
  return auth;
}

}  // namespace

absl::Status PrepareDataDir(DaemonConfig* config) {
  worker::WorkerLimits& limits = config->jobs.worker_limits;
  // The daemon's files are private whatever umask it was started with: the
  // data directory 0700, the database and the models 0600.
  umask(077);
  for (const std::string& dir :
       {config->data_dir, config->jobs.model_dir, limits.scratch_root}) {
    if (auto s = MakeDirs(dir); !s.ok()) return Refused(s.message());
  }
  MakePrivate(config->data_dir);
  // Absolute: it becomes each worker's TMPDIR.
  limits.scratch_root = RealPath(limits.scratch_root);
  if (config->worker_user.empty()) return absl::OkStatus();
  auto run_as = worker::WorkerUser(config->worker_user);
  if (!run_as.ok()) return Usage(run_as.status().message());
  limits.run_as = *run_as;
  // The worker user reaches its scratch folder (its TMPDIR, by an
  // absolute path) through these two, and lists neither; every file here
  // stays 0600 and every other folder 0700.
  for (const std::string& dir : {config->data_dir, limits.scratch_root})
    chmod(dir.c_str(), 0711);
  if (auto s = worker::WorkerUserReaches(*run_as, limits.scratch_root);
      !s.ok()) {
    return Usage(s.message());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(DaemonConfig config) {
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(config)));
  if (auto s = daemon->Open(); !s.ok()) return s;
  if (auto s = daemon->Serve(); !s.ok()) return s;
  return daemon;
}

// The data directory's lock, its leftovers, the store and the host.
absl::Status Daemon::Open() {
  const worker::WorkerLimits& limits = config_.jobs.worker_limits;
  // One daemon per data directory: two would both recover and run its queue.
  auto lock = DataDirLock::Acquire(config_.data_dir);
  if (!lock.ok()) return Refused(lock.status().message());
  lock_ = std::move(*lock);
  if (const int removed = RemoveLeftovers(config_.jobs.model_dir, ".upload-");
      removed > 0) {
    Log(LogLevel::kInfo, "removed ", removed, " unfinished upload(s) from ",
        config_.jobs.model_dir);
  }
  // Scratch folders of workers a crash left behind (this daemon holds the
  // lock: none of them is in use).
  RemoveLeftovers(limits.scratch_root, "worker-");
  // A damaged database stops start-up, saying why; it is never rewritten.
  storage::StoreOptions store_options;
  store_options.path = config_.data_dir + "/gpubench.db";
  store_options.check_integrity = true;
  store_options.max_bytes = config_.max_db_bytes;
  auto store = storage::Store::Open(store_options);
  if (!store.ok()) return Refused(store.status().message());
  store_ = std::move(*store);
  std::string warning;
  host_ = ProbeHost(config_.listen, config_.jobs.worker_path, &warning);
  if (!warning.empty()) Log(LogLevel::kWarning, warning);
  host_.set_worker_confinement(
      limits.confine || worker::LandlockAbi() == 0
          ? worker::ConfinementSummary()
          : "none (gpubenchd --confine-workers=false)");
  if (limits.run_as) {
    host_.set_worker_confinement(absl::StrCat(
        host_.worker_confinement(), "; as user ", limits.run_as->name()));
  }
  host_.set_unconfined_user_models_allowed(
      !limits.confine && config_.allow_unconfined_user_models);
  if (!limits.confine) {
    Log(LogLevel::kWarning,
        "workers run unconfined: ", host_.worker_confinement(),
        config_.allow_unconfined_user_models
            ? "; user models from any submitter run anyway "
              "(--allow-unconfined-user-models)"
            : "; user models need the admin role");
  }
  RecoverClocks();
  if (auto s = store_->hosts().Put(host_); !s.ok()) return Refused(s.message());
  if (auto pruned = store_->runs().Prune(config_.jobs.retention);
      !pruned.ok()) {
    Log(LogLevel::kError, "retention: ", pruned.status().message());
  }
  return absl::OkStatus();
}

// What a daemon that died mid-run left set on its GPUs (power limits,
// clock locks) is undone before anything runs, whether or not this one
// allows clock control; with --allow-clock-control the runs may set them.
void Daemon::RecoverClocks() {
  const std::string state = config_.data_dir + "/clock_state";
  if (!config_.allow_clock_control && access(state.c_str(), F_OK) != 0) return;
  std::string why;
  std::shared_ptr<nvml::Library> nvml = nvml::Library::Open(&why);
  if (nvml == nullptr && config_.allow_clock_control) {
    Log(LogLevel::kWarning, "--allow-clock-control: no NVML (", why,
        "): runs that set clocks or power limits fail");
  }
  clock_control_ = std::make_unique<ClockControl>(nvml, state);
  auto undone = clock_control_->RecoverAtStart();
  if (!undone.ok()) {
    Log(LogLevel::kError, "clock control: could not undo what the last daemon left set (",
        undone.status().message(), "); ", state, " keeps it for the next start");
  } else {
    for (const std::string& line : *undone) {
      Log(LogLevel::kWarning, "clock control: the last daemon stopped mid-run; undone: ", line);
    }
  }
  if (config_.allow_clock_control) config_.jobs.clock_control = clock_control_.get();
}

// The queue, the scheduler and the servers, then ready.
absl::Status Daemon::Serve() {
  jobs_ = std::make_unique<JobManager>(config_.jobs, store_.get(), host_);
  scheduler_ = std::make_unique<Scheduler>(jobs_.get(), store_.get());
  Scheduler* scheduler = scheduler_.get();
  jobs_->SetRunHook([scheduler](const v1::Job& job, v1::Run* run) {
    scheduler->CompareWithHistory(job, run);
  });
  Listening listening;
  if (auto s = Listen(&listening); !s.ok()) return s;
  // Not ready until the queue is recovered; not ready again once stopping.
  SetServing(false);
  if (auto s = jobs_->Start(); !s.ok()) {
    return Refused(absl::StrCat("recovery failed: ", s.message()));
  }
  scheduler_->Start();
  if (!config_.metrics_listen.empty()) {
    HttpOptions http_options;
    http_options.listen = config_.metrics_listen;
    http_options.tls_cert_file = config_.tls_cert;
    http_options.tls_key_file = config_.tls_key;
    http_options.metrics_without_token = config_.metrics_without_token;
    auto started = HttpFront::Start(http_options, jobs_.get(), store_.get(), auth_.get());
    if (!started.ok()) return Usage(started.status().message());
    http_ = *std::move(started);
  }
  SetServing(true);
  Announce(listening);
  return absl::OkStatus();
}

// The credentials, the authorizer, BenchService's server and the health
// port's.
absl::Status Daemon::Listen(Listening* listening) {
  auto secrets = ReadSecrets(config_);
  if (!secrets.ok()) return secrets.status();
  auto auth_options = AuthFor(config_, &*secrets);
  if (!auth_options.ok()) return auth_options.status();
  listening->tls = !secrets->cert.empty();
  listening->tokens_required = !auth_options->tokens.empty() || !secrets->client_ca.empty();
  auto auth = Authorizer::Create(std::move(*auth_options));
  if (!auth.ok()) return Refused(auth.status().message());
  auth_ = *auth;
  grpc::SslServerCredentialsOptions ssl;
  if (listening->tls) {
    ssl.pem_key_cert_pairs.push_back({secrets->key, secrets->cert});
    if (!secrets->client_ca.empty()) {
      ssl.pem_root_certs = secrets->client_ca;
      ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    }
  }
  auto credentials =
      ServerCredentialsFor(config_.listen, listening->tls ? &ssl : nullptr, auth_);
  if (!credentials.ok()) return Usage(credentials.status().message());
  service_ = std::make_unique<BenchServiceImpl>(jobs_.get(), scheduler_.get(), store_.get(),
                                                auth_.get(), config_.service);
  // The standard services fleets' tools speak: grpc.health.v1.Health (for
  // Kubernetes' probes and load balancers; it answers without a token, see
  // auth.cc) and server reflection (grpcurl and the like; the read role).
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config_.listen, *credentials, &listening->port);
  builder.RegisterService(service_.get());
  builder.SetMaxReceiveMessageSize(8 << 20);
  // What the CLI accepts (client/fleet.cc); a larger reply would fail there.
  builder.SetMaxSendMessageSize(64 << 20);
  server_ = builder.BuildAndStart();
  if (!server_ || listening->port == 0) {
    return Refused(absl::StrCat("cannot listen on ", config_.listen));
  }
  if (config_.health_listen.empty()) return absl::OkStatus();
  // The health service alone on a port of its own, for probes that speak no
  // TLS: it says whether the daemon serves and nothing else (no BenchService
  // there; reflection lists only health).
  grpc::ServerBuilder health_builder;
  health_builder.AddListeningPort(config_.health_listen, grpc::InsecureServerCredentials(),
                                  &listening->health_port);
  health_builder.SetMaxReceiveMessageSize(4 << 10);
  // gRPC 1.51 gives this server (no callback service) a second listening
  // socket per poller through SO_REUSEPORT, and with port 0 binds that one
  // to a port of its own: one port, the one logged below.
  health_builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  health_server_ = health_builder.BuildAndStart();
  if (!health_server_ || listening->health_port == 0) {
    return Refused(absl::StrCat("--health-listen: cannot listen on ", config_.health_listen));
  }
  return absl::OkStatus();
}

// Where `gpubench run` and --port-file's reader find this daemon, and the
// log line that says it serves.
void Daemon::Announce(const Listening& l) {
  const std::string& listen = config_.listen;
  const std::string served =
      absl::EndsWith(listen, ":0") ? absl::StrCat(listen.substr(0, listen.size() - 1), l.port)
                                   : listen;
  if (auto s = lock_->SetAddress(served); !s.ok()) Log(LogLevel::kWarning, "", s.message());
  if (!config_.port_file.empty()) {
    const std::string tmp = config_.port_file + ".tmp";
    std::ofstream out(tmp);
    out << l.port << "\n";
    if (http_) out << http_->port() << "\n";  // the metrics port, when serving one
    out.close();
    std::rename(tmp.c_str(), config_.port_file.c_str());
  }
  Log(LogLevel::kInfo, "gpubenchd ", kGpubenchVersion, " serving on ", listen, " (port ", l.port,
      l.tls ? ", TLS" : "", l.tokens_required ? ", token required" : "", "), data in ",
      config_.data_dir, ", ", host_.gpus_size(), " GPU(s)",
      http_ ? absl::StrCat("; metrics and HTML view on ", config_.metrics_listen, " (port ",
                           http_->port(), l.tls ? ", HTTPS" : "", ")")
            : "",
      health_server_
          ? absl::StrCat("; health on ", config_.health_listen, " (port ", l.health_port, ")")
          : "");
}

void Daemon::SetServing(bool serving) {
  for (grpc::Server* s : {server_.get(), health_server_.get()}) {
    grpc::HealthCheckServiceInterface* health =
        s ? s->GetHealthCheckService() : nullptr;
    if (health == nullptr) continue;
    health->SetServingStatus(serving);
    health->SetServingStatus(v1::BenchService::service_full_name(), serving);
  }
}

void Daemon::Shutdown() {
  if (stopped_) return;
  stopped_ = true;
  SetServing(false);
  // In-flight calls get a moment, then are cancelled.
  if (http_) http_->Stop();
  if (scheduler_) scheduler_->Stop();
  if (jobs_) jobs_->Shutdown();
  if (server_)
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(2));
  if (health_server_)
    health_server_->Shutdown(std::chrono::system_clock::now());
}

}  // namespace gpubench::server
