#include "client/spec_flags.h"

#include <functional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/suggest.h"
#include "common/spec.h"

namespace gpubench::client {
namespace {

using Values = std::vector<std::string>;

absl::Status Bad(const std::string& flag, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

absl::StatusOr<int64_t> ToInt(const std::string& flag, const std::string& v) {
  int64_t n;
  if (!absl::SimpleAtoi(v, &n)) return Bad(flag, absl::StrCat("not an integer: \"", v, "\""));
  return n;
}

absl::StatusOr<double> ToDouble(const std::string& flag, const std::string& v) {
  double d;
  if (!absl::SimpleAtod(v, &d)) return Bad(flag, absl::StrCat("not a number: \"", v, "\""));
  return d;
}

absl::StatusOr<bool> ToBool(const std::string& flag, const std::string& v) {
  if (v == "on" || v == "true" || v == "1" || v == "yes") return true;
  if (v == "off" || v == "false" || v == "0" || v == "no") return false;
  return Bad(flag, absl::StrCat("expected on/off, got \"", v, "\""));
}

absl::StatusOr<int> ToEnum(const std::string& flag,
                           const google::protobuf::EnumDescriptor* type,
                           const std::string& v) {
  auto n = ParseEnumShortName(type, v);
  if (!n.ok()) return Bad(flag, std::string(n.status().message()));
  return *n;
}

// An integer in [lo, hi], or an error naming the flag.
auto IntIn(int64_t lo, int64_t hi) {
  return [lo, hi](const std::string& flag, const std::string& v) -> absl::StatusOr<int64_t> {
    auto n = ToInt(flag, v);
    if (n.ok() && (*n < lo || *n > hi)) {
      return Bad(flag, absl::StrCat("must be in [", lo, ", ", hi, "], got ", *n));
    }
    return n;
  };
}

// One flag: how to set a single value on the base, and how to add it to the
// sweep axis when several are given.
struct Flag {
  std::string help;
  std::function<absl::Status(const std::string& flag, const Values&,
                             v1::JobSpec*)>
      apply;
  bool boolean = false;  // a switch: bare means on
  bool text = false;     // free text: a comma is part of the value, not a list
};

// f, as a switch.
Flag Switch(Flag f) {
  f.boolean = true;
  return f;
}

// f, taking free text.
Flag Text(Flag f) {
  f.text = true;
  return f;
}

template <typename Parse, typename SetBase, typename AddSweep>
Flag Axis(std::string help, Parse parse, SetBase set_base, AddSweep add_sweep) {
  return {help, [parse, set_base, add_sweep](const std::string& flag,
                                              const Values& values,
                                              v1::JobSpec* spec) -> absl::Status {
            for (const auto& v : values) {
              auto parsed = parse(flag, v);
              if (!parsed.ok()) return parsed.status();
              if (values.size() == 1) {
                set_base(*parsed, spec->mutable_base());
              } else {
                add_sweep(*parsed, spec->mutable_sweep());
              }
            }
            return absl::OkStatus();
          }};
}

absl::StatusOr<std::string> AsString(const std::string&, const std::string& v) {
  return v;
}

auto EnumParser(const google::protobuf::EnumDescriptor* type) {
  return [type](const std::string& flag, const std::string& v) {
    return ToEnum(flag, type, v);
  };
}

// A base-only setting: one value.
template <typename Parse, typename Set>
Flag Single(std::string help, Parse parse, Set set) {
  return {help, [parse, set](const std::string& flag, const Values& values,
                             v1::JobSpec* spec) -> absl::Status {
            if (values.size() != 1) return Bad(flag, "takes one value");
            auto parsed = parse(flag, values[0]);
            if (!parsed.ok()) return parsed.status();
            set(*parsed, spec);
            return absl::OkStatus();
          }};
}

// "MIN:MAX" as every power-of-two multiple of MIN up to MAX (nccl-tests'
// -b MIN -e MAX -f 2); other values as they are.
Flag PowersOfTwo(Flag axis) {
  return {axis.help, [axis](const std::string& flag, const Values& values,
                            v1::JobSpec* spec) -> absl::Status {
            Values expanded;
            for (const std::string& v : values) {
              const std::vector<std::string> ends = absl::StrSplit(v, ':');
              if (ends.size() == 1) {
                expanded.push_back(v);
                continue;
              }
              auto lo = ToInt(flag, ends[0]);
              if (!lo.ok()) return lo.status();
              auto hi = ends.size() == 2 ? ToInt(flag, ends[1]) : Bad(flag, "MIN:MAX");
              if (!hi.ok()) return hi.status();
              if (*lo < 1 || *hi < *lo || *hi > (int64_t{1} << 40)) {
                return Bad(flag, absl::StrCat("range ", v, ": need 1 <= MIN <= MAX <= 2^40"));
              }
              for (int64_t n = *lo; n <= *hi; n *= 2) expanded.push_back(absl::StrCat(n));
            }
            return axis.apply(flag, expanded, spec);
          }};
}

// --model-size's help: each workload's sizes, from the registry.
std::string ModelSizesHelp() {
  std::vector<std::string> parts;
  for (const WorkloadInfo* w : Workloads()) {
    if (!w->model_sizes.empty()) {
      parts.push_back(absl::StrCat(w->name, " ", absl::StrJoin(w->model_sizes, ", ")));
    }
  }
  return absl::StrCat("model size(s): ", absl::StrJoin(parts, "; "));
}

const std::map<std::string, Flag>& Flags() {
  using C = v1::RunConfig;
  using S = v1::Sweep;
  using J = v1::JobSpec;
  static const auto* flags = new std::map<std::string, Flag>{
      {"workload",
       Axis(absl::StrCat("workload name(s): ",
                         WorkloadNames([](const WorkloadInfo&) { return true; }),
                         " (gpubench workloads)"),
            AsString, [](const std::string& v, C* c) { c->set_workload(v); },
            [](const std::string& v, S* s) { s->add_workload(v); })},
      {"model-size",
       Axis(ModelSizesHelp(), AsString,
            [](const std::string& v, C* c) { c->mutable_params()->set_model_size(v); },
            [](const std::string& v, S* s) { s->add_model_size(v); })},
      {"mode", Axis("train, infer", EnumParser(v1::Mode_descriptor()),
                    [](int v, C* c) { c->set_mode(static_cast<v1::Mode>(v)); },
                    [](int v, S* s) { s->add_mode(static_cast<v1::Mode>(v)); })},
      {"device", Axis("auto, cpu, cuda, cuda:N, cuda:all (each GPU, side by side), mps", AsString,
                      [](const std::string& v, C* c) { c->set_device(v); },
                      [](const std::string& v, S* s) { s->add_device(v); })},
      {"batch", Axis("batch size(s), e.g. 32,64,128", IntIn(1, 65536),
                     [](int64_t v, C* c) { c->set_batch_size(v); },
                     [](int64_t v, S* s) { s->add_batch_size(v); })},
      {"precision",
       Axis("fp32 (TF32 off), fp32_default (PyTorch's: TF32 in cuDNN convolutions), tf32, fp16, "
            "bf16, fp8 (matmul: e4m3 through torch._scaled_mm)",
            EnumParser(v1::Precision_descriptor()),
            [](int v, C* c) { c->set_precision(static_cast<v1::Precision>(v)); },
            [](int v, S* s) { s->add_precision(static_cast<v1::Precision>(v)); })},
      {"channels-last", Switch(Axis("on/off (bare: on)", ToBool,
                                    [](bool v, C* c) { c->set_channels_last(v); },
                                    [](bool v, S* s) { s->add_channels_last(v); }))},
      {"cudnn-benchmark", Switch(Axis("on/off (bare: on)", ToBool,
                                      [](bool v, C* c) { c->set_cudnn_benchmark(v); },
                                      [](bool v, S* s) { s->add_cudnn_benchmark(v); }))},
      {"execution",
       Axis("eager, cuda_graph, aot, aot_cuda_graph", EnumParser(v1::Execution_descriptor()),
            [](int v, C* c) { c->set_execution(static_cast<v1::Execution>(v)); },
            [](int v, S* s) { s->add_execution(static_cast<v1::Execution>(v)); })},
      {"input", Axis("device, host", EnumParser(v1::InputSource_descriptor()),
                     [](int v, C* c) {
                       c->set_input_source(static_cast<v1::InputSource>(v));
                     },
                     [](int v, S* s) {
                       s->add_input_source(static_cast<v1::InputSource>(v));
                     })},
      {"loader-threads",
       Axis("host pipeline loader threads, e.g. 0,4", ToInt,
            [](int64_t v, C* c) { c->mutable_pipeline()->set_loader_threads(v); },
            [](int64_t v, S* s) { s->add_loader_threads(v); })},
      {"pinned", Switch(Axis("host pipeline pinned memory on/off (bare: on)", ToBool,
                             [](bool v, C* c) { c->mutable_pipeline()->set_pinned_memory(v); },
                             [](bool v, S* s) { s->add_pinned_memory(v); }))},
      {"image-size", Axis("image side in pixels", ToInt,
                          [](int64_t v, C* c) { c->mutable_params()->set_image_size(v); },
                          [](int64_t v, S* s) { s->add_image_size(v); })},
      {"prompt-len",
       Axis("gpt, llama infer: prompt tokens prefilled before decoding (default 512)",
            IntIn(1, 1 << 20),
            [](int64_t v, C* c) { c->mutable_params()->set_prompt_length(v); },
            [](int64_t v, S* s) { s->add_prompt_length(v); })},
      {"new-tokens",
       Axis("gpt, llama infer: tokens generated after the prompt (default 128)",
            IntIn(1, 1 << 20), [](int64_t v, C* c) { c->mutable_params()->set_new_tokens(v); },
            [](int64_t v, S* s) { s->add_new_tokens(v); })},
      {"attention",
       Axis("attention kernel: auto, flash, efficient, cudnn, math (transformer, gpt, llama)",
            EnumParser(v1::Attention_descriptor()),
            [](int v, C* c) { c->set_attention(static_cast<v1::Attention>(v)); },
            [](int v, S* s) { s->add_attention(static_cast<v1::Attention>(v)); })},
      {"power-limit",
       Axis("GPU power limit in watts for the run, e.g. 700,500,350 (a daemon started with "
            "--allow-clock-control sets it and restores it after)",
            ToDouble, [](double v, C* c) { c->set_power_limit_w(v); },
            [](double v, S* s) { s->add_power_limit_w(v); })},
      {"gpu-clocks",
       Axis("lock the GPU's graphics clock for the run: base, max or MHz (with "
            "--allow-clock-control on the daemon)",
            AsString, [](const std::string& v, C* c) { c->set_gpu_clocks(v); },
            [](const std::string& v, S* s) { s->add_gpu_clocks(v); })},
      {"num-layers", Single("transformer, gpt, llama: layers (gpt, llama: model-size custom)",
                            IntIn(1, 256), [](int64_t v, J* j) {
                              j->mutable_base()->mutable_params()->set_num_layers(v);
                            })},
      {"hidden-size", Single("transformer, gpt, llama: width", IntIn(8, 65536),
                             [](int64_t v, J* j) {
                               j->mutable_base()->mutable_params()->set_hidden_size(v);
                             })},
      {"num-heads", Single("transformer, gpt, llama: attention heads", IntIn(1, 1024),
                           [](int64_t v, J* j) {
                             j->mutable_base()->mutable_params()->set_num_heads(v);
                           })},
      {"num-kv-heads", Single("llama: key/value heads (grouped-query attention)", IntIn(1, 1024),
                              [](int64_t v, J* j) {
                                j->mutable_base()->mutable_params()->set_num_kv_heads(v);
                              })},
      {"ffn-size", Single("llama: SwiGLU feed-forward width", IntIn(8, 1 << 20),
                          [](int64_t v, J* j) {
                            j->mutable_base()->mutable_params()->set_ffn_hidden_size(v);
                          })},
      {"vocab-size", Single("bilstm, transformer, gpt, llama: vocabulary", IntIn(2, 10000000),
                            [](int64_t v, J* j) {
                              j->mutable_base()->mutable_params()->set_vocab_size(v);
                            })},
      {"seq-len", Axis("sequence length", ToInt,
                       [](int64_t v, C* c) {
                         c->mutable_params()->set_sequence_length(v);
                       },
                       [](int64_t v, S* s) { s->add_sequence_length(v); })},
      {"matmul-size", Axis("matmul M=N=K", ToInt,
                           [](int64_t v, C* c) {
                             c->mutable_params()->set_matmul_m(v);
                             c->mutable_params()->set_matmul_n(v);
                             c->mutable_params()->set_matmul_k(v);
                           },
                           [](int64_t v, S* s) { s->add_matmul_size(v); })},
      {"copy-bytes", Axis("copy size in bytes", ToInt,
                          [](int64_t v, C* c) { c->mutable_params()->set_copy_bytes(v); },
                          [](int64_t v, S* s) { s->add_copy_bytes(v); })},
      {"world-size",
       Axis("ddp and collective: ranks (one process, one GPU each), e.g. 1,2,4", IntIn(1, 64),
            [](int64_t v, C* c) { c->set_world_size(v); },
            [](int64_t v, S* s) { s->add_world_size(v); })},
      {"collective-op",
       Axis("collective: all_reduce, all_gather, reduce_scatter, broadcast",
            EnumParser(v1::CollectiveOp_descriptor()),
            [](int v, C* c) {
              c->mutable_params()->set_collective_op(static_cast<v1::CollectiveOp>(v));
            },
            [](int v, S* s) { s->add_collective_op(static_cast<v1::CollectiveOp>(v)); })},
      {"collective-bytes",
       PowersOfTwo(Axis("collective: message bytes, a list or MIN:MAX (powers of two)", ToInt,
                        [](int64_t v, C* c) {
                          c->mutable_params()->set_collective_bytes(v);
                        },
                        [](int64_t v, S* s) { s->add_collective_bytes(v); }))},
      {"ddp-model",
       Single("ddp: the built-in model to train data-parallel (default resnet50)", AsString,
              [](const std::string& v, J* j) {
                j->mutable_base()->mutable_params()->set_ddp_model(v);
              })},
      {"ddp-bucket-mb",
       Single("ddp: all-reduce gradients in buckets of this many MiB during backward "
              "(default 25, as DistributedDataParallel); 0: one message after backward",
              IntIn(0, 4096),
              [](int64_t v, J* j) {
                j->mutable_base()->mutable_params()->set_ddp_bucket_mb(static_cast<int>(v));
              })},
      {"copy-direction",
       Single("host_to_device, device_to_host, device_to_device",
              EnumParser(v1::CopyDirection_descriptor()),
              [](int v, J* j) {
                j->mutable_base()->mutable_params()->set_copy_direction(
                    static_cast<v1::CopyDirection>(v));
              })},
      {"optimizer", Single("sgd, adamw", EnumParser(v1::Optimizer_descriptor()),
                           [](int v, J* j) {
                             j->mutable_base()->set_optimizer(
                                 static_cast<v1::Optimizer>(v));
                           })},
      {"learning-rate", Single("optimizer learning rate (default: sgd 1e-2, adamw 1e-3)",
                               ToDouble,
                               [](double v, J* j) { j->mutable_base()->set_learning_rate(v); })},
      {"extra-cost-us", Single("host pipeline extra CPU cost per sample, us", ToInt,
                               [](int64_t v, J* j) {
                                 j->mutable_base()->mutable_pipeline()
                                     ->set_extra_cost_us_per_sample(v);
                               })},
      {"min-time-ms", Single("minimum measured time per run", ToInt,
                             [](int64_t v, J* j) {
                               j->mutable_measurement()->set_min_time_ms(v);
                             })},
      {"max-time-ms", Single("maximum measured time per run", ToInt,
                             [](int64_t v, J* j) {
                               j->mutable_measurement()->set_max_time_ms(v);
                             })},
      {"min-iterations", Single("minimum measured iterations per run", ToInt,
                                [](int64_t v, J* j) {
                                  j->mutable_measurement()->set_min_iterations(v);
                                })},
      {"warmup", Single("warm-up iterations", ToInt,
                        [](int64_t v, J* j) {
                          j->mutable_measurement()->set_warmup_iterations(v);
                        })},
      {"cv-threshold", Single("a run is stable once its last 3 windows' throughput varies "
                              "less than this (coefficient of variation, default 0.02)",
                              ToDouble,
                              [](double v, J* j) {
                                j->mutable_measurement()->set_cv_threshold(v);
                              })},
      {"trials", Single("independent measurement windows per run", ToInt,
                        [](int64_t v, J* j) {
                          j->mutable_measurement()->set_trials(v);
                        })},
      {"window", Single("iterations per measured window (stability is judged per window)",
                        ToInt,
                        [](int64_t v, J* j) {
                          j->mutable_measurement()->set_window_iterations(v);
                        })},
      {"prefetch-depth",
       Axis("host pipeline batches in flight per loader thread (PyTorch's prefetch_factor)",
            ToInt, [](int64_t v, C* c) { c->mutable_pipeline()->set_prefetch_depth(v); },
            [](int64_t v, S* s) { s->add_prefetch_depth(v); })},
      {"non-blocking",
       Switch(Single("host pipeline: copy batches to the device with non_blocking (bare: on)",
                     ToBool, [](bool v, J* j) {
                       j->mutable_base()->mutable_pipeline()->set_non_blocking(v);
                     }))},
      {"profile", Switch(Single("a profiled window after measuring: top operators, a Chrome "
                                "trace (`gpubench trace RUN`)",
                                ToBool,
                                [](bool v, J* j) { j->mutable_profiling()->set_enabled(v); }))},
      {"profile-iterations", Single("iterations in the profiled window", ToInt,
                                    [](int64_t v, J* j) {
                                      j->mutable_profiling()->set_enabled(true);
                                      j->mutable_profiling()->set_iterations(v);
                                    })},
      {"top-operators", Single("operators the profile keeps", ToInt,
                               [](int64_t v, J* j) {
                                 j->mutable_profiling()->set_enabled(true);
                                 j->mutable_profiling()->set_top_operators(v);
                               })},
      {"name", Text(Single("job name (commas are part of it)", AsString,
                           [](const std::string& v, J* j) { j->set_name(v); }))},
      {"check-numerics",
       Switch(Single("check each model run's output (and loss, gradient) against fp64 on "
                     "the CPU",
                     ToBool, [](bool v, J* j) { j->set_check_numerics(v); }))},
      {"cpu-threads",
       Single("LibTorch's intra-op threads for CPU runs (default 0: the CPUs the worker may "
              "use, its affinity and cgroup quota, less the run's loader threads)",
              IntIn(0, 1024), [](int64_t v, J* j) { j->set_cpu_threads(static_cast<int>(v)); })},
      {"exclusive", Switch(Single("no other job runs beside this one (default: on for "
                                  "schedules, off otherwise; a CPU job always runs alone)",
                                  ToBool, [](bool v, J* j) { j->set_exclusive(v); }))},
  };
  return *flags;
}

}  // namespace

const std::map<std::string, std::string>& SpecFlagHelp() {
  static const auto* help = [] {
    auto* m = new std::map<std::string, std::string>;
    for (const auto& [name, flag] : Flags()) (*m)[name] = flag.help;
    return m;
  }();
  return *help;
}

bool IsSpecSwitch(const std::string& name) {
  auto it = Flags().find(name);
  return it != Flags().end() && it->second.boolean;
}

absl::Status ApplySpecFlags(const std::map<std::string, std::string>& flags,
                            v1::JobSpec* spec) {
  for (const auto& [name, value] : flags) {
    auto it = Flags().find(name);
    if (it == Flags().end()) {
      std::vector<std::string> known;
      for (const auto& [flag, unused] : Flags()) known.push_back(flag);
      return Bad(name, absl::StrCat("unknown flag", DidYouMean(name, known), "; see --help"));
    }
    const Values values = it->second.text ? Values{value}
                                          : Values(absl::StrSplit(value, ',', absl::SkipEmpty()));
    if (values.empty()) return Bad(name, "needs a value");
    if (auto s = it->second.apply(name, values, spec); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace gpubench::client
