#include "worker/convert.h"

#include <algorithm>
#include <type_traits>
#include <utility>
#include <variant>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/stats.h"
#include "common/workload_registry.h"

namespace gpubench::worker {
namespace {

template <typename T>
void SetIfNonZero(T value, T* field) {
  if (value != T{}) *field = value;
}

void FillLatency(const stats::Summary& s, v1::LatencyStats* out) {
  out->set_mean_ms(s.mean);
  out->set_stddev_ms(s.stddev);
  out->set_p50_ms(s.p50);
  out->set_p90_ms(s.p90);
  out->set_p95_ms(s.p95);
  out->set_p99_ms(s.p99);
  out->set_max_ms(s.max);
  out->set_min_ms(s.min);
}

v1::RunState ToState(engine::RunStatus status) {
  switch (status) {
    case engine::RunStatus::kSucceeded: return v1::RUN_STATE_SUCCEEDED;
    case engine::RunStatus::kOutOfMemory: return v1::RUN_STATE_OUT_OF_MEMORY;
    case engine::RunStatus::kCancelled: return v1::RUN_STATE_CANCELLED;
    case engine::RunStatus::kFailed: break;
  }
  return v1::RUN_STATE_FAILED;
}

// Copies each row of engine::FieldMaps() from v into c.
void CopyMappedFields(const v1::RunConfig& v, engine::RunConfig* c) {
  using google::protobuf::FieldDescriptor;
  for (const engine::FieldMap& map : engine::FieldMaps()) {
    const google::protobuf::Message* m = &v;
    const FieldDescriptor* f = nullptr;
    for (absl::string_view name : absl::StrSplit(map.path, '.')) {
      if (f != nullptr) m = &m->GetReflection()->GetMessage(*m, f);
      f = m->GetDescriptor()->FindFieldByName(std::string(name));
      if (f == nullptr) std::abort();  // a row naming no field: EverySchemaFieldOfARunMaps
    }
    const google::protobuf::Reflection* r = m->GetReflection();
    if (f->has_presence() && !r->HasField(*m, f)) continue;
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(c->*member)>;
          if constexpr (std::is_same_v<T, std::string>) {
            c->*member = r->GetString(*m, f);
          } else if constexpr (std::is_same_v<T, bool>) {
            c->*member = r->GetBool(*m, f);
          } else if constexpr (std::is_same_v<T, double>) {
            c->*member = r->GetDouble(*m, f);
          } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
            c->*member = static_cast<T>(r->GetInt64(*m, f));
          } else {
            c->*member = static_cast<T>(r->GetInt32(*m, f));
          }
        },
        map.member);
  }
}

}  // namespace

engine::RunConfig ToEngineConfig(const v1::RunConfig& v) {
  engine::RunConfig c;
  CopyMappedFields(v, &c);
  const v1::WorkloadParams& p = v.params();
  c.copy_direction = static_cast<engine::CopyDirection>(p.copy_direction());
  c.collective_op = static_cast<engine::CollectiveOp>(p.collective_op());
  c.ddp_bucket_mb = p.has_ddp_bucket_mb() ? p.ddp_bucket_mb() : kDefaultDdpBucketMb;
  c.world_size = std::max(1, v.world_size());  // 0: one rank
  for (const auto& in : p.inputs()) {
    engine::TensorSpec t;
    t.shape.assign(in.shape().begin(), in.shape().end());
    t.dtype = in.dtype() == v1::DTYPE_UNSPECIFIED
                  ? engine::DType::kFloat32
                  : static_cast<engine::DType>(in.dtype());
    if (in.low() != 0 || in.high() != 0) {
      t.low = in.low();
      t.high = in.high();
    }
    c.inputs.push_back(t);
  }
  c.mode = static_cast<engine::Mode>(v.mode());
  c.precision = static_cast<engine::Precision>(v.precision());
  c.execution = static_cast<engine::Execution>(v.execution());
  c.input_source = static_cast<engine::InputSource>(v.input_source());
  c.pipeline.loader_threads = v.pipeline().loader_threads();
  c.pipeline.pinned_memory = v.pipeline().pinned_memory();
  SetIfNonZero(v.pipeline().prefetch_depth(), &c.pipeline.prefetch_depth);
  c.pipeline.extra_cost_us_per_sample = v.pipeline().extra_cost_us_per_sample();
  c.pipeline.non_blocking = v.pipeline().non_blocking() || v.pipeline().pinned_memory();
  c.optimizer = static_cast<engine::Optimizer>(v.optimizer());
  c.attention = static_cast<engine::Attention>(v.attention());
  for (const v1::TraceRequest& t : v.serve().trace()) {
    c.trace.push_back({t.arrival_ms(), t.input_tokens(), t.output_tokens()});
  }
  return c;
}

