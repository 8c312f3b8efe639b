// Plain C++ types the engine works on. No torch and no protobuf here: this
// header is shared by the torch-heavy engine and the torch-free code that
// converts to and from gpubench.v1 messages (see docs/libtorch.md, trap 2).
//
// Enum values match the numbers of the gpubench.v1 enums of the same name.
#ifndef GPUBENCH_WORKER_ENGINE_CONFIG_H_
#define GPUBENCH_WORKER_ENGINE_CONFIG_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace gpubench::engine {

enum class Mode { kUnspecified = 0, kTrain = 1, kInfer = 2, kServe = 3 };
enum class Precision {
  kUnspecified = 0,
  kFp32 = 1,
  kTf32 = 2,
  kFp16 = 3,
  kBf16 = 4,
  kFp32Default = 5,  // PyTorch's default: TF32 in cuDNN convolutions only
  kFp8 = 6,          // matmul: e4m3 operands through _scaled_mm
};
// Its name in a spec: "fp32", "fp32_default".
inline const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kTf32: return "tf32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
    case Precision::kFp32Default: return "fp32_default";
    case Precision::kFp8: return "fp8";
    default: return "fp32";
  }
}
enum class Execution { kUnspecified = 0, kEager = 1, kCudaGraph = 2, kAot = 3, kAotCudaGraph = 4 };
// SDPA's backends; kAuto (and kUnspecified) let LibTorch pick.
enum class Attention { kUnspecified = 0, kAuto = 1, kFlash = 2, kEfficient = 3, kCudnn = 4,
                       kMath = 5 };
// Its name in a spec: "auto", "flash", "efficient", "cudnn", "math".
inline const char* AttentionName(Attention a) {
  switch (a) {
    case Attention::kFlash: return "flash";
    case Attention::kEfficient: return "efficient";
    case Attention::kCudnn: return "cudnn";
    case Attention::kMath: return "math";
    default: return "auto";
  }
}

// Whether a step is replayed from a captured CUDA graph.
inline bool UsesCudaGraph(Execution e) {
  return e == Execution::kCudaGraph || e == Execution::kAotCudaGraph;
}
// Whether the forward pass runs an AOTInductor package of the built-in model.
inline bool IsCompiled(Execution e) { return e == Execution::kAot || e == Execution::kAotCudaGraph; }
enum class InputSource { kUnspecified = 0, kDevice = 1, kHost = 2 };
enum class Optimizer { kUnspecified = 0, kSgd = 1, kAdamW = 2 };
// The file format of a user model, which decides its loader.
enum class ModelFormat { kTorchScript, kAotiPackage };
enum class CopyDirection {
  kUnspecified = 0,
  kHostToDevice = 1,
  kDeviceToHost = 2,
  kDeviceToDevice = 3
};
enum class CollectiveOp {
  kUnspecified = 0,
  kAllReduce = 1,
  kAllGather = 2,
  kReduceScatter = 3,
  kBroadcast = 4
};
enum class DType {
  kUnspecified = 0,
  kFloat32 = 1,
  kFloat16 = 2,
  kBFloat16 = 3,
  kInt64 = 4,
  kInt32 = 5,
  kUInt8 = 6
};

struct TensorSpec {
  std::vector<int64_t> shape;  // batch dimension first
  DType dtype = DType::kFloat32;
  int64_t low = 0, high = 100;  // integer inputs' values lie in [low, high)
};

// Host input pipeline settings (InputSource::kHost).
struct PipelineConfig {
  int loader_threads = 0;            // 0: load inline in the loop
  bool pinned_memory = false;        // collate into page-locked memory
  int prefetch_depth = 2;            // batches ahead per loader thread
  int extra_cost_us_per_sample = 0;  // extra CPU work per sample
  bool non_blocking = true;          // non_blocking copy on a side stream
};

