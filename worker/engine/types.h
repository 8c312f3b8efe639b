// The engine's shared types, plain C++ (no torch, no protobuf): what one
// run measured (RunOutcome), its numerics check, and what LibTorch sees on
// the host. The entry points that return them are engine.h's; the engine's
// own files include this header, not that one.
#ifndef GPUBENCH_WORKER_ENGINE_TYPES_H_
#define GPUBENCH_WORKER_ENGINE_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/stats.h"
#include "launcher/fingerprint.h"
#include "launcher/telemetry.h"
#include "worker/engine/config.h"
#include "worker/measure.h"
#include "worker/profile_table.h"
#include "worker/serve.h"

namespace gpubench::engine {

// The measurement rules belong to the measurement loop (worker/measure.h).
using measure::MeasureConfig;

enum class RunStatus { kSucceeded, kFailed, kOutOfMemory, kCancelled };

// A model run's numbers against the same model in fp64 on the CPU, same
// weights and inputs (MeasureConfig::check_numerics). A relative error is
// max |run - reference| over max |reference|.
struct NumericsOutcome {
  bool checked = false;
  std::string error;  // why it could not be checked
  int batch_size = 0;
  double output_max_abs_error = 0;
  double output_rel_error = 0;
  double loss_abs_error = 0;  // training runs
  double loss_rel_error = 0;
  std::string gradient_parameter;  // the model's first parameter
  double gradient_rel_error = 0;
  bool non_finite = false;  // inf or NaN in the run's output
  double tolerance = 0;
  bool passed = false;
};

// The relative error a numerics check allows at a precision (docs/numerics.md):
// fp32 1e-4, tf32 5e-3, fp16 1e-2, bf16 5e-2; of the output in inference, of
// the loss in training.
double NumericsTolerance(Precision precision);

// Everything one run measured. Figures that do not apply stay 0.
struct RunOutcome {
  RunStatus status = RunStatus::kFailed;
  std::string error;            // kFailed and kOutOfMemory
  std::string resolved_device;  // "cpu", "cuda:0", "mps"
  std::string cpu_blas;         // what the CPU's matrix products ran on (CpuBlas)
  std::string math_mode;        // what the precision ran in ("fp32, TF32 off in ...")
  int cpu_threads = 0;          // LibTorch's intra-op threads
  std::string cpu_threads_reason;  // a CPU run's RunConfig::cpu_threads_reason
  // The run's environment as it started (FingerprintOf).
  fingerprint::Fingerprint fingerprint;

  double throughput_samples_per_s = 0;
  double throughput_ci_low = 0;
  double throughput_ci_high = 0;
  std::string interval_basis;  // "trials", "windows", "steps"
  int interval_samples = 0;
  stats::Summary latency_ms;       // device time per iteration
  stats::Summary host_latency_ms;  // host time per iteration
  double data_wait_share = 0;
  double device_busy_share = 0;
  double cold_start_ms = 0;
  double graph_capture_ms = 0;
  double compile_ms = 0;        // execution aot: compiling the package, 0 when cached
  bool compile_cached = false;  // execution aot: the package came from the cache
  int64_t peak_device_allocated_bytes = 0;
  int64_t peak_device_reserved_bytes = 0;
  int64_t peak_host_rss_bytes = 0;
  int64_t parameter_count = 0;
  double flops_per_iteration = 0;  // analytic; a user model's from the profiler
  double achieved_tflops = 0;
  double bandwidth_gb_per_s = 0;
  double algorithm_bandwidth_gb_per_s = 0;  // collective: nccl-tests' algbw
  double bus_bandwidth_gb_per_s = 0;        // collective: nccl-tests' busbw
  // Language models: tokens a second (train: batch x sequence a step;
  // infer: generated), MFU over the datasheet's peak, and inference's
  // time to first token and inter-token latencies.
  double tokens_per_s = 0;
  double mfu = 0;
  double datasheet_peak_tflops = 0;
  stats::Summary time_to_first_token_ms;
  stats::Summary inter_token_latency_ms;
  double decode_bandwidth_gb_per_s = 0;
  std::string attention_backend;
  // The profiled window, per iteration of the profiled_iterations it ran
  // (max_time_ms may end it before MeasureConfig::profile_iterations): bytes
  // allocated on the run's device and device (kernel and copy) time; then
  // the roofline's estimated memory traffic, and the device time over the
  // measured time per iteration.
  int profiled_iterations = 0;
  double profiled_allocated_bytes = 0;
  double profiled_device_ms = 0;
  double profiled_flops = 0;  // torchscript inference: the profiler's count
  double memory_bytes_per_iteration = 0;
  double profiled_device_share = 0;
  double first_loss = 0;
  double last_loss = 0;
  double dice = -1;  // negative: not applicable
  int iterations = 0;
  double measured_ms = 0;
  bool stable = false;
  bool stopped_at_max_time = false;  // the run's time bound cut it short
  double window_cv = 0;
  std::vector<measure::Trial> trials;

  // The profiled window, when asked for: Chrome trace JSON, top operators
  // and categories; profile_error when profiling itself failed (the run's
  // figures stand).
  std::string trace_json;
  profile::Table profile;
  std::string profile_error;

  // Telemetry over the measured window (empty when disabled).
  telemetry::Series telemetry;

  // Mode serve: what the scheduler measured.
  serve::Outcome serve;

  // MeasureConfig::check_numerics: set after a successful run.
  std::optional<NumericsOutcome> numerics;

  // Per-iteration samples, in order.
  std::vector<double> device_ms;
  std::vector<double> host_ms;
  std::vector<double> data_wait_ms;
};

// What LibTorch sees on this host.
struct DeviceProbe {
  struct Gpu {
    int index = 0;
    std::string name;
    int64_t memory_bytes = 0;
    std::string compute_capability;
    int multiprocessor_count = 0;
    std::string pci_bus_id;  // "00000000:1B:00.0": NVML's name for it
  };
  std::string torch_version;
  std::string cuda_version;   // empty without CUDA
  std::string cudnn_version;  // empty without cuDNN
  bool cuda_built = false;    // LibTorch was built with CUDA
  bool mps_available = false;
  std::vector<Gpu> gpus;
  std::string cpu_blas;  // CpuBlas()
  int cpu_threads = 0;   // LibTorch's intra-op threads
};
}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_TYPES_H_
