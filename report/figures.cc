#include "report/figures.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/format.h"

namespace gpubench::report {
namespace {

using Value = std::optional<double>;

Value If(bool present, double v) {
  return present && std::isfinite(v) ? Value(v) : std::nullopt;
}

const v1::RunResult& R(const v1::Run& r) { return r.result(); }
bool Cpu(const v1::Run& r) { return R(r).resolved_device() == "cpu"; }
bool Interval(const v1::Run& r) {
  return HasFigures(r) && R(r).throughput_ci_high() > 0;
}
bool Basis(const v1::Run& r) {
  return HasFigures(r) && !R(r).interval_basis().empty();
}
bool Loss(const v1::Run& r) {
  return HasFigures(r) && r.config().mode() == v1::MODE_TRAIN &&
         R(r).first_loss() != 0;
}
bool Gpu(const v1::Run& r) { return GpuTelemetry(R(r)); }
// A time the run measured: never 0 (a result stored without it has none).
Value Timed(const v1::Run& r, double ms) {
  return If(HasFigures(r) && ms > 0, ms);
}

constexpr char kEveryRun[] = "every run with figures";
constexpr char kLanguageModels[] = "gpt and llama";
constexpr char kDecoding[] = "gpt and llama inference (decoding)";
constexpr char kTelemetry[] = "GPU runs with NVML's telemetry";
constexpr char kServing[] = "gpt and llama serving (mode serve)";

bool Serves(const v1::Run& r) { return HasFigures(r) && R(r).has_serve(); }
// A serving latency's percentile, where its figures have one.
using Latency = const v1::ServeLatency& (v1::ServeResult::*)() const;
using Percentile = double (v1::ServeLatency::*)() const;
Value ServeMs(const v1::Run& r, Latency latency, Percentile percentile) {
  const v1::ServeLatency& l = (R(r).serve().*latency)();
  return If(Serves(r) && l.count() > 0, (l.*percentile)());
}

std::vector<Figure> MakeFigures() {
  using T = FigureType;
  using B = Better;
  std::vector<Figure> f;
  // Throughput and its interval.
  f.push_back({"throughput_samples_per_s", "samples/s", "samples/s", T::kNumber,
               B::kHigher, kEveryRun,
               "samples a second over the measured window",
               [](const v1::Run& r) {
                 return If(HasFigures(r), R(r).throughput_samples_per_s());
               },
               nullptr, 1, 1, "gpubench_last_throughput_samples_per_second"});
  f.push_back({"throughput_ci_low", "CI low", "samples/s", T::kNumber,
               B::kHigher, "runs with at least 5 trials, windows or steps",
               "the throughput's 95% interval, low end", [](const v1::Run& r) {
                 return If(Interval(r), R(r).throughput_ci_low());
               }});
  f.push_back({"throughput_ci_high", "CI high", "samples/s", T::kNumber,
               B::kHigher, "runs with at least 5 trials, windows or steps",
               "the throughput's 95% interval, high end", [](const v1::Run& r) {
                 return If(Interval(r), R(r).throughput_ci_high());
               }});
  f.push_back(
      {"interval_basis", "interval of", "", T::kText, B::kNeither, kEveryRun,
       "what the interval is over: trials, windows or steps", nullptr,
       [](const v1::Run& r) { return Basis(r) ? R(r).interval_basis() : ""; }});
  f.push_back(
      {"interval_samples", "interval n", "", T::kInteger, B::kHigher, kEveryRun,
       "how many trials, windows or steps the interval is over",
       [](const v1::Run& r) { return If(Basis(r), R(r).interval_samples()); }});
  // Latency: device time per iteration.
  f.push_back(
      {"p50_ms", "p50 ms", "ms", T::kNumber, B::kLower, kEveryRun,
       "median time per iteration",
       [](const v1::Run& r) { return Timed(r, R(r).latency().p50_ms()); },
       nullptr, 1, 3, "gpubench_last_latency_p50_seconds", 1e-3});
  f.push_back(
      {"p95_ms", "p95 ms", "ms", T::kNumber, B::kLower, kEveryRun,
       "95th percentile of the time per iteration",
       [](const v1::Run& r) { return Timed(r, R(r).latency().p95_ms()); },
       nullptr, 1, 3});
  f.push_back(
      {"p99_ms", "p99 ms", "ms", T::kNumber, B::kLower, kEveryRun,
       "99th percentile of the time per iteration",
       [](const v1::Run& r) { return Timed(r, R(r).latency().p99_ms()); },
       nullptr, 1, 3, "gpubench_last_latency_p99_seconds", 1e-3});
  f.push_back({"data_wait_share", "wait%", "share", T::kNumber, B::kLower,
               kEveryRun, "share of the measured time spent waiting for input",
               [](const v1::Run& r) {
                 return If(HasFigures(r), R(r).data_wait_share());
               },
               nullptr, 100, 1});
  // Memory.
  f.push_back({"peak_allocated_bytes", "peak alloc", "bytes", T::kBytes,
               B::kLower,
               "runs on a device whose allocator counts (CUDA, MPS, the CPU)",
               "peak bytes allocated on the run's device "
               "(torch.cuda.max_memory_allocated)",
               [](const v1::Run& r) {
                 const int64_t b = R(r).memory().peak_device_allocated_bytes();
                 return If(b > 0, static_cast<double>(b));
               },
               nullptr, 1, 0, "gpubench_last_peak_allocated_bytes"});
  f.push_back({"peak_reserved_bytes", "peak reserved", "bytes", T::kBytes,
               B::kLower, "CUDA runs",
               "peak bytes the caching allocator reserved",
               [](const v1::Run& r) {
                 const int64_t b = R(r).memory().peak_device_reserved_bytes();
                 return If(b > 0, static_cast<double>(b));
               }});
  f.push_back({"peak_rss_bytes", "peak RSS", "bytes", T::kBytes, B::kLower,
               kEveryRun,
               "the worker's peak resident memory, its children's included",
               [](const v1::Run& r) {
                 const int64_t b = R(r).memory().peak_host_rss_bytes();
                 return If(b > 0, static_cast<double>(b));
               }});
  // Training.
  f.push_back({"loss_first", "first loss", "", T::kNumber, B::kNeither,
               "training runs", "the loss of the first measured step",
               [](const v1::Run& r) { return If(Loss(r), R(r).first_loss()); },
               nullptr, 1, 4});
  f.push_back({"loss_last", "last loss", "", T::kNumber, B::kLower,
               "training runs", "the loss of the last measured step",
               [](const v1::Run& r) { return If(Loss(r), R(r).last_loss()); },
               nullptr, 1, 4});
  // Telemetry.
  f.push_back(
      {"gpu_utilization_pct", "gpu util%", "%", T::kNumber, B::kNeither,
       kTelemetry, "mean GPU utilisation over the measured window (NVML)",
       [](const v1::Run& r) {
         return If(Gpu(r), R(r).telemetry().gpu_utilization_pct().mean());
       },
       nullptr, 1, 0});
  f.push_back({"power_w", "power W", "W", T::kNumber, B::kNeither, kTelemetry,
               "mean board power over the measured window (NVML)",
               [](const v1::Run& r) {
                 return If(Gpu(r), R(r).telemetry().power_w().mean());
               },
               nullptr, 1, 0});
  f.push_back({"samples_per_joule", "samples/J", "samples/J", T::kNumber,
               B::kHigher, kTelemetry,
               "samples over the board's energy in the measured window",
               [](const v1::Run& r) {
                 const double v = R(r).telemetry().samples_per_joule();
                 return If(Gpu(r) && v > 0, v);
               },
               nullptr, 1, 2, "gpubench_last_samples_per_joule"});
  // The setting the figures were measured under.
  f.push_back({"math_mode", "math", "", T::kText, B::kNeither, kEveryRun,
               "what the precision ran in (\"fp32, TF32 off\")", nullptr,
               [](const v1::Run& r) { return R(r).math_mode(); }});
  f.push_back({"cpu_blas", "BLAS", "", T::kText, B::kNeither, "CPU runs",
               "the BLAS the CPU's matrix products ran on", nullptr,
               [](const v1::Run& r) { return Cpu(r) ? R(r).cpu_blas() : ""; }});
  f.push_back({"cpu_threads", "threads", "", T::kInteger, B::kNeither,
               "CPU runs", "LibTorch's intra-op threads", [](const v1::Run& r) {
                 return If(Cpu(r) && R(r).cpu_threads() > 0,
                           R(r).cpu_threads());
               }});
  f.push_back({"cpu_threads_reason", "threads from", "", T::kText, B::kNeither,
               "CPU runs",
               "where the thread count came from: the CPUs the worker may use, "
               "or the spec",
               nullptr, [](const v1::Run& r) {
                 return Cpu(r) ? R(r).cpu_threads_reason() : "";
               }});
  // Language models.
  f.push_back({"tokens_per_s", "tokens/s", "tokens/s", T::kNumber, B::kHigher,
               kLanguageModels,
               "tokens a second: batch x sequence a step in training, "
               "generated in decoding",
               [](const v1::Run& r) {
                 return If(HasFigures(r) && R(r).tokens_per_s() > 0,
                           R(r).tokens_per_s());
               },
               nullptr, 1, 0, "gpubench_last_tokens_per_second"});
  f.push_back({"mfu", "MFU", "share", T::kNumber, B::kHigher,
               "gpt and llama on a GPU in the datasheet table",
               "the model's FLOPs over the GPU's dense datasheet peak at the "
               "run's precision",
               [](const v1::Run& r) {
                 return If(HasFigures(r) && R(r).mfu() > 0, R(r).mfu());
               },
               nullptr, 100, 1, "gpubench_last_mfu_ratio"});
  f.push_back({"ttft_p50_ms", "TTFT p50 ms", "ms", T::kNumber, B::kLower,
               kDecoding,
               "median time to first token: prefill and the first token",
               [](const v1::Run& r) {
                 return If(R(r).has_time_to_first_token(),
                           R(r).time_to_first_token().p50_ms());
               },
               nullptr, 1, 3, "gpubench_last_ttft_p50_seconds", 1e-3});
  f.push_back({"itl_p50_ms", "ITL p50 ms", "ms", T::kNumber, B::kLower,
               kDecoding, "median inter-token latency: each next token",
               [](const v1::Run& r) {
                 return If(R(r).has_inter_token_latency(),
                           R(r).inter_token_latency().p50_ms());
               },
               nullptr, 1, 3, "gpubench_last_itl_p50_seconds", 1e-3});
  f.push_back({"itl_p99_ms", "ITL p99 ms", "ms", T::kNumber, B::kLower,
               kDecoding, "99th percentile of the inter-token latency",
               [](const v1::Run& r) {
                 return If(R(r).has_inter_token_latency(),
                           R(r).inter_token_latency().p99_ms());
               },
               nullptr, 1, 3});
  f.push_back({"decode_gb_per_s", "decode GB/s", "GB/s", T::kNumber, B::kHigher,
               kDecoding, "weights and KV cache read a second while decoding",
               [](const v1::Run& r) {
                 const double v = R(r).decode_bandwidth_gb_per_s();
                 return If(v > 0, v);
               }});
  // Serving: each latency's median and p99 over the measured requests.
  f.push_back({"serve_ttft_p50_ms", "TTFT p50 ms", "ms", T::kNumber, B::kLower, kServing,
               "median time to first token from each request's arrival (the wait included)",
               [](const v1::Run& r) {
                 return ServeMs(r, &v1::ServeResult::ttft, &v1::ServeLatency::p50_ms);
               },
               nullptr, 1, 2, "gpubench_last_serve_ttft_p50_seconds", 1e-3});
  f.push_back({"serve_ttft_p99_ms", "TTFT p99 ms", "ms", T::kNumber, B::kLower, kServing,
               "99th percentile of the time to first token",
               [](const v1::Run& r) {
                 return ServeMs(r, &v1::ServeResult::ttft, &v1::ServeLatency::p99_ms);
               },
               nullptr, 1, 2, "gpubench_last_serve_ttft_p99_seconds", 1e-3});
  f.push_back({"serve_tpot_p50_ms", "TPOT p50 ms", "ms", T::kNumber, B::kLower, kServing,
               "median time per output token: (e2e - ttft) / (output tokens - 1) a request",
               [](const v1::Run& r) {
                 return ServeMs(r, &v1::ServeResult::tpot, &v1::ServeLatency::p50_ms);
               },
               nullptr, 1, 3});
  f.push_back({"serve_tpot_p99_ms", "TPOT p99 ms", "ms", T::kNumber, B::kLower, kServing,
               "99th percentile of the time per output token",
               [](const v1::Run& r) {
                 return ServeMs(r, &v1::ServeResult::tpot, &v1::ServeLatency::p99_ms);
               },
               nullptr, 1, 3, "gpubench_last_serve_tpot_p99_seconds", 1e-3});
  f.push_back({"serve_itl_p99_ms", "ITL p99 ms", "ms", T::kNumber, B::kLower, kServing,
               "99th percentile of the gaps between a request's tokens, over every token",
               [](const v1::Run& r) {
                 return ServeMs(r, &v1::ServeResult::itl, &v1::ServeLatency::p99_ms);
               },
               nullptr, 1, 3});
  f.push_back({"serve_e2e_p99_ms", "E2E p99 ms", "ms", T::kNumber, B::kLower, kServing,
               "99th percentile of the time from a request's arrival to its last token",
               [](const v1::Run& r) {
                 return ServeMs(r, &v1::ServeResult::e2e, &v1::ServeLatency::p99_ms);
               },
               nullptr, 1, 1});
  f.push_back({"request_rate_achieved", "req/s sent", "requests/s", T::kNumber, B::kNeither,
               kServing, "the measured requests' arrival rate (asked: the config's request_rate)",
               [](const v1::Run& r) {
                 return If(Serves(r) && R(r).serve().request_rate().achieved() > 0,
                           R(r).serve().request_rate().achieved());
               },
               nullptr, 1, 2});
  f.push_back({"request_throughput", "req/s done", "requests/s", T::kNumber, B::kHigher,
               kServing, "requests finished a second over the measured window",
               [](const v1::Run& r) { return If(Serves(r), R(r).serve().request_throughput()); },
               nullptr, 1, 2, "gpubench_last_serve_requests_per_second"});
  f.push_back({"tokens_per_s_per_user", "tok/s/user", "tokens/s", T::kNumber, B::kHigher,
               kServing, "what one request sees: 1000 / its TPOT in ms, the median request's",
               [](const v1::Run& r) {
                 return If(Serves(r) && R(r).serve().output_tokens_per_s_per_user() > 0,
                           R(r).serve().output_tokens_per_s_per_user());
               }});
  f.push_back({"serve_joules_per_output_token", "J/out tok", "J/token", T::kNumber, B::kLower,
               "serving runs with board power (NVML)",
               "the measured window's board energy over the output tokens made in it",
               [](const v1::Run& r) {
                 return If(Serves(r) && R(r).serve().joules_per_output_token() > 0,
                           R(r).serve().joules_per_output_token());
               },
               nullptr, 1, 4, "gpubench_last_serve_joules_per_output_token"});
  f.push_back({"goodput", "goodput", "requests/s", T::kNumber, B::kHigher,
               "serving runs given an SLO",
               "measured requests meeting every SLO, a second over the measured window",
               [](const v1::Run& r) {
                 const v1::ServeLoad& load = r.config().serve();
                 const bool slo =
                     load.slo_ttft_ms() > 0 || load.slo_tpot_ms() > 0 || load.slo_e2e_ms() > 0;
                 return If(Serves(r) && slo, R(r).serve().goodput());
               },
               nullptr, 1, 2, "gpubench_last_serve_goodput_requests_per_second"});
  f.push_back({"attention", "attention", "", T::kText, B::kNeither,
               "runs with attention", "the SDPA kernel that ran", nullptr,
               [](const v1::Run& r) { return R(r).attention_backend(); }});
  return f;
}

}  // namespace

const std::vector<Figure>& Figures() {
  static const std::vector<Figure>* const figures =
      new std::vector<Figure>(MakeFigures());
  return *figures;
}

const Figure& FigureNamed(const std::string& name) {
  for (const Figure& f : Figures()) {
    if (name == f.name) return f;
  }
  std::fprintf(stderr, "no figure named %s in report/figures.cc\n",
               name.c_str());
  std::abort();
}

bool HasFigures(const v1::Run& run) {
  return run.state() == v1::RUN_STATE_SUCCEEDED ||
         run.state() == v1::RUN_STATE_CANCELLED;
}

std::string FigureText(const Figure& figure, const v1::Run& run) {
  if (figure.type == FigureType::kText) {
    const std::string text = figure.text(run);
    return text.empty() ? "-" : text;
  }
  const std::optional<double> v = figure.number(run);
  if (!v) return "-";
  switch (figure.type) {
    case FigureType::kBytes:
      return Bytes(static_cast<int64_t>(*v));
    case FigureType::kInteger:
      return absl::StrCat(static_cast<int64_t>(*v));
    default:
      break;
  }
  std::string text =
      absl::StrFormat("%.*f", figure.decimals, *v * figure.scale);
  // A share shown as percent says so where its heading does not.
  if (absl::string_view(figure.unit) == "share" &&
      !absl::EndsWith(figure.heading, "%")) {
    text += "%";
  }
  return text;
}

std::string FiguresMarkdown() {
  std::string md =
      "# Figures\n\n"
      "Every figure a run can have, generated from `report/figures.cc` by "
      "`gpubench reference\n"
      "figures`. The CSV (`show` and `runs --output csv`), the export (JSON "
      "Lines, PostgreSQL),\n"
      "`show`'s tables, the HTML report and the daemon's `/metrics` read the "
      "same table: a\n"
      "figure a run does not have is empty in CSV, null in JSON and SQL, `-` "
      "in a table and no\n"
      "sample in `/metrics`, never a zero. A share is 0 to 1 in data and a "
      "percent in tables.\n\n"
      "| column | heading | unit | better | produced by | what it is | "
      "`/metrics` gauge |\n"
      "| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const Figure& f : Figures()) {
    const char* better = f.better == Better::kHigher  ? "higher"
                         : f.better == Better::kLower ? "lower"
                                                      : "-";
    std::string gauge = "-";
    if (f.prometheus != nullptr) {
      gauge = absl::StrCat("`", f.prometheus, "`");
      if (f.prometheus_scale != 1)
        absl::StrAppend(&gauge, " (x", f.prometheus_scale, ")");
    }
    absl::StrAppend(&md, "| `", f.name, "` | ", f.heading, " | ",
                    *f.unit ? f.unit : "-", " | ", better, " | ", f.produced_by,
                    " | ", f.help, " | ", gauge, " |\n");
  }
  return md;
}

}  // namespace gpubench::report