// One fully resolved sweep point. Defaults are filled by the plan, so
// every field here is meaningful.
struct RunConfig {
  std::string workload;                // "mlp", "resnet50", ...
  // The plan filled every workload parameter (common/sweep.cc's
  // FillConfigDefaults, the one filler); the engine fills nothing.
  std::string model_size;              // mlp: small, medium, large
  int image_size = 0;                  // square side in pixels
  int num_classes = 0;                 // output classes
  int sequence_length = 0;             // tokens, characters or frames
  int num_layers = 0;                  // transformer
  int hidden_size = 0;                 // transformer width
  int num_heads = 0;                   // transformer heads
  bool decoder = false;                // transformer: causal decoder
  int vocab_size = 0;                  // bilstm, transformer
  int64_t matmul_m = 0;                // matmul
  int64_t matmul_n = 0;                // matmul
  int64_t matmul_k = 0;                // matmul
  int64_t copy_bytes = 0;              // copy
  CopyDirection copy_direction = CopyDirection::kHostToDevice;
  std::string model_path;              // torchscript / .pt2 file, canonical
  // An open descriptor of model_path (TorchScript), read instead of the
  // path: a worker that became another user cannot open the daemon's file.
  int model_fd = -1;
  ModelFormat model_format = ModelFormat::kTorchScript;  // which loader reads it
  std::vector<TensorSpec> inputs;      // torchscript inputs
  // Execution kAot*: the AOTInductor package compiled from the built-in
  // model's Python twin for this config (worker/aot.h).
  std::string aot_package;
  CollectiveOp collective_op = CollectiveOp::kAllReduce;  // collective
  int64_t collective_bytes = 0;        // collective: nccl-tests' size
  std::string ddp_model;               // ddp: the built-in model it trains
  int ddp_bucket_mb = 25;              // ddp: 0 = one all-reduce after backward

  // ddp and collective: this process's rank of world_size, each rank on its
  // own device (`device`); rank 0 opened the rendezvous store
  // (OpenRendezvous), the others reach it at 127.0.0.1:store_port.
  int world_size = 1;
  int rank = 0;
  int store_port = 0;
  // A pair across hosts (one rank on each): the store's host for rank 1,
  // this host's address for the collective's own connections (Gloo's
  // device), both 127.0.0.1 when empty; and sign(text), an HMAC of text
  // with the pair's secret, by which each rank proves itself to the other
  // before the collective (none when empty).
  std::string store_host;
  std::string local_address;
  std::function<std::string(const std::string&)> sign;

  Mode mode = Mode::kTrain;
  std::string device = "auto";  // auto, cpu, cuda, cuda:N, mps
  int batch_size = 32;
  Precision precision = Precision::kFp32;
  bool channels_last = false;
  bool cudnn_benchmark = false;
  Execution execution = Execution::kEager;
  InputSource input_source = InputSource::kDevice;
  PipelineConfig pipeline;
  Optimizer optimizer = Optimizer::kSgd;
  double learning_rate = 0;
  Attention attention = Attention::kAuto;
  // Language models (gpt, llama).
  int num_kv_heads = 0;     // llama: grouped-query key/value heads
  int ffn_hidden_size = 0;  // llama: SwiGLU width
  int prompt_length = 0;    // infer: tokens prefilled
  int new_tokens = 0;       // infer: tokens generated (the first by the prefill)
  // The pair's second GPU index; -1: none. copy device_to_device: the GPU
  // written to (peer to peer); collective: rank 1's (the planner's concern).
  int peer_device = -1;
  bool copy_kernel = false;  // copy device_to_device: by a kernel, not a memcpy
  // kServe: the load (gpubench.v1.ServeLoad, every field filled by the
  // plan): the arrival rate (0: a closed loop of concurrency), the gamma
  // shape of the gaps, the most requests in flight (0: no limit), the
  // requests warmed up and measured, the lengths (a max of 0 or below its
  // min: fixed) and the SLOs (0: none).
  double request_rate = 0;
  double burstiness = 1;
  int concurrency = 0;
  int num_requests = 0;
  int warmup_requests = 0;
  int input_len = 0, input_len_max = 0;
  int output_len = 0, output_len_max = 0;
  double slo_ttft_ms = 0, slo_tpot_ms = 0, slo_e2e_ms = 0;
  double slice_ms = 0;  // the window's time slices (0: none)
  int prefill_chunk = 0;  // the most prompt tokens a step prefills (0: whole prompts)
  // A trace replayed instead (gpubench.v1.TraceRequest, in order).
  struct TraceRequest {
    double arrival_ms = 0;
    int input_tokens = 0;
    int output_tokens = 0;
  };
  std::vector<TraceRequest> trace;
  // A run on the CPU: LibTorch's intra-op threads and why, as the worker
  // chose them for this host (launcher/cpu_cores.h); 0 keeps LibTorch's.
  int cpu_threads = 0;
  std::string cpu_threads_reason;  // "2: the CPUs this worker may use (...)"
};

