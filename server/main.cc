// gpubenchd: the daemon. See docs/daemon.md.
//   gpubenchd [--listen 127.0.0.1:50051] [--data-dir DIR] [--config FILE] ...
// Every flag may also be given in the config file as "name = value" lines
// (without the dashes); flags on the command line win. `gpubenchd --help`
// lists them (from the ABSL_FLAG definitions below). The flags become a
// DaemonConfig here; server/daemon.cc serves it.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <csignal>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/version.h"
#include "server/confinement_check.h"
#include "server/daemon.h"
#include "server/host_pairs.h"
#include "server/host_probe.h"
#include "launcher/confine.h"
#include "launcher/process.h"

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
ABSL_FLAG(double, max_db_share, 0.5,
          "one submitter's share of --max-db-bytes, in (0, 1]: a caller below admin whose "
          "stored jobs (with their runs, samples, traces and events) hold this much of it has "
          "its submits refused with RESOURCE_EXHAUSTED until `gpubench rm JOB` frees some");
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
ABSL_FLAG(bool, allow_clock_control, false,
          "runs may set their GPU's power limit and lock its clocks (spec power_limit_w, "
          "gpu_clocks) through NVML; each is undone after the run, after a worker crash, and "
          "at the next start after a daemon crash (DATA_DIR/clock_state). Needs root or the "
          "driver's permission");
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
ABSL_FLAG(std::string, pair_address, "",
          "IPV4:PORT on the network between hosts where this host's rank of a pair across "
          "hosts meets the other's (gpubench qualify --pairs): its rendezvous store listens "
          "on PORT, its all-reduce's connections on IPV4 (default: off; such pairs refused)");
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

using gpubench::server::DaemonConfig;

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

// A flag that must not be negative.
absl::Status NonNegative(const char* name, int64_t value) {
  if (value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--", name, ": must be >= 0, got ", value));
}

int Clamp(int64_t value, int64_t most) { return static_cast<int>(std::min(value, most)); }

// The numeric limits, each checked for range.
absl::Status ReadLimits(DaemonConfig* c) {
  gpubench::server::DaemonOptions& options = c->jobs;
  gpubench::server::ServiceOptions& service = c->service;
  gpubench::storage::RetentionLimits& retention = options.retention;
  const int64_t max_queue = absl::GetFlag(FLAGS_max_queue);
  const int64_t max_requeues = absl::GetFlag(FLAGS_max_requeues);
  const int64_t max_priority = absl::GetFlag(FLAGS_max_priority);
  c->max_db_bytes = absl::GetFlag(FLAGS_max_db_bytes);
  options.max_job_seconds = absl::GetFlag(FLAGS_max_job_seconds);
  options.stop_grace_ms = absl::GetFlag(FLAGS_stop_grace_ms);
  retention.max_runs_with_samples = absl::GetFlag(FLAGS_keep_samples_runs);
  retention.max_trace_bytes = absl::GetFlag(FLAGS_keep_trace_bytes);
  options.worker_max_rss_bytes = absl::GetFlag(FLAGS_worker_max_rss_bytes);
  options.worker_max_scratch_bytes = absl::GetFlag(FLAGS_worker_max_scratch_bytes);
  options.worker_limits.max_open_files = absl::GetFlag(FLAGS_worker_max_open_files);
  service.max_model_bytes = absl::GetFlag(FLAGS_max_model_bytes);
  service.models_quota_bytes = absl::GetFlag(FLAGS_models_quota_bytes);
  for (const auto& [name, value] : std::initializer_list<std::pair<const char*, int64_t>>{
           {"max-queue", max_queue},
           {"max-requeues", max_requeues},
           {"max-db-bytes", c->max_db_bytes},
           {"max-priority", max_priority},
           {"stop-grace-ms", options.stop_grace_ms},
           {"keep-samples-runs", retention.max_runs_with_samples},
           {"keep-trace-bytes", retention.max_trace_bytes},
           {"worker-max-open-files", options.worker_limits.max_open_files},
           {"worker-max-scratch-bytes", options.worker_max_scratch_bytes},
           {"max-model-bytes", service.max_model_bytes},
           {"models-quota-bytes", service.models_quota_bytes},
           {"aot-cache-bytes", absl::GetFlag(FLAGS_aot_cache_bytes)},
           {"max-queued-per-submitter", absl::GetFlag(FLAGS_max_queued_per_submitter)},
           {"upload-idle-timeout-ms", absl::GetFlag(FLAGS_upload_idle_timeout_ms)},
           {"upload-min-bytes-per-second", absl::GetFlag(FLAGS_upload_min_bytes_per_second)}}) {
    if (auto s = NonNegative(name, value); !s.ok()) return s;
  }
  if (options.max_job_seconds < 1) {
    return absl::InvalidArgumentError("--max-job-seconds: must be at least 1");
  }
  const double share = absl::GetFlag(FLAGS_max_db_share);
  if (!(share > 0 && share <= 1)) {  // NaN too
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-db-share: must be a fraction in (0, 1] of --max-db-bytes, got ", share));
  }
  service.max_db_share = share;
  service.max_submitter_db_bytes =
      c->max_db_bytes > 0 ? std::max<int64_t>(1, static_cast<int64_t>(share * c->max_db_bytes))
                          : 0;
  if (options.worker_max_rss_bytes < 0) {
    options.worker_max_rss_bytes =
        static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) / 4 * 3;
  }
  options.max_queue = Clamp(max_queue, 1 << 30);
  options.max_queued_per_submitter = Clamp(absl::GetFlag(FLAGS_max_queued_per_submitter), 1 << 30);
  options.max_requeues = Clamp(max_requeues, 1 << 30);
  service.upload_idle_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_upload_idle_timeout_ms));
  service.upload_min_bytes_per_second = absl::GetFlag(FLAGS_upload_min_bytes_per_second);
  service.max_priority_without_admin = Clamp(max_priority, 1000);
  return absl::OkStatus();
}