measure::MeasureConfig ToMeasureConfig(const v1::Measurement& m) {
  measure::MeasureConfig c;
  SetIfNonZero(m.warmup_iterations(), &c.warmup_iterations);
  SetIfNonZero(m.warmup_ms(), &c.warmup_ms);
  SetIfNonZero(m.min_iterations(), &c.min_iterations);
  SetIfNonZero(m.min_time_ms(), &c.min_time_ms);
  SetIfNonZero(m.max_time_ms(), &c.max_time_ms);
  SetIfNonZero(m.window_iterations(), &c.window_iterations);
  SetIfNonZero(m.cv_threshold(), &c.cv_threshold);
  SetIfNonZero(m.trials(), &c.trials);
  SetIfNonZero(m.max_iterations(), &c.max_iterations);
  SetIfNonZero(m.seed(), &c.seed);
  if (c.max_time_ms < c.min_time_ms) c.max_time_ms = c.min_time_ms;
  return c;
}

void FillTelemetry(const telemetry::Series& series, double samples_per_s, double window_ms,
                   v1::Run* run) {
  const telemetry::Summary sum = telemetry::Summarize(series, samples_per_s, window_ms);
  v1::TelemetrySummary* t = run->mutable_result()->mutable_telemetry();
  t->set_available(sum.available);
  t->set_unavailable_reason(sum.unavailable_reason);
  t->set_sample_count(sum.sample_count);
  auto field = [](const telemetry::Field& f, v1::TelemetryField* out) {
    out->set_mean(f.mean);
    out->set_max(f.max);
  };
  if (series.source == "nvml") {
    field(sum.gpu_utilization_pct, t->mutable_gpu_utilization_pct());
    field(sum.memory_utilization_pct, t->mutable_memory_utilization_pct());
    field(sum.memory_used_bytes, t->mutable_memory_used_bytes());
    field(sum.sm_clock_mhz, t->mutable_sm_clock_mhz());
    field(sum.memory_clock_mhz, t->mutable_memory_clock_mhz());
    field(sum.power_w, t->mutable_power_w());
    field(sum.temperature_c, t->mutable_temperature_c());
    field(sum.pcie_rx_bytes_per_s, t->mutable_pcie_rx_bytes_per_s());
    field(sum.pcie_tx_bytes_per_s, t->mutable_pcie_tx_bytes_per_s());
  } else {
    field(sum.host_cpu_utilization_pct, t->mutable_host_cpu_utilization_pct());
  }
  t->set_energy_j(sum.energy_j);
  t->set_samples_per_joule(sum.samples_per_joule);
  t->set_throttled(sum.throttled);
  for (const auto& name : sum.throttle_reasons) t->add_throttle_reasons(name);
  auto health = [](const telemetry::Health& h, v1::GpuHealth* out) {
    if (h.ecc_known) out->set_ecc_uncorrected(h.ecc_uncorrected);
    if (h.rows_known) {
      out->set_remapped_rows_uncorrectable(h.rows_uncorrectable);
      out->set_remap_pending(h.remap_pending);
      out->set_remap_failed(h.remap_failed);
    }
  };
  if (series.source == "nvml") {
    health(series.health_before, t->mutable_health_before());
    health(series.health_after, t->mutable_health_after());
    t->set_xids_watched(series.xids_watched);
    for (uint64_t xid : series.xids) t->add_xids(xid);
  }
  // The daemon adds what it saw (jobs beside, load average) and the flag.
  v1::Contention* contention = run->mutable_result()->mutable_contention();
  contention->set_gpu_processes(sum.gpu_processes);
  if (series.other_cpu_cores > 0) contention->set_other_cpu_cores(series.other_cpu_cores);
  if (series.job_cpu_cores > 0) contention->set_job_cpu_cores(series.job_cpu_cores);
  if (series.samples.empty()) return;
  v1::TelemetrySeries* out = run->mutable_telemetry_series();
  out->set_source(series.source);
  out->set_interval_ms(series.interval_ms);
  // A day at 10 ms is 8.6 million readings: an even stride keeps at most
  // 65,536 (the summary above used them all). Offsets say where each was.
  constexpr size_t kMaxStoredReadings = size_t{1} << 16;
  const size_t stride = (series.samples.size() + kMaxStoredReadings - 1) / kMaxStoredReadings;
  for (size_t i = 0; i < series.samples.size(); i += std::max<size_t>(stride, 1)) {
    const telemetry::Sample& x = series.samples[i];
    v1::TelemetrySample* y = out->add_samples();
    y->set_offset_ms(x.offset_ms);
    y->set_gpu_utilization_pct(x.gpu_utilization_pct);
    y->set_memory_utilization_pct(x.memory_utilization_pct);
    y->set_memory_used_bytes(x.memory_used_bytes);
    y->set_sm_clock_mhz(x.sm_clock_mhz);
    y->set_memory_clock_mhz(x.memory_clock_mhz);
    y->set_power_w(x.power_w);
    y->set_temperature_c(x.temperature_c);
    y->set_throttle_reasons_mask(x.throttle_reasons_mask);
    y->set_pcie_rx_bytes_per_s(x.pcie_rx_bytes_per_s);
    y->set_pcie_tx_bytes_per_s(x.pcie_tx_bytes_per_s);
    y->set_host_cpu_utilization_pct(x.host_cpu_utilization_pct);
    y->set_host_rss_bytes(x.host_rss_bytes);
  }
}

