// gpubenchd: the daemon. See README.md.
//   gpubenchd [--listen 127.0.0.1:50051] [--data-dir DIR] [--config FILE] ...
// Every flag may also be given in the config file as "name = value" lines
// (without the dashes); flags on the command line win. `gpubenchd --help`
// lists them (from the ABSL_FLAG definitions below).
#include <dirent.h>
#include <sys/stat.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/address.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/version.h"
#include "server/confinement_check.h"
#include "server/http_front.h"
#include "server/job_manager.h"
#include "server/scheduler.h"
#include "server/service.h"
#include "storage/store.h"
#include "worker/confine.h"
#include "worker/process.h"

namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

}  // namespace

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "address to serve: HOST:PORT (port 0 picks one) or unix:PATH");
ABSL_FLAG(std::string, data_dir, "",
          "SQLite file, models and traces (default: the user's data directory, "
          "/var/lib/gpubench under systemd)");
ABSL_FLAG(std::string, config, "",
          "a file of \"name = value\" lines for any flag here; the command line wins");
ABSL_FLAG(std::string, worker, "", "gpubench-worker binary (default: beside gpubenchd)");
ABSL_FLAG(int64_t, max_queue, 1000, "queued jobs before RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_queued_per_submitter, 0,
          "queued jobs of one submitter (token name, certificate subject or anonymous) before "
          "RESOURCE_EXHAUSTED (0: half of --max-queue)");
ABSL_FLAG(int64_t, upload_idle_timeout_ms, 30000,
          "an upload that sends nothing for this long is cancelled and its share of "
          "--models-quota-bytes freed (0: never)");
ABSL_FLAG(int64_t, upload_min_bytes_per_second, 1 << 20,
          "an upload not finished within --upload-idle-timeout-ms plus its size at this "
          "rate is cancelled and its share of --models-quota-bytes freed, so that a trickle "
          "cannot hold it (0: no floor)");
ABSL_FLAG(int64_t, max_job_seconds, 86400, "longest a job may run; bounds spec timeout_s");
ABSL_FLAG(int64_t, stop_grace_ms, 10000, "SIGTERM to SIGKILL delay for cancel and shutdown");
ABSL_FLAG(int64_t, max_requeues, 1, "times an interrupted job is requeued");
ABSL_FLAG(int64_t, keep_samples_runs, 0, "keep the samples of the newest N runs (0: all)");
ABSL_FLAG(int64_t, keep_trace_bytes, 0, "keep the newest traces within N bytes (0: all)");
ABSL_FLAG(std::string, port_file, "",
          "write the bound port here once serving (and on a second line the metrics port)");
ABSL_FLAG(int64_t, max_db_bytes, 16 * kGiB,
          "the database grows no larger; beyond, submits are refused with "
          "RESOURCE_EXHAUSTED (0: the disk)");
ABSL_FLAG(std::string, token_file, "",
          "accepted tokens, one \"SHA256HEX NAME ROLE\" line each (role read, submit or "
          "admin); a file with one bare token is that token as admin. Every call then needs "
          "\"authorization: Bearer\"");
ABSL_FLAG(std::string, tls_cert, "", "serve TLS with this PEM certificate chain (with --tls-key)");
ABSL_FLAG(std::string, tls_key, "", "the PEM private key of --tls-cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "mutual TLS: require client certificates signed by these PEM roots; a "
          "certificate's subject is the caller's name");
ABSL_FLAG(std::string, client_cert_role, "submit",
          "role of a caller known by its certificate alone; a token, when sent, decides instead");
ABSL_FLAG(int64_t, max_model_bytes, 2 * kGiB, "largest model upload");
ABSL_FLAG(int64_t, models_quota_bytes, 20 * kGiB, "all uploaded models together");
ABSL_FLAG(int64_t, worker_max_rss_bytes, -1,
          "a worker whose resident memory (with its children: execution aot's compiler) "
          "passes this is killed and its run failed, saying so (-1: 3/4 of this host's "
          "memory; 0: no limit)");
ABSL_FLAG(int64_t, worker_max_open_files, 4096, "RLIMIT_NOFILE of each worker");
ABSL_FLAG(int64_t, worker_max_scratch_bytes, 4 * kGiB,
          "a worker whose scratch folder (DATA_DIR/work/worker-*, the one place it may write) "
          "holds more is killed and its run failed, saying so (0: no limit)");
