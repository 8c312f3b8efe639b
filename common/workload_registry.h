// The built-in workloads, each declared once: its parameters' defaults,
// the floors its model needs, which options apply (modes, execution,
// ranks, input), and its one-line summary. The spec layer validates and
// fills configs from it, the CLI lists it, the report asks it what a run
// measures, and the engine reads the same defaults. Each workload's entry is
// its own file, common/workloads/NAME.cc, listed once in
// workload_registry.cc. Plain C++: no protobuf, no torch; thread-safe
// (immutable after first use).
#ifndef GPUBENCH_COMMON_WORKLOAD_REGISTRY_H_
#define GPUBENCH_COMMON_WORKLOAD_REGISTRY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpubench {

inline constexpr int kDefaultBatchSize = 32;
inline constexpr double kDefaultSgdLearningRate = 1e-2;
inline constexpr double kDefaultAdamWLearningRate = 1e-3;
inline constexpr int kDefaultPrefetchDepth = 2;
inline constexpr char kDefaultDdpModel[] = "resnet50";
// ddp's gradient bucket cap in MiB, as DistributedDataParallel's
// bucket_cap_mb.
inline constexpr int kDefaultDdpBucketMb = 25;

// A workload's parameters where a spec leaves them 0 or empty; 0 or ""
// where the workload has no such parameter.
struct WorkloadDefaults {
  const char* model_size = "";
  int image_size = 0;
  int num_classes = 0;
  int sequence_length = 0;
  int num_layers = 0;
  int hidden_size = 0;
  int num_heads = 0;
  int vocab_size = 0;
  int num_kv_heads = 0;        // llama
  int ffn_hidden_size = 0;     // llama
  int prompt_length = 0;       // language models, inference
  int new_tokens = 0;          // language models, inference
  int64_t matmul_size = 0;     // M, N and K each
  int64_t copy_bytes = 0;
  int copy_direction = 0;      // gpubench.v1.CopyDirection's number
  int64_t collective_bytes = 0;
  int collective_op = 0;       // gpubench.v1.CollectiveOp's number
};

// A built-in model's sizes as a run gives them: its config's params with the
// defaults filled.
struct ModelShape {
  std::string model_size;
  int64_t image_size = 0;
  int64_t num_classes = 0;
  int64_t sequence_length = 0;
  int64_t num_layers = 0;
  int64_t hidden_size = 0;
  int64_t num_heads = 0;
  int64_t vocab_size = 0;
  bool decoder = false;
  int64_t num_kv_heads = 0;
  int64_t ffn_hidden_size = 0;
};

// What a built-in model costs, from its architecture alone: its trainable
// parameters, and the FLOPs per sample of its forward pass and of a training
// step (forward and backward), layer by layer (a multiply-add is 2: the
// convolutions, matrix products, LSTM gates and attention; not the
// elementwise work; cost::Work says how a backward pass is counted).
// models_test checks both against LibTorch's profiler.
struct ModelCost {
  int64_t parameters = 0;
  double forward_flops_per_sample = 0;
  double train_flops_per_sample = 0;
  // Of the forward figure, attention's two products over every query-key
  // pair; a causal kernel that skips the masked half runs about half of it
  // (engine: AttentionRun), and a training step three times that.
  double attention_flops_per_sample = 0;
};

// What one sample of the workload's input is, for the size bounds.
enum class SampleShape {
  kNone,    // a kernel: no batch of samples (matmul, copy, collective, empty)
  kImage,   // image_size² pixels
  kFrames,  // sequence_length frames of image_size² pixels
  kTokens,  // sequence_length tokens
  kGiven,   // the user's own inputs (torchscript)
};

// Each built-in workload, for the code that treats one apart from the rest
// (a figure only it reports, a check only it needs): a run's workload is
// told apart by IsWorkload, never by its name.
enum class WorkloadId {
  kUnknown,
  kMlp,
  kSimpleCnn,
  kResnet18,
  kResnet50,
  kUnet,
  kBilstm,
  kCnnLstm,
  kTransformer,
  kGpt,
  kLlama,
  kMatmul,
  kAttention,
  kCopy,
  kEmpty,
  kTorchscript,
  kCollective,
  kDdp,
};