namespace {

void FillOperator(const profile::OperatorRow& row, v1::OperatorStat* op) {
  op->set_name(row.name);
  op->set_count(row.count);
  op->set_self_time_us(row.self_time_us);
  op->set_share(row.share);
  op->set_category(row.category);
}

void FillProfile(const profile::Table& t, v1::ProfileSummary* p) {
  p->set_device_times(t.device_times);
  for (const auto& row : t.top) FillOperator(row, p->add_top_operators());
  for (const auto& row : t.launching) FillOperator(row, p->add_device_operators());
  for (const auto& row : t.categories) {
    v1::CategoryShare* c = p->add_categories();
    c->set_category(row.category);
    c->set_self_time_us(row.self_time_us);
    c->set_share(row.share);
  }
}

void FillNumerics(const engine::NumericsOutcome& n, v1::NumericsCheck* c) {
  c->set_checked(n.checked);
  c->set_error(n.error);
  c->set_batch_size(n.batch_size);
  c->set_output_max_abs_error(n.output_max_abs_error);
  c->set_output_rel_error(n.output_rel_error);
  c->set_loss_abs_error(n.loss_abs_error);
  c->set_loss_rel_error(n.loss_rel_error);
  c->set_gradient_parameter(n.gradient_parameter);
  c->set_gradient_rel_error(n.gradient_rel_error);
  c->set_non_finite(n.non_finite);
  c->set_tolerance(n.tolerance);
  c->set_passed(n.passed);
}

// A long run of a tiny step can take hundreds of millions of iterations;
// an even stride keeps their distribution in bounded space.
void FillSamples(const engine::RunOutcome& o, v1::IterationSamples* s) {
  constexpr size_t kMaxStoredSamples = size_t{1} << 20;
  const size_t n = std::max({o.device_ms.size(), o.host_ms.size(), o.data_wait_ms.size()});
  const size_t stride = n > kMaxStoredSamples ? (n + kMaxStoredSamples - 1) / kMaxStoredSamples
                                              : 1;
  if (stride > 1) s->set_stride(static_cast<int32_t>(stride));
  for (auto [from, to] : {std::pair{&o.device_ms, s->mutable_device_ms()},
                          std::pair{&o.host_ms, s->mutable_host_ms()},
                          std::pair{&o.data_wait_ms, s->mutable_data_wait_ms()}}) {
    to->Reserve(static_cast<int>(from->size() / stride + 1));
    for (size_t i = 0; i < from->size(); i += stride) to->Add((*from)[i]);
  }
}

// Each field the worker could read; the others stay absent.
void FillFingerprint(const fingerprint::Fingerprint& f, v1::Fingerprint* p) {
#define GPUBENCH_FINGERPRINT_FIELD(name) \
  if (f.name) p->set_##name(*f.name)
  GPUBENCH_FINGERPRINT_FIELD(driver_version);
  GPUBENCH_FINGERPRINT_FIELD(cuda_driver_version);
  GPUBENCH_FINGERPRINT_FIELD(cuda_runtime_version);
  GPUBENCH_FINGERPRINT_FIELD(cudnn_version);
  GPUBENCH_FINGERPRINT_FIELD(nccl_version);
  GPUBENCH_FINGERPRINT_FIELD(torch_version);
  GPUBENCH_FINGERPRINT_FIELD(blas);
  GPUBENCH_FINGERPRINT_FIELD(gpu_name);
  GPUBENCH_FINGERPRINT_FIELD(gpu_uuid);
  GPUBENCH_FINGERPRINT_FIELD(gpu_serial);
  GPUBENCH_FINGERPRINT_FIELD(board_part_number);
  GPUBENCH_FINGERPRINT_FIELD(vbios_version);
  GPUBENCH_FINGERPRINT_FIELD(ecc_enabled);
  GPUBENCH_FINGERPRINT_FIELD(mig_enabled);
  GPUBENCH_FINGERPRINT_FIELD(persistence_mode);
  GPUBENCH_FINGERPRINT_FIELD(power_limit_w);
  GPUBENCH_FINGERPRINT_FIELD(power_limit_default_w);
  GPUBENCH_FINGERPRINT_FIELD(power_limit_min_w);
  GPUBENCH_FINGERPRINT_FIELD(power_limit_max_w);
  GPUBENCH_FINGERPRINT_FIELD(applications_graphics_clock_mhz);
  GPUBENCH_FINGERPRINT_FIELD(applications_memory_clock_mhz);
  GPUBENCH_FINGERPRINT_FIELD(max_sm_clock_mhz);
  GPUBENCH_FINGERPRINT_FIELD(max_memory_clock_mhz);
  GPUBENCH_FINGERPRINT_FIELD(pcie_generation);
  GPUBENCH_FINGERPRINT_FIELD(pcie_width);
  GPUBENCH_FINGERPRINT_FIELD(pcie_max_generation);
  GPUBENCH_FINGERPRINT_FIELD(pcie_max_width);
  GPUBENCH_FINGERPRINT_FIELD(nvlink_active);
  GPUBENCH_FINGERPRINT_FIELD(nvlink_links);
  GPUBENCH_FINGERPRINT_FIELD(kernel);
  GPUBENCH_FINGERPRINT_FIELD(cpu_governor);
  GPUBENCH_FINGERPRINT_FIELD(cpu_quota_cores);
  GPUBENCH_FINGERPRINT_FIELD(cpu_threads);
#undef GPUBENCH_FINGERPRINT_FIELD
}

// The numerics check's outcome, which the user asked for: a run whose
// numbers fail it is no figure to trust, whatever its speed.
void CheckNumerics(const engine::NumericsOutcome& numerics, v1::Run* run) {
  FillNumerics(numerics, run->mutable_result()->mutable_numerics());
  const v1::NumericsCheck& n = run->result().numerics();
  if (run->state() != v1::RUN_STATE_SUCCEEDED || !n.checked() || n.passed()) return;
  run->set_state(v1::RUN_STATE_FAILED);
  run->set_error(n.non_finite()
                     ? "check_numerics failed: inf or NaN in the output or loss"
                     : absl::StrFormat("check_numerics failed: relative error %.3g beyond "
                                       "the precision's tolerance %.3g",
                                       run->config().mode() == v1::MODE_TRAIN
                                           ? n.loss_rel_error()
                                           : n.output_rel_error(),
                                       n.tolerance()));
}

// A serving latency: its percentiles, each with its order-statistic
// interval (none where the samples are too few).
void FillServeLatency(std::vector<double> ms, v1::ServeLatency* out) {
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  out->set_count(static_cast<int32_t>(ms.size()));
  out->set_mean_ms(stats::Mean(ms));
  out->set_max_ms(ms.back());
  using Setter = void (v1::ServeLatency::*)(double);
  const struct {
    double q;
    Setter value, low, high;
  } kPercentiles[] = {
      {0.5, &v1::ServeLatency::set_p50_ms, &v1::ServeLatency::set_p50_low_ms,
       &v1::ServeLatency::set_p50_high_ms},
      {0.9, &v1::ServeLatency::set_p90_ms, &v1::ServeLatency::set_p90_low_ms,
       &v1::ServeLatency::set_p90_high_ms},
      {0.99, &v1::ServeLatency::set_p99_ms, &v1::ServeLatency::set_p99_low_ms,
       &v1::ServeLatency::set_p99_high_ms},
  };
  for (const auto& p : kPercentiles) {
    (out->*p.value)(stats::QuantileSorted(ms, p.q));
    const stats::Interval ci = stats::QuantileInterval95(ms, p.q);
    (out->*p.low)(ci.low);
    (out->*p.high)(ci.high);
  }
}

void FillServe(const serve::Outcome& o, v1::ServeResult* s) {
  FillServeLatency(o.ttft_ms, s->mutable_ttft());
  FillServeLatency(o.tpot_ms, s->mutable_tpot());
  FillServeLatency(o.itl_ms, s->mutable_itl());
  FillServeLatency(o.e2e_ms, s->mutable_e2e());
  s->mutable_request_rate()->set_asked(o.asked_rate);
  s->mutable_request_rate()->set_achieved(o.achieved_rate);
  s->set_requests(o.requests);
  s->set_requests_asked(o.requests_asked);
  s->set_warmup_requests(o.warmup_requests);
  s->set_window_ms(o.window_ms);
  s->set_request_throughput(o.request_throughput);
  s->set_output_tokens_per_s(o.output_tokens_per_s);
  s->set_total_tokens_per_s(o.total_tokens_per_s);
  s->set_output_tokens_per_s_per_user(o.output_tokens_per_s_per_user);
  s->set_requests_meeting_slo(o.requests_meeting_slo);
  s->set_goodput(o.goodput);
  s->set_mean_in_flight(o.mean_in_flight);
  s->set_littles_law_in_flight(o.littles_law_in_flight);
  s->set_mean_batch(o.mean_batch);
  for (const serve::Slice& x : o.slices) {
    v1::ServeSlice* slice = s->add_slices();
    slice->set_start_ms(x.start_ms);
    slice->set_end_ms(x.end_ms);
    slice->set_output_tokens(static_cast<int32_t>(x.output_tokens));
    slice->set_output_tokens_per_s(x.output_tokens_per_s);
    slice->set_requests_finished(x.requests_finished);
    slice->set_ttft_p50_ms(x.ttft_p50_ms);
    slice->set_itl_p50_ms(x.itl_p50_ms);
    slice->set_mean_batch(x.mean_batch);
  }
}

// Joules a token: the window's energy (telemetry over the window only)
// over the tokens made in it, output and output plus prompts.
void FillServeEnergy(double energy_j, const serve::Outcome& o, v1::ServeResult* s) {
  const double window_s = o.window_ms / 1e3;
  const double output = o.output_tokens_per_s * window_s, total = o.total_tokens_per_s * window_s;
  if (energy_j <= 0 || output <= 0) return;
  s->set_joules_per_output_token(energy_j / output);
  s->set_joules_per_token(energy_j / total);
}

}  // namespace

