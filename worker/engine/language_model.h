// The language models (gpt, llama; models_lm.cc): a BenchModel that trains
// on whole sequences, and that decodes with a static KV cache, in the two
// forms the decode workload (workloads/decode.cc) times. Includes LibTorch:
// engine TUs only.
#ifndef GPUBENCH_WORKER_ENGINE_LANGUAGE_MODEL_H_
#define GPUBENCH_WORKER_ENGINE_LANGUAGE_MODEL_H_

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

#include "worker/engine/config.h"
#include "worker/engine/types.h"
#include "worker/engine/models.h"
#include "worker/serve.h"

namespace gpubench::engine {

class LanguageModel : public BenchModel {
 public:
  // Allocates the KV cache (each layer's keys and values [batch, kv_heads,
  // capacity, head_dim]) in dtype on the weights' device, once for the
  // longest context; later calls with the same sizes keep it.
  virtual void AllocateCache(int64_t batch, int64_t capacity, torch::ScalarType dtype) = 0;

  // The prompt [B, P] at positions 0..P-1, its keys and values written to
  // the cache; the logits of each sequence's last position [B, vocab].
  virtual torch::Tensor Prefill(const torch::Tensor& prompt) = 0;

  // One token a sequence [B, 1] at position (known on the host): its keys
  // and values written at position, attending over the cache's positions
  // 0..position. The logits [B, vocab].
  virtual torch::Tensor Decode(const torch::Tensor& token, int64_t position) = 0;

  // The same with the position in a device tensor [1] (int64): written with
  // index_copy_, attending over the whole cache under a mask of the
  // positions up to it. Every step has the same shapes and no host value,
  // so one CUDA graph replays every step.
  virtual torch::Tensor DecodeStatic(const torch::Tensor& token, const torch::Tensor& position) = 0;

  // Serving (workloads/serve.cc), where each row of the cache is a slot
  // that holds one request. Prompts [k, P] of as many requests (or a chunk
  // of each, the cache holding their positions before it), at positions
  // start..start+P-1, each one's keys and values written to its row of the
  // cache (slots [k], int64 on the device) only, attending over its own
  // row's positions up to each; the last position's logits [k, vocab].
  virtual torch::Tensor PrefillSlots(const torch::Tensor& prompts, const torch::Tensor& slots,
                                     int64_t start = 0);
  // One token a row [n, 1] for the cache's rows 0..n-1, each at its own
  // position (positions [n], int64 on the device): its keys and values
  // written there, attending over its own row's positions up to it, of the
  // first span (above every row's position). The logits [n, vocab].
  virtual torch::Tensor DecodeRows(const torch::Tensor& tokens, const torch::Tensor& positions,
                                   int64_t span);

  // The attention kernel of the last forward of each kind that ran
  // ("flash", "math"...): training or prefill over a whole sequence, and
  // one-token decoding; "" before one ran.
  std::string sequence_kernel, decode_kernel;
  std::string CausalAttentionKernel() const override { return sequence_kernel; }

  // Bytes of the weights a decode step reads (each tied matrix once; of an
  // embedding table that is only looked up, the batch's rows: none
  // counted), and of the whole cache.
  virtual int64_t DecodeWeightBytes() const = 0;
  virtual int64_t CacheBytes() const = 0;
};

// A language model that generates through the AOTInductor package compiled
// from its Python twin for this config (execution aot; compiled_model.cc):
// its prefill and decode step (mode serve: PrefillSlots of whole prompts
// and DecodeRows over the whole cache), the twin answering for the counts.
absl::StatusOr<std::shared_ptr<LanguageModel>> LoadCompiledLanguageModel(
    std::shared_ptr<LanguageModel> twin, const RunConfig& c, const torch::Device& device);

// A language model as the serving scheduler (worker/serve.h) drives it
// (workloads/serve.cc): eager or compiled, in the run's precision, its cache of
// c.batch_size slots for the longest request the load sends. A request's
// prompt is PromptOf's with seed. steps_ahead decode steps run ahead of
// the one whose tokens the host waits for (-1: 1 on a GPU, 0 on the CPU).
// Where tokens is set, each request's tokens are appended to it under its
// id.
std::unique_ptr<serve::Model> NewServeModel(
    const RunConfig& c, torch::Device device, std::shared_ptr<LanguageModel> model, uint64_t seed,
    std::map<int64_t, std::vector<int64_t>>* tokens = nullptr, int steps_ahead = -1);

// The prompt of request: its input_tokens token ids below vocab, drawn
// from (seed, its id) alone.
std::vector<int64_t> PromptOf(const serve::Request& request, int64_t vocab, uint64_t seed);

// The figures held against the GPU's datasheet (mfu.cc): on CUDA, any run
// with an achieved FLOP rate gets its GPU's dense datasheet peak for the
// precision (common/gpu_peaks.h; none where the GPU is not in the table). A
// language model's training also gets tokens a second (batch x
// sequence_length a step) and MFU, its model's FLOPs at that rate over the
// peak.
void PeakFigures(const RunConfig& c, const torch::Device& device, RunOutcome* out);

}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_LANGUAGE_MODEL_H_