// Where the daemon listens, keeps its data and finds its worker and models.
absl::Status ReadPaths(DaemonConfig* c) {
  gpubench::server::DaemonOptions& options = c->jobs;
  c->listen = absl::GetFlag(FLAGS_listen);
  c->data_dir = absl::GetFlag(FLAGS_data_dir).empty() ? gpubench::DefaultDataDir()
                                                      : absl::GetFlag(FLAGS_data_dir);
  // Absolute: workers (in their scratch folders) find uploaded models by it.
  if (char cwd[PATH_MAX];
      !c->data_dir.empty() && c->data_dir[0] != '/' && getcwd(cwd, sizeof(cwd))) {
    c->data_dir = std::string(cwd) + "/" + c->data_dir;
  }
  options.worker_path = absl::GetFlag(FLAGS_worker).empty() ? gpubench::worker::DefaultWorkerPath()
                                                            : absl::GetFlag(FLAGS_worker);
  // A worker works in its scratch folder: a relative path would not lead
  // back to itself.
  if (const std::string real = gpubench::RealPath(options.worker_path); !real.empty()) {
    options.worker_path = real;
  }
  options.model_dir = c->data_dir + "/models";
  for (const std::string& root : absl::GetFlag(FLAGS_model_root)) {
    auto canonical = gpubench::CanonicalDir(root);
    if (!canonical.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--model-root: ", canonical.status().message()));
    }
    options.model_roots.push_back(*canonical);
  }
  options.allow_uploaded_aoti = absl::GetFlag(FLAGS_allow_uploaded_aoti);
  options.aot.set_python(absl::GetFlag(FLAGS_python));
  options.aot.set_cache_dir(c->data_dir + "/aot-cache");
  options.aot.set_cache_bytes(absl::GetFlag(FLAGS_aot_cache_bytes));
  c->metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  c->health_listen = absl::GetFlag(FLAGS_health_listen);
  options.pair_address = absl::GetFlag(FLAGS_pair_address);
  if (auto s = gpubench::server::CheckPairAddress(options.pair_address); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--pair-address: ", s.message()));
  }
  c->port_file = absl::GetFlag(FLAGS_port_file);
  return absl::OkStatus();
}