void FillRun(const engine::RunOutcome& o, v1::Run* run) {
  run->set_state(ToState(o.status));
  run->set_error(o.error);
  v1::RunResult* r = run->mutable_result();
  r->set_resolved_device(o.resolved_device);
  r->set_cpu_blas(o.cpu_blas);
  r->set_math_mode(o.math_mode);
  r->set_cpu_threads(o.cpu_threads);
  r->set_cpu_threads_reason(o.cpu_threads_reason);
  r->set_throughput_samples_per_s(o.throughput_samples_per_s);
  r->set_throughput_ci_low(o.throughput_ci_low);
  r->set_throughput_ci_high(o.throughput_ci_high);
  r->set_interval_basis(o.interval_basis);
  r->set_interval_samples(o.interval_samples);
  FillLatency(o.latency_ms, r->mutable_latency());
  FillLatency(o.host_latency_ms, r->mutable_host_latency());
  r->set_data_wait_share(o.data_wait_share);
  r->set_device_busy_share(o.device_busy_share);
  r->set_cold_start_ms(o.cold_start_ms);
  r->set_graph_capture_ms(o.graph_capture_ms);
  r->set_compile_ms(o.compile_ms);
  r->set_compile_cached(o.compile_cached);
  r->mutable_memory()->set_peak_device_allocated_bytes(o.peak_device_allocated_bytes);
  r->mutable_memory()->set_peak_device_reserved_bytes(o.peak_device_reserved_bytes);
  r->mutable_memory()->set_peak_host_rss_bytes(o.peak_host_rss_bytes);
  r->set_parameter_count(o.parameter_count);
  r->set_flops_per_iteration(o.flops_per_iteration);
  r->set_achieved_tflops(o.achieved_tflops);
  r->set_bandwidth_gb_per_s(o.bandwidth_gb_per_s);
  r->set_algorithm_bandwidth_gb_per_s(o.algorithm_bandwidth_gb_per_s);
  r->set_bus_bandwidth_gb_per_s(o.bus_bandwidth_gb_per_s);
  r->set_tokens_per_s(o.tokens_per_s);
  r->set_mfu(o.mfu);
  r->set_datasheet_peak_tflops(o.datasheet_peak_tflops);
  if (o.time_to_first_token_ms.count > 0) {
    FillLatency(o.time_to_first_token_ms, r->mutable_time_to_first_token());
  }
  if (o.inter_token_latency_ms.count > 0) {
    FillLatency(o.inter_token_latency_ms, r->mutable_inter_token_latency());
  }
  if (o.serve.requests_asked > 0) FillServe(o.serve, r->mutable_serve());
  r->set_decode_bandwidth_gb_per_s(o.decode_bandwidth_gb_per_s);
  r->set_attention_backend(o.attention_backend);
  r->set_memory_bytes_per_iteration(o.memory_bytes_per_iteration);
  r->set_device_kernel_share(o.profiled_device_share);
  r->set_profiled_iterations(o.profiled_iterations);
  r->set_first_loss(o.first_loss);
  r->set_last_loss(o.last_loss);
  if (o.dice >= 0) r->set_dice(o.dice);
  r->set_iterations(o.iterations);
  r->set_measured_ms(o.measured_ms);
  r->set_stable(o.stable);
  r->set_stopped_at_max_time(o.stopped_at_max_time);
  r->set_window_cv(o.window_cv);
  if (o.trials.size() > 1) {
    for (const auto& t : o.trials) {
      v1::TrialResult* tr = r->add_trials();
      tr->set_iterations(t.iterations);
      tr->set_throughput_samples_per_s(t.throughput_samples_per_s);
      tr->set_p50_ms(t.p50_ms);
    }
  }
  if (!o.profile.top.empty()) FillProfile(o.profile, r->mutable_profile());
  if (!o.profile_error.empty()) r->mutable_profile()->set_error(o.profile_error);
  if (o.numerics) CheckNumerics(*o.numerics, run);
  if (!o.telemetry.samples.empty() || !o.telemetry.unavailable_reason.empty()) {
    FillTelemetry(o.telemetry, o.throughput_samples_per_s, o.measured_ms, run);
  }
  if (r->has_serve()) FillServeEnergy(r->telemetry().energy_j(), o.serve, r->mutable_serve());
  FillSamples(o, run->mutable_samples());
  FillFingerprint(o.fingerprint, run->mutable_fingerprint());
}

}  // namespace gpubench::worker