ABSL_FLAG(int64_t, max_priority, 10, "highest spec.priority without the admin role");
ABSL_FLAG(std::vector<std::string>, model_root, {},
          "params.model_path may name files under this directory (repeatable; default none: "
          "only uploaded models run)");
ABSL_FLAG(bool, allow_uploaded_aoti, false,
          "run uploaded AOTInductor packages (native code) even when the uploader did not "
          "hold the admin role");
ABSL_FLAG(bool, confine_workers, true,
          "each worker confines itself (Landlock, no_new_privs, no execve): it reads only the "
          "system's libraries, the GPU devices and the model it was given, and writes only its "
          "scratch folder (false: unconfined; user models then need admin)");
ABSL_FLAG(std::string, worker_user, "",
          "run each worker as this user (a daemon started as root): it opens its models as the "
          "daemon's user, then becomes this one for good; the data directory and its work "
          "folder become 0711 (passable, not listable) so its scratch folder is reachable");
ABSL_FLAG(bool, allow_unconfined_user_models, false,
          "where workers run unconfined (no Landlock, or --confine-workers=false), still run "
          "user models (torchscript) from callers below admin: they can then read and write "
          "whatever the daemon's user can");
ABSL_FLAG(std::vector<std::string>, worker_read_path, {},
          "a further folder confined workers may read (repeatable), for a GPU stack installed "
          "outside the usual places");
ABSL_FLAG(bool, check_confinement, false,
          "start a worker confined as a job's, have it try to read the data directory, the "
          "database, the token file, the TLS key, /etc/shadow and --check-confinement-path, "
          "and to write outside its scratch folder, print what happened and exit (0: all "
          "denied)");
ABSL_FLAG(std::vector<std::string>, check_confinement_path, {},
          "with --check-confinement, further files the worker must not read");
ABSL_FLAG(std::string, metrics_listen, "",
          "serve Prometheus metrics (/metrics) and a read-only HTML view of recent jobs (/) "
          "on this HOST:PORT (HTTPS with --tls-cert; the read role when tokens are on; "
          "default: off)");
ABSL_FLAG(std::string, health_listen, "",
          "also serve gRPC's health service alone, in plaintext and without a token, on this "
          "HOST:PORT (Kubernetes' gRPC probes speak no TLS; default: off)");
ABSL_FLAG(bool, metrics_without_token, false,
          "serve /metrics without a token even when tokens are on (for scrapers that cannot "
          "send one); the HTML view still needs one");
ABSL_FLAG(std::string, python, "python3",
          "the Python with PyTorch (the wheel whose LibTorch the worker links) that compiles "
          "execution aot's packages");
ABSL_FLAG(int64_t, aot_cache_bytes, 20 * kGiB,
          "compiled AOTInductor packages kept in DATA_DIR/aot-cache; the least recently used "
          "go first (0: no limit)");
ABSL_FLAG(bool, verbose, false,
          "log debug lines too (-v): each worker started, each run stored, each call the "
          "authorizer refused");
ABSL_FLAG(bool, insecure, false,
          "allow a non-loopback --listen without TLS and tokens (anyone who reaches the port "
          "may submit jobs)");

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

// A flag that must not be negative; false (and error) when it is.
bool NonNegative(const char* name, int64_t value, std::string* error) {
  if (value >= 0) return true;
  *error = absl::StrCat("--", name, ": must be >= 0, got ", value);
  return false;
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
    gpubench::Log(gpubench::LogLevel::kInfo, "removed ", removed, " unfinished upload(s) from ", model_dir);
  }
}


}  // namespace