// The longest prompt and the longest output a serving load sends (a
// trace's, or its drawn lengths' bounds): a slot of the cache holds both,
// and its positions run to their sum less one.
inline std::pair<int64_t, int64_t> LongestServed(const RunConfig& c) {
  if (c.trace.empty()) {
    // A max of 0 or below its min: fixed.
    return {std::max(c.input_len, c.input_len_max), std::max(c.output_len, c.output_len_max)};
  }
  int64_t input = 1, output = 1;
  for (const RunConfig::TraceRequest& t : c.trace) {
    input = std::max<int64_t>(input, t.input_tokens);
    output = std::max<int64_t>(output, t.output_tokens);
  }
  return {input, output};
}

// Where the spec's scalar fields of a run land in RunConfig: the field's
// path below gpubench.v1.RunConfig and the member. worker/convert.cc copies
// each (a field with presence only where it is set); a new parameter is its
// member above and its row here. The enums, the pipeline, the inputs and
// the fields with a fallback of their own are copied by hand there;
// ToEngineConfig.EverySchemaFieldOfARunMaps checks that every field of the
// spec's schema reaches RunConfig.
struct FieldMap {
  const char* path;
  std::variant<int RunConfig::*, int64_t RunConfig::*, bool RunConfig::*, double RunConfig::*,
               std::string RunConfig::*>
      member;
};
inline const std::vector<FieldMap>& FieldMaps() {
  static const auto* maps = new std::vector<FieldMap>{
      {"workload", &RunConfig::workload},
      {"device", &RunConfig::device},
      {"batch_size", &RunConfig::batch_size},
      {"channels_last", &RunConfig::channels_last},
      {"cudnn_benchmark", &RunConfig::cudnn_benchmark},
      {"learning_rate", &RunConfig::learning_rate},
      {"params.model_size", &RunConfig::model_size},
      {"params.image_size", &RunConfig::image_size},
      {"params.num_classes", &RunConfig::num_classes},
      {"params.sequence_length", &RunConfig::sequence_length},
      {"params.num_layers", &RunConfig::num_layers},
      {"params.hidden_size", &RunConfig::hidden_size},
      {"params.num_heads", &RunConfig::num_heads},
      {"params.decoder", &RunConfig::decoder},
      {"params.vocab_size", &RunConfig::vocab_size},
      {"params.matmul_m", &RunConfig::matmul_m},
      {"params.matmul_n", &RunConfig::matmul_n},
      {"params.matmul_k", &RunConfig::matmul_k},
      {"params.copy_bytes", &RunConfig::copy_bytes},
      {"params.model_path", &RunConfig::model_path},
      {"params.collective_bytes", &RunConfig::collective_bytes},
      {"params.ddp_model", &RunConfig::ddp_model},
      {"params.num_kv_heads", &RunConfig::num_kv_heads},
      {"params.ffn_hidden_size", &RunConfig::ffn_hidden_size},
      {"params.prompt_length", &RunConfig::prompt_length},
      {"params.new_tokens", &RunConfig::new_tokens},
      {"params.peer_device", &RunConfig::peer_device},
      {"params.copy_kernel", &RunConfig::copy_kernel},
      {"serve.request_rate", &RunConfig::request_rate},
      {"serve.burstiness", &RunConfig::burstiness},
      {"serve.concurrency", &RunConfig::concurrency},
      {"serve.num_requests", &RunConfig::num_requests},
      {"serve.warmup_requests", &RunConfig::warmup_requests},
      {"serve.input_len", &RunConfig::input_len},
      {"serve.input_len_max", &RunConfig::input_len_max},
      {"serve.output_len", &RunConfig::output_len},
      {"serve.output_len_max", &RunConfig::output_len_max},
      {"serve.slo_ttft_ms", &RunConfig::slo_ttft_ms},
      {"serve.slo_tpot_ms", &RunConfig::slo_tpot_ms},
      {"serve.slo_e2e_ms", &RunConfig::slo_e2e_ms},
      {"serve.slice_ms", &RunConfig::slice_ms},
      {"serve.prefill_chunk", &RunConfig::prefill_chunk},
  };
  return *maps;
}


}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_CONFIG_H_
