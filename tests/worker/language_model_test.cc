// The language models (gpt, llama) as the engine builds them: decoding with
// the KV cache is the full forward, in both of its forms.
#include "worker/engine/language_model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <string>

#include "tests/support/planned_config.h"
#include "worker/engine/config.h"

namespace gpubench::engine {
namespace {

// A model of each style small enough for the CPU: 2 layers, width 64,
// 4 heads (llama: 2 key/value heads), a vocabulary of 100, context 16.
std::shared_ptr<LanguageModel> Tiny(const std::string& workload) {
  RunConfig c = testing_support::Planned(workload);
  c.num_layers = 2;
  c.hidden_size = 64;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.ffn_hidden_size = 96;
  c.vocab_size = 100;
  c.sequence_length = 16;
  c.device = "cpu";
  auto model = CreateModel(c);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::dynamic_pointer_cast<LanguageModel>(*model) : nullptr;
}

void ExpectClose(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
  const double scale = std::max(1.0, want.abs().max().item<double>());
  const double error = (got - want).abs().max().item<double>();
  EXPECT_LE(error, 1e-4 * scale) << what;
}

// Each token's logits from the cache equal a fresh forward over the
// sequence so far, at its last position: after the prompt's prefill, and
// after each decode step, eager (the cache up to the position) and static
// (the whole cache under a mask, the position a tensor: CUDA graphs' form).
TEST(LanguageModel, DecodingWithTheCacheIsTheFullForward) {
  for (const char* workload : {"gpt", "llama"}) {
    torch::manual_seed(3);
    std::shared_ptr<LanguageModel> model = Tiny(workload);
    ASSERT_NE(model, nullptr) << workload;
    model->eval();
    torch::NoGradGuard no_grad;
    constexpr int64_t kBatch = 2, kPrompt = 5, kSteps = 4;
    const torch::Tensor tokens = torch::randint(0, 100, {kBatch, kPrompt + kSteps}, torch::kLong);
    for (bool graph_form : {false, true}) {
      const std::string form = std::string(workload) + (graph_form ? " static" : " eager");
      model->AllocateCache(kBatch, kPrompt + kSteps, torch::kFloat32);
      ExpectClose(model->Prefill(tokens.narrow(1, 0, kPrompt)),
                  model->Forward(tokens.narrow(1, 0, kPrompt)).select(1, kPrompt - 1),
                  form + " prefill");
      for (int64_t position = kPrompt; position < kPrompt + kSteps; ++position) {
        const torch::Tensor token = tokens.narrow(1, position, 1);
        const torch::Tensor logits =
            graph_form ? model->DecodeStatic(token, torch::full({1}, position, torch::kLong))
                       : model->Decode(token, position);
        ExpectClose(logits, model->Forward(tokens.narrow(1, 0, position + 1)).select(1, position),
                    form + " at " + std::to_string(position));
      }
    }
    // Which attention kernel ran is recorded for each kind of pass.
    EXPECT_FALSE(model->sequence_kernel.empty()) << workload;
    EXPECT_FALSE(model->decode_kernel.empty()) << workload;
  }
}

// A wrong token changes the next logits: the cache carries the sequence
// (a cache that held nothing would pass the test above only by luck).
TEST(LanguageModel, TheCacheCarriesTheSequence) {
  torch::manual_seed(4);
  std::shared_ptr<LanguageModel> model = Tiny("llama");
  ASSERT_NE(model, nullptr);
  model->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor prompt = torch::randint(0, 100, {1, 6}, torch::kLong);
  model->AllocateCache(1, 8, torch::kFloat32);
  model->Prefill(prompt);
  const torch::Tensor next = torch::full({1, 1}, 7, torch::kLong);
  const torch::Tensor after = model->Decode(next, 6);
  torch::Tensor other = prompt.clone();
  other[0][0] = (other[0][0].item<int64_t>() + 1) % 100;
  model->Prefill(other);
  EXPECT_GT((model->Decode(next, 6) - after).abs().max().item<double>(), 1e-4);
}

}  // namespace
}  // namespace gpubench::engine