int main(int argc, char** argv) {
  using namespace gpubench;
  FlagParser parser;
  auto positional = parser.Parse(argc, argv);
  if (parser.help_requested()) {
    std::cout << "usage: gpubenchd [flags]   (--name value or --name=value)\n"
              << FlagsHelp("server/main.cc");
    return 0;
  }
  if (parser.version_requested()) {
    // The LibTorch, CUDA and cuDNN of the worker this daemon would start.
    const std::string worker = absl::GetFlag(FLAGS_worker).empty()
                                   ? worker::DefaultWorkerPath()
                                   : absl::GetFlag(FLAGS_worker);
    std::string warning;
    const v1::HostInfo probed = server::ProbeHost("", worker, &warning);
    std::cout << VersionText("gpubenchd", warning.empty() ? &probed : nullptr, warning);
    return warning.empty() ? 0 : 1;
  }
  if (positional.ok() && !positional->empty()) {
    positional = absl::InvalidArgumentError(absl::StrCat("unexpected argument \"",
                                                         positional->front(), "\""));
  }
  absl::Status parsed = positional.status();
  if (parsed.ok() && !absl::GetFlag(FLAGS_config).empty()) {
    parsed = parser.ApplyConfigFile(absl::GetFlag(FLAGS_config));
  }
  if (!parsed.ok()) {
    Log(LogLevel::kError, parsed.message(), " (gpubenchd --help lists the flags)");
    return 2;
  }
  SetLogVerbose(absl::GetFlag(FLAGS_verbose));
  std::string error;
  // Before any thread or child exists: a worker dying mid-write must not
  // SIGPIPE the daemon, and SIGTERM always means a clean shutdown.
  if (geteuid() == 0 && absl::GetFlag(FLAGS_worker_user).empty()) {
    Log(LogLevel::kWarning,
        "running as root; workers load user models as root too (confined, without "
        "capabilities). Run it as an unprivileged user (deploy/gpubenchd.service), or give "
        "workers one (--worker-user)");
  }
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  server::DaemonOptions options;
  storage::RetentionLimits& retention = options.retention;
  const int64_t max_queue = absl::GetFlag(FLAGS_max_queue);
  const int64_t max_requeues = absl::GetFlag(FLAGS_max_requeues);
  const int64_t max_db_bytes = absl::GetFlag(FLAGS_max_db_bytes);  // no client fills the disk
  const int64_t max_priority = absl::GetFlag(FLAGS_max_priority);
  options.max_job_seconds = absl::GetFlag(FLAGS_max_job_seconds);
  options.stop_grace_ms = absl::GetFlag(FLAGS_stop_grace_ms);
  retention.max_runs_with_samples = absl::GetFlag(FLAGS_keep_samples_runs);
  retention.max_trace_bytes = absl::GetFlag(FLAGS_keep_trace_bytes);
  options.worker_max_rss_bytes = absl::GetFlag(FLAGS_worker_max_rss_bytes);
  options.worker_max_scratch_bytes = absl::GetFlag(FLAGS_worker_max_scratch_bytes);
  options.worker_limits.max_open_files = absl::GetFlag(FLAGS_worker_max_open_files);
  server::ServiceOptions service_options;
  service_options.max_model_bytes = absl::GetFlag(FLAGS_max_model_bytes);
  service_options.models_quota_bytes = absl::GetFlag(FLAGS_models_quota_bytes);
  if (!NonNegative("max-queue", max_queue, &error) ||
      !NonNegative("max-requeues", max_requeues, &error) ||
      !NonNegative("max-db-bytes", max_db_bytes, &error) ||
      !NonNegative("max-priority", max_priority, &error) ||
      !NonNegative("stop-grace-ms", options.stop_grace_ms, &error) ||
      !NonNegative("keep-samples-runs", retention.max_runs_with_samples, &error) ||
      !NonNegative("keep-trace-bytes", retention.max_trace_bytes, &error) ||
      !NonNegative("worker-max-open-files", options.worker_limits.max_open_files, &error) ||
      !NonNegative("worker-max-scratch-bytes", options.worker_max_scratch_bytes, &error) ||
      !NonNegative("max-model-bytes", service_options.max_model_bytes, &error) ||
      !NonNegative("models-quota-bytes", service_options.models_quota_bytes, &error) ||
      !NonNegative("aot-cache-bytes", absl::GetFlag(FLAGS_aot_cache_bytes), &error) ||
      !NonNegative("max-queued-per-submitter", absl::GetFlag(FLAGS_max_queued_per_submitter),
                   &error) ||
      !NonNegative("upload-idle-timeout-ms", absl::GetFlag(FLAGS_upload_idle_timeout_ms),
                   &error) ||
      !NonNegative("upload-min-bytes-per-second",
                   absl::GetFlag(FLAGS_upload_min_bytes_per_second), &error)) {
    Log(LogLevel::kError, error);
    return 2;
  }
  if (options.max_job_seconds < 1) {
    Log(LogLevel::kError, "--max-job-seconds: must be at least 1");
    return 2;
  }
  if (options.worker_max_rss_bytes < 0) {
    options.worker_max_rss_bytes =
        static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) / 4 * 3;
  }
  options.max_queue = static_cast<int>(std::min<int64_t>(max_queue, 1 << 30));
  options.max_queued_per_submitter =
      static_cast<int>(std::min<int64_t>(absl::GetFlag(FLAGS_max_queued_per_submitter), 1 << 30));
  service_options.upload_idle_timeout =
      absl::Milliseconds(absl::GetFlag(FLAGS_upload_idle_timeout_ms));
  service_options.upload_min_bytes_per_second =
      absl::GetFlag(FLAGS_upload_min_bytes_per_second);
  options.max_requeues = static_cast<int>(std::min<int64_t>(max_requeues, 1 << 30));
  const std::string listen = absl::GetFlag(FLAGS_listen);
  std::string data_dir =
      absl::GetFlag(FLAGS_data_dir).empty() ? DefaultDataDir() : absl::GetFlag(FLAGS_data_dir);
  // Absolute: workers (in their scratch folders) find uploaded models by it.
  if (char cwd[PATH_MAX]; !data_dir.empty() && data_dir[0] != '/' && getcwd(cwd, sizeof(cwd))) {
    data_dir = std::string(cwd) + "/" + data_dir;
  }
  options.worker_path = absl::GetFlag(FLAGS_worker).empty() ? worker::DefaultWorkerPath()
                                                            : absl::GetFlag(FLAGS_worker);
  // A worker works in its scratch folder: a relative path would not lead
  // back to itself.
  if (const std::string real = RealPath(options.worker_path); !real.empty()) {
    options.worker_path = real;
  }
  options.model_dir = data_dir + "/models";
  for (const std::string& root : absl::GetFlag(FLAGS_model_root)) {
    auto canonical = CanonicalDir(root);
    if (!canonical.ok()) {
      Log(LogLevel::kError, "--model-root: ", canonical.status().message());
      return 2;
    }
    options.model_roots.push_back(*canonical);
  }
  options.allow_uploaded_aoti = absl::GetFlag(FLAGS_allow_uploaded_aoti);
  options.aot.set_python(absl::GetFlag(FLAGS_python));
  options.aot.set_cache_dir(data_dir + "/aot-cache");
  options.aot.set_cache_bytes(absl::GetFlag(FLAGS_aot_cache_bytes));
  // Confinement: the worker may not read what the daemon keeps private.
  worker::WorkerLimits& limits = options.worker_limits;
  limits.scratch_root = data_dir + "/work";
  limits.confine = absl::GetFlag(FLAGS_confine_workers) && worker::LandlockAbi() > 0;
  limits.protected_paths = {data_dir};
  for (const std::string& path :
       {absl::GetFlag(FLAGS_token_file), absl::GetFlag(FLAGS_tls_key),
        absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_client_ca),
        absl::GetFlag(FLAGS_config)}) {
    // Resolved here: a worker, in its scratch folder, would resolve a
    // relative one elsewhere and protect nothing.
    if (!path.empty()) {
      const std::string real = RealPath(path);
      limits.protected_paths.push_back(real.empty() ? path : real);
    }
  }
  limits.read_paths = absl::GetFlag(FLAGS_worker_read_path);
  const bool allow_unconfined = absl::GetFlag(FLAGS_allow_unconfined_user_models);
  service_options.user_models_need_admin = !limits.confine && !allow_unconfined;
  service_options.model_dir = options.model_dir;
  service_options.allow_uploaded_aoti = options.allow_uploaded_aoti;
  service_options.max_priority_without_admin =
      static_cast<int>(std::min<int64_t>(max_priority, 1000));
  // The daemon's files are private whatever umask it was started with: the
  // data directory 0700, the database and the models 0600.
  umask(077);
  for (const std::string& dir : {data_dir, options.model_dir, limits.scratch_root}) {
    if (auto s = MakeDirs(dir); !s.ok()) {
      Log(LogLevel::kError, s.message());
      return 1;
    }
  }
  MakePrivate(data_dir);
  // Absolute: it becomes each worker's TMPDIR.
  limits.scratch_root = RealPath(limits.scratch_root);
  if (const std::string user = absl::GetFlag(FLAGS_worker_user); !user.empty()) {
    auto run_as = worker::WorkerUser(user);
    if (!run_as.ok()) {
      Log(LogLevel::kError, run_as.status().message());
      return 2;
    }
    limits.run_as = *run_as;
    // The worker user reaches its scratch folder (its TMPDIR, by an
    // absolute path) through these two, and lists neither; every file
    // here stays 0600 and every other folder 0700.
    for (const std::string& dir : {data_dir, limits.scratch_root}) chmod(dir.c_str(), 0711);
    if (auto s = worker::WorkerUserReaches(*run_as, limits.scratch_root); !s.ok()) {
      Log(LogLevel::kError, s.message());
      return 2;
    }
  }
  if (absl::GetFlag(FLAGS_check_confinement)) {
    if (!limits.confine) {
      Log(LogLevel::kError, "--check-confinement: workers run unconfined here: ",
          worker::LandlockAbi() > 0 ? "--confine-workers=false"
                                    : worker::ConfinementSummary());
      return 1;
    }
    const absl::Status checked =
        server::CheckConfinement(options.worker_path, limits, data_dir,
                                 absl::GetFlag(FLAGS_check_confinement_path), std::cout);
    if (!checked.ok()) Log(LogLevel::kError, checked.message());
    return checked.ok() ? 0 : 1;
  }
  // One daemon per data directory: two would both recover and run its queue.
  auto lock = DataDirLock::Acquire(data_dir);
  if (!lock.ok()) {
    Log(LogLevel::kError, lock.status().message());
    return 1;
  }
  // An upload cut off by a crash leaves its temporary file; nothing else
  // would ever remove it.
  RemoveLeftoverUploads(options.model_dir);
  // Scratch folders of workers a crash left behind (this daemon holds the
  // lock: none of them is in use).
  if (DIR* d = opendir(limits.scratch_root.c_str())) {
    std::vector<std::string> stale;
    while (dirent* e = readdir(d)) {
      if (absl::StartsWith(e->d_name, "worker-")) stale.push_back(e->d_name);
    }
    closedir(d);
    for (const std::string& name : stale) RemoveTree(limits.scratch_root + "/" + name);
  }

  // A damaged database stops start-up, saying why; it is never rewritten.
  storage::StoreOptions store_options;
  store_options.path = data_dir + "/gpubench.db";
  store_options.check_integrity = true;
  store_options.max_bytes = max_db_bytes;
  auto store = storage::Store::Open(store_options);
  if (!store.ok()) {
    Log(LogLevel::kError, store.status().message());
    return 1;
  }
  std::string warning;
  v1::HostInfo host = server::ProbeHost(listen, options.worker_path, &warning);
  if (!warning.empty()) Log(LogLevel::kWarning, warning);
  host.set_worker_confinement(
      limits.confine ? worker::ConfinementSummary()
      : worker::LandlockAbi() > 0
          ? "none (gpubenchd --confine-workers=false)"
          : worker::ConfinementSummary());
  if (limits.run_as) {
    host.set_worker_confinement(
        absl::StrCat(host.worker_confinement(), "; as user ", limits.run_as->name()));
  }
  host.set_unconfined_user_models_allowed(!limits.confine && allow_unconfined);
  if (!limits.confine) {
    Log(LogLevel::kWarning, "workers run unconfined: ", host.worker_confinement(),
        allow_unconfined ? "; user models from any submitter run anyway "
                           "(--allow-unconfined-user-models)"
                         : "; user models need the admin role");
  }
  if (auto s = (*store)->hosts().Put(host); !s.ok()) {
    Log(LogLevel::kError, s.message());
    return 1;
  }
  if (auto pruned = (*store)->runs().Prune(retention); !pruned.ok()) {
    Log(LogLevel::kError, "retention: ", pruned.status().message());
  }

  server::JobManager jobs(options, store->get(), host);
  server::Scheduler scheduler(&jobs, store->get());
  jobs.SetRunHook([&scheduler](const v1::Job& job, v1::Run* run) {
    scheduler.CompareWithHistory(job, run);
  });
  std::string token, cert, key, client_ca;
  const std::string token_file = absl::GetFlag(FLAGS_token_file);
  for (auto [flag, path, out] :
       {std::tuple<const char*, std::string, std::string*>{"token-file", token_file, &token},
        {"tls-cert", absl::GetFlag(FLAGS_tls_cert), &cert},
        {"tls-key", absl::GetFlag(FLAGS_tls_key), &key},
        {"tls-client-ca", absl::GetFlag(FLAGS_tls_client_ca), &client_ca}}) {
    if (path.empty()) continue;
    std::ifstream in(path);
    if (!in) {
      Log(LogLevel::kError, "--", flag, ": cannot read ", path);
      return 2;
    }
    out->assign(std::istreambuf_iterator<char>(in), {});
  }
  server::AuthOptions auth_options;
  if (!token_file.empty()) {
    auto tokens = server::ParseTokenFile(token);
    token.clear();  // only hashes are kept
    if (!tokens.ok()) {
      Log(LogLevel::kError, "--token-file ", token_file, ": ", tokens.status().message());
      return 2;
    }
    auth_options.tokens = std::move(*tokens);
  }
  if (!client_ca.empty()) {
    if (cert.empty()) {
      Log(LogLevel::kError, "--tls-client-ca needs --tls-cert and --tls-key");
      return 2;
    }
    auto role = server::ParseRole(absl::GetFlag(FLAGS_client_cert_role));
    if (!role.ok()) {
      Log(LogLevel::kError, "--client-cert-role: ", role.status().message());
      return 2;
    }
    auth_options.client_cert_role = *role;
  }
  // Callers must prove who they are: a token, or a verified client certificate.
  const bool tokens_required = !auth_options.tokens.empty() || !client_ca.empty();
  if (cert.empty() != key.empty()) {
    Log(LogLevel::kError, "--tls-cert and --tls-key go together");
    return 2;
  }
  if (!IsLoopbackAddress(listen)) {
    if (!absl::GetFlag(FLAGS_insecure) && (cert.empty() || !tokens_required)) {
      Log(LogLevel::kError, "refusing to listen on ", listen,
          " without TLS and tokens: anyone who reaches it could run jobs on this "
          "host. Give --tls-cert, --tls-key and --token-file (README, Security), "
          "listen on 127.0.0.1, or pass --insecure on a network you trust");
      return 2;
    }
    if (!tokens_required) {
      // (With tokens, plaintext is refused below: they could not be checked.)
      Log(LogLevel::kWarning, "--insecure: serving ", listen, " without ",
          cert.empty() ? "TLS and " : "",
          "tokens; any client that reaches this port may submit jobs as admin");
    }
  }
  const std::string metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  if (!metrics_listen.empty() && !IsLoopbackAddress(metrics_listen) && cert.empty() &&
      !absl::GetFlag(FLAGS_insecure)) {
    Log(LogLevel::kError, "refusing --metrics-listen ", metrics_listen,
        " without TLS: tokens and job data would cross the network in the clear. "
        "Give --tls-cert and --tls-key (HTTPS), listen on 127.0.0.1, or pass "
        "--insecure on a network you trust");
    return 2;
  }
  auto auth = server::Authorizer::Create(std::move(auth_options));
  if (!auth.ok()) {
    Log(LogLevel::kError, auth.status().message());
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
    Log(LogLevel::kError, credentials.status().message());
    return 2;
  }
  server::BenchServiceImpl service(&jobs, &scheduler, store->get(), auth->get(),
                                   service_options);
  // The standard services fleets' tools speak: grpc.health.v1.Health (for
  // Kubernetes' probes and load balancers; it answers without a token, see
  // auth.cc) and server reflection (grpcurl and the like; the read role).
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, *credentials, &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(8 << 20);
  // What the CLI accepts (client/fleet.cc); a larger reply would fail there.
  builder.SetMaxSendMessageSize(64 << 20);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    Log(LogLevel::kError, "cannot listen on ", listen);
    return 1;
  }
  // The health service alone on a port of its own, for probes that speak no
  // TLS: it says whether the daemon serves and nothing else (no BenchService
  // there; reflection lists only health).
  std::unique_ptr<grpc::Server> health_server;
  const std::string health_listen = absl::GetFlag(FLAGS_health_listen);
  int health_port = 0;
  if (!health_listen.empty()) {
    grpc::ServerBuilder health_builder;
    health_builder.AddListeningPort(health_listen, grpc::InsecureServerCredentials(),
                                    &health_port);
    health_builder.SetMaxReceiveMessageSize(4 << 10);
    // gRPC 1.51 gives this server (no callback service) a second listening
    // socket per poller through SO_REUSEPORT, and with port 0 binds that one
    // to a port of its own: one port, the one logged below.
    health_builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    health_server = health_builder.BuildAndStart();
    if (!health_server || health_port == 0) {
      Log(LogLevel::kError, "--health-listen: cannot listen on ", health_listen);
      return 1;
    }
  }
  // Not ready until the queue is recovered; not ready again once stopping.
  std::vector<grpc::HealthCheckServiceInterface*> healths = {server->GetHealthCheckService()};
  if (health_server) healths.push_back(health_server->GetHealthCheckService());
  auto set_serving = [&healths](bool serving) {
    for (grpc::HealthCheckServiceInterface* health : healths) {
      if (health == nullptr) continue;
      health->SetServingStatus(serving);
      health->SetServingStatus(v1::BenchService::service_full_name(), serving);
    }
  };
  set_serving(false);
  if (auto s = jobs.Start(); !s.ok()) {
    Log(LogLevel::kError, "recovery failed: ", s.message());
    return 1;
  }
  scheduler.Start();
  std::unique_ptr<server::HttpFront> http;
  if (!metrics_listen.empty()) {
    server::HttpOptions http_options;
    http_options.listen = metrics_listen;
    http_options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
    http_options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
    http_options.metrics_without_token = absl::GetFlag(FLAGS_metrics_without_token);
    auto started = server::HttpFront::Start(http_options, &jobs, store->get(), auth->get());
    if (!started.ok()) {
      Log(LogLevel::kError, started.status().message());
      scheduler.Stop();
      jobs.Shutdown();
      return 2;
    }
    http = *std::move(started);
  }
  set_serving(true);
  // Where `gpubench run` finds this daemon: the address with the port chosen.
  const std::string served =
      absl::EndsWith(listen, ":0") ? absl::StrCat(listen.substr(0, listen.size() - 1), port)
                                   : listen;
  if (auto s = (*lock)->SetAddress(served); !s.ok()) {
    Log(LogLevel::kWarning, "", s.message());
  }
  if (const std::string port_file = absl::GetFlag(FLAGS_port_file); !port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    std::ofstream out(tmp);
    out << port << "\n";
    if (http) out << http->port() << "\n";  // the metrics port, when serving one
    out.close();
    std::rename(tmp.c_str(), port_file.c_str());
  }
  Log(LogLevel::kInfo, "gpubenchd ", kGpubenchVersion, " serving on ", listen, " (port ", port,
      cert.empty() ? "" : ", TLS", tokens_required ? ", token required" : "", "), data in ",
      data_dir, ", ", host.gpus_size(), " GPU(s)",
      http ? absl::StrCat("; metrics and HTML view on ", metrics_listen, " (port ",
                          http->port(), cert.empty() ? "" : ", HTTPS", ")")
           : "",
      health_server ? absl::StrCat("; health on ", health_listen, " (port ", health_port, ")")
                    : "");

  while (!g_stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  Log(LogLevel::kInfo, "shutting down");
  set_serving(false);
  // Stop the queue first (running jobs get the grace period and end
  // INTERRUPTED, which watchers see), then the server: in-flight calls get a
  // moment, then are cancelled.
  if (http) http->Stop();
  scheduler.Stop();
  jobs.Shutdown();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (health_server) health_server->Shutdown(std::chrono::system_clock::now());
  Log(LogLevel::kInfo, "stopped");
  return 0;
}