// Who may call, and what a worker may touch. After ReadPaths: the worker
// may not read what the daemon keeps private, its data directory first.
void ReadAccess(DaemonConfig* c) {
  c->token_file = absl::GetFlag(FLAGS_token_file);
  c->tls_cert = absl::GetFlag(FLAGS_tls_cert);
  c->tls_key = absl::GetFlag(FLAGS_tls_key);
  c->tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  c->client_cert_role = absl::GetFlag(FLAGS_client_cert_role);
  c->worker_user = absl::GetFlag(FLAGS_worker_user);
  c->insecure = absl::GetFlag(FLAGS_insecure);
  c->metrics_without_token = absl::GetFlag(FLAGS_metrics_without_token);
  c->allow_unconfined_user_models = absl::GetFlag(FLAGS_allow_unconfined_user_models);
  c->allow_clock_control = absl::GetFlag(FLAGS_allow_clock_control);
  gpubench::worker::WorkerLimits& limits = c->jobs.worker_limits;
  limits.scratch_root = c->data_dir + "/work";
  limits.confine =
      absl::GetFlag(FLAGS_confine_workers) && gpubench::worker::LandlockAbi() > 0;
  limits.protected_paths = {c->data_dir};
  for (const std::string& path :
       {c->token_file, c->tls_key, c->tls_cert, c->tls_client_ca, absl::GetFlag(FLAGS_config)}) {
    // Resolved here: a worker, in its scratch folder, would resolve a
    // relative one elsewhere and protect nothing.
    if (!path.empty()) {
      const std::string real = gpubench::RealPath(path);
      limits.protected_paths.push_back(real.empty() ? path : real);
    }
  }
  limits.read_paths = absl::GetFlag(FLAGS_worker_read_path);
  c->service.user_models_need_admin = !limits.confine && !c->allow_unconfined_user_models;
  c->service.model_dir = c->jobs.model_dir;
  c->service.allow_uploaded_aoti = c->jobs.allow_uploaded_aoti;
}

// The flags, checked for range, as the daemon's configuration.
absl::StatusOr<DaemonConfig> ConfigFromFlags() {
  DaemonConfig c;
  if (auto s = ReadLimits(&c); !s.ok()) return s;
  if (auto s = ReadPaths(&c); !s.ok()) return s;
  ReadAccess(&c);
  return c;
}

// gpubenchd's exit code for a failed start: 2 for a bad setting, 1 where
// the host refused.
int Fail(const absl::Status& s) {
  gpubench::Log(gpubench::LogLevel::kError, s.message());
  return absl::IsInvalidArgument(s) ? 2 : 1;
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
  if (geteuid() == 0 && absl::GetFlag(FLAGS_worker_user).empty()) {
    Log(LogLevel::kWarning,
        "running as root; workers load user models as root too (confined, without "
        "capabilities). Run it as an unprivileged user (deploy/gpubenchd.service), or give "
        "workers one (--worker-user)");
  }
  // Before any thread or child exists: a worker dying mid-write must not
  // SIGPIPE the daemon, and SIGTERM always means a clean shutdown.
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  auto config = ConfigFromFlags();
  if (!config.ok()) return Fail(config.status());
  if (auto s = server::PrepareDataDir(&*config); !s.ok()) return Fail(s);
  const worker::WorkerLimits& limits = config->jobs.worker_limits;
  if (absl::GetFlag(FLAGS_check_confinement)) {
    if (!limits.confine) {
      Log(LogLevel::kError, "--check-confinement: workers run unconfined here: ",
          worker::LandlockAbi() > 0 ? "--confine-workers=false" : worker::ConfinementSummary());
      return 1;
    }
    const absl::Status checked =
        server::CheckConfinement(config->jobs.worker_path, limits, config->data_dir,
                                 absl::GetFlag(FLAGS_check_confinement_path), std::cout);
    if (!checked.ok()) Log(LogLevel::kError, checked.message());
    return checked.ok() ? 0 : 1;
  }
  auto daemon = server::Daemon::Start(*std::move(config));
  if (!daemon.ok()) return Fail(daemon.status());
  while (!g_stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Log(LogLevel::kInfo, "shutting down");
  (*daemon)->Shutdown();
  Log(LogLevel::kInfo, "stopped");
  return 0;
}