struct WorkloadInfo {
  WorkloadId id = WorkloadId::kUnknown;
  std::string name;
  std::string summary;  // one line, for `gpubench workloads` and --help
  // A built-in model's layers in a line ("7x7 conv stem, 4 stages of 2 basic
  // blocks, 64 to 512 channels, global pool, linear"); "" for the others.
  std::string architecture;
  // A built-in model's cost at a shape; null for the others. All zero for a
  // shape the model refuses (an unknown model_size).
  ModelCost (*cost)(const ModelShape&) = nullptr;
  // A built-in network: ddp can train it, aot compiles it, check_numerics
  // checks it.
  bool model = false;
  // One worker per rank, world_size ranks (ddp, collective).
  bool distributed = false;
  // Runs batches of samples in a mode (train, infer); a kernel (matmul,
  // copy, collective, empty) has neither.
  bool batched = true;
  bool trains = true;            // mode train applies
  bool infers = true;            // mode infer applies
  bool compiles = false;         // execution aot / aot_cuda_graph
  bool graphs = true;            // execution cuda_graph
  bool host_input = true;        // input_source host (the loader pipeline)
  bool checks_numerics = false;  // check_numerics
  bool on_mps = true;            // device mps
  SampleShape sample = SampleShape::kNone;
  int min_image_size = 0;        // the model's floor beyond the spec's (pools)
  // A language model (gpt, llama): training counts tokens and MFU;
  // inference prefills a prompt and decodes new tokens with a KV cache.
  bool language_model = false;
  // Scaled-dot-product attention inside: `attention` picks its kernel.
  bool attends = false;
  // The model_size values it takes, in order ("" where it has none).
  std::vector<std::string> model_sizes;
  // Where model_size names a shape (gpt "350m"): sets d's layers, widths
  // and heads for size; false for a size it does not know. Null where the
  // sizes set no parameter (mlp's widths are the model's own).
  bool (*size_shape)(std::string_view size, WorkloadDefaults* d) = nullptr;
  WorkloadDefaults defaults;
};

// Every built-in workload, in the order the CLI lists them.
const std::vector<const WorkloadInfo*>& Workloads();

// The workload named name, or nullptr.
const WorkloadInfo* FindWorkload(std::string_view name);

// The id of the workload named name; kUnknown for a name of none.
WorkloadId IdOf(std::string_view name);

// The name of the workload id ("" for kUnknown).
std::string NameOf(WorkloadId id);

// Whether name is the workload id's.
inline bool IsWorkload(std::string_view name, WorkloadId id) { return IdOf(name) == id; }

// The names of the workloads for which pick(info) holds, joined with ", ".
std::string WorkloadNames(bool (*pick)(const WorkloadInfo&));

// The built-in models: what the engine builds, ddp trains and aot compiles.
bool IsModelWorkload(std::string_view workload);

// ddp and collective: one worker per rank, world_size ranks.
bool IsDistributedWorkload(std::string_view workload);

// The workload whose model (and defaults) a run uses: ddp trains ddp_model
// (default resnet50); any other workload is its own.
std::string_view ModelWorkload(std::string_view workload, std::string_view ddp_model);

// The default of a parameter w reads (the spec's schema says which:
// ParamsReadBy) as text ("224", "small"), "" where it has
// none (a path, an option off).
std::string DefaultText(const WorkloadInfo& w, std::string_view param);

// The defaults of workload; all zero for an unknown name. With a
// model_size that names a shape (size_shape), that shape's layers, widths
// and heads.
WorkloadDefaults DefaultsOf(std::string_view workload, std::string_view model_size = "");

// w's model at its defaults, model_size as given ("" keeps the default).
ModelShape DefaultShape(const WorkloadInfo& w, std::string_view model_size = "");

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_WORKLOAD_REGISTRY_H_
