// What a run config's zero or empty fields mean: the one table of defaults,
// read by the spec code (common/spec.cc fills them into every expanded
// config, so that stored configs compare field by field: a batch left out
// is stored as 32, and time per sample divides by it) and by the engine
// (worker/engine/defaults.cc, for configs built in C++). Plain C++, no
// protobuf and no torch: the engine may include it.
#ifndef GPUBENCH_COMMON_WORKLOAD_DEFAULTS_H_
#define GPUBENCH_COMMON_WORKLOAD_DEFAULTS_H_

#include <cstdint>
#include <string_view>

namespace gpubench {

inline constexpr int kDefaultBatchSize = 32;
inline constexpr double kDefaultSgdLearningRate = 1e-2;
inline constexpr double kDefaultAdamWLearningRate = 1e-3;
inline constexpr int kDefaultPrefetchDepth = 2;
inline constexpr char kDefaultDdpModel[] = "resnet50";
// ddp's gradient bucket cap in MiB, as DistributedDataParallel's
// bucket_cap_mb.
inline constexpr int kDefaultDdpBucketMb = 25;

// The built-in models: what the engine builds, ddp trains and aot compiles.
inline bool IsModelWorkload(std::string_view workload) {
  for (std::string_view name : {"mlp", "simple_cnn", "resnet18", "resnet50", "unet", "bilstm",
                                "cnn_lstm", "transformer"}) {
    if (workload == name) return true;
  }
  return false;
}

// ddp and collective: one worker per rank, world_size ranks.
inline bool IsDistributedWorkload(std::string_view workload) {
  return workload == "ddp" || workload == "collective";
}

// The workload whose model (and defaults) a run uses: ddp trains ddp_model
// (default resnet50); any other workload is its own.
inline std::string_view ModelWorkload(std::string_view workload, std::string_view ddp_model) {
  if (workload != "ddp") return workload;
  return ddp_model.empty() ? std::string_view(kDefaultDdpModel) : ddp_model;
}

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
  int64_t matmul_size = 0;     // M, N and K each
  int64_t copy_bytes = 0;
  int copy_direction = 0;      // gpubench.v1.CopyDirection's number
  int64_t collective_bytes = 0;
  int collective_op = 0;       // gpubench.v1.CollectiveOp's number
};

inline WorkloadDefaults DefaultsOf(std::string_view workload) {
  WorkloadDefaults d;
  if (workload == "mlp" || workload == "simple_cnn") {
    d.model_size = "small";
    d.image_size = 32;
    d.num_classes = 10;
  } else if (workload == "resnet18" || workload == "resnet50") {
    d.image_size = 224;
    d.num_classes = 1000;
  } else if (workload == "unet") {
    d.image_size = 128;
    d.num_classes = 3;
  } else if (workload == "bilstm") {
    d.sequence_length = 256;
    d.num_classes = 3;
    d.vocab_size = 128;
  } else if (workload == "cnn_lstm") {
    d.sequence_length = 16;
    d.image_size = 64;
    d.num_classes = 10;
  } else if (workload == "transformer") {
    d.sequence_length = 512;
    d.num_layers = 6;
    d.hidden_size = 512;
    d.num_heads = 8;
    d.num_classes = 10;
    d.vocab_size = 32000;
  } else if (workload == "matmul") {
    d.matmul_size = 4096;
  } else if (workload == "copy") {
    d.copy_bytes = int64_t{256} << 20;
    d.copy_direction = 1;  // host to device
  } else if (workload == "collective") {
    d.collective_bytes = int64_t{1} << 20;
    d.collective_op = 1;  // all-reduce
  }
  return d;
}

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_WORKLOAD_DEFAULTS_H_
