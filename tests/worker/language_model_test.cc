// The language models (gpt, llama) as the engine builds them: decoding with
// the KV cache is the full forward, in both of its forms.
#include "worker/engine/language_model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/planned_config.h"
#include "worker/engine/attention.h"
#include "worker/engine/compat.h"
#include "worker/engine/config.h"

namespace gpubench::engine {
namespace {

// A model of each style small enough for the CPU: 2 layers, width 64,
// 4 heads (llama: 2 key/value heads), a vocabulary of 100, context 16.
RunConfig TinyConfig(const std::string& workload) {
  RunConfig c = testing_support::Planned(workload);
  c.num_layers = 2;
  c.hidden_size = 64;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.ffn_hidden_size = 96;
  c.vocab_size = 100;
  c.sequence_length = 16;
  c.device = "cpu";
  return c;
}

std::shared_ptr<LanguageModel> Tiny(const std::string& workload) {
  auto model = CreateModel(TinyConfig(workload));
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

// llama's grouped heads (4 query heads over 2 key/value heads) are read as
// they are where a fused kernel can (LibTorch 2.5 on: the CPU's flash
// kernel), and give the logits of the heads repeated (the math kernel's
// path, forced), over a whole sequence and in a masked decode step.
TEST(LanguageModel, GroupedHeadsReadAsTheyAreGiveTheRepeatedHeadsLogits) {
  constexpr int64_t kPrompt = 6;
  const torch::Tensor tokens = torch::randint(0, 100, {2, kPrompt + 1}, torch::kLong);
  std::map<bool, std::pair<torch::Tensor, torch::Tensor>> logits;  // by math forced
  std::map<bool, std::string> kernels;
  for (bool math : {false, true}) {
    ASSERT_TRUE(SelectAttention(math ? Attention::kMath : Attention::kAuto).ok());
    torch::manual_seed(5);  // the same weights
    std::shared_ptr<LanguageModel> model = Tiny("llama");
    ASSERT_NE(model, nullptr);
    model->eval();
    torch::NoGradGuard no_grad;
    model->AllocateCache(2, kPrompt + 1, torch::kFloat32);
    model->Prefill(tokens.narrow(1, 0, kPrompt));
    logits[math] = {model->Forward(tokens),
                    model->DecodeStatic(tokens.narrow(1, kPrompt, 1),
                                        torch::full({1}, kPrompt, torch::kLong))};
    kernels[math] = model->sequence_kernel + " / " + model->decode_kernel;
  }
  ASSERT_TRUE(SelectAttention(Attention::kAuto).ok());
  ExpectClose(logits[false].first, logits[true].first, "sequence: " + kernels[false]);
  ExpectClose(logits[false].second, logits[true].second, "decode step: " + kernels[false]);
  EXPECT_EQ(kernels[true].find("grouped"), std::string::npos) << kernels[true];
#if GPUBENCH_TORCH_AT_LEAST(2, 5)
  EXPECT_EQ(kernels[false], "flash (grouped heads) / flash (grouped heads)");
#else
  EXPECT_EQ(kernels[false].find("grouped"), std::string::npos) << kernels[false];
#endif
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

// Serving batches requests as they come: in a cache of 4 slots, 10
// requests of different lengths from 3 clients start and end at different
// steps, each row at its own position. Every request's tokens must be
// those of the same prompt decoded alone (continuous batching must not
// change results), and the figures count every measured request.
TEST(LanguageModel, ServedRequestsGetTheTokensOfASoloDecode) {
  // A step launched ahead of the one waited for or not (as on a GPU); the
  // prompts whole, or in chunks of 3 tokens (a chunk can end one prompt and
  // begin the next).
  struct Case {
    int ahead;
    const char* workload;
    int chunk;
  };
  const Case cases[] = {{0, "gpt", 0}, {0, "llama", 0}, {1, "gpt", 0},
                        {1, "llama", 0}, {0, "gpt", 3}, {1, "llama", 3}};
  for (const auto& [ahead, workload, chunk] : cases) {
    torch::manual_seed(5);
    std::shared_ptr<LanguageModel> model = Tiny(workload);
    ASSERT_NE(model, nullptr) << workload;
    RunConfig c = testing_support::Planned(workload);
    c.batch_size = 4;
    serve::Load load;
    load.concurrency = 3;
    load.slots = c.batch_size;
    load.num_requests = 10;
    load.input_len = c.input_len = 2;
    load.input_len_max = c.input_len_max = 7;
    load.output_len = c.output_len = 1;
    load.output_len_max = c.output_len_max = 8;
    load.seed = 11;
    load.prefill_chunk = chunk;
    std::map<int64_t, std::vector<int64_t>> served;
    std::unique_ptr<serve::Model> server =
        NewServeModel(c, torch::Device(torch::kCPU), model, load.seed, &served, ahead);
    auto out = serve::Serve(load, server.get(), serve::SteadyTimeline(), nullptr);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->requests, 10) << workload;
    EXPECT_GT(out->mean_batch, 1.5) << workload << ": the requests were not batched";

    torch::NoGradGuard no_grad;
    serve::Requests requests(load);
    for (int i = 0; i < 10; ++i) {
      const serve::Request r = requests.Next();
      const std::vector<int64_t> prompt = PromptOf(r, model->vocab_size(), load.seed);
      model->AllocateCache(1, 15, torch::kFloat32);
      std::vector<int64_t> alone;
      torch::Tensor token =
          model->Prefill(torch::tensor(prompt, torch::kLong).view({1, -1})).argmax(-1, true);
      alone.push_back(token.item<int64_t>());
      for (int position = r.input_tokens; static_cast<int>(alone.size()) < r.output_tokens;
           ++position) {
        token = model->Decode(token, position).argmax(-1, true);
        alone.push_back(token.item<int64_t>());
      }
      EXPECT_EQ(served[r.id], alone) << workload << " a step ahead " << ahead << ", chunk "
                                     << chunk << ", request " << r.id << " of "
                                     << r.input_tokens << " + " << r.output_tokens << " tokens";
    }
  }
}

// A prompt prefilled in chunks into a slot that another request left,
// while a third decodes in the slot above it: the decode steps between
// its chunks take in its row, and must not write over the part of its
// prompt already in the cache (the slot's last request left its row at a
// position inside it). Its tokens are a solo decode's.
TEST(LanguageModel, TheStepsBetweenAPromptsChunksLeaveItsCacheAlone) {
  // A step ahead or not; prompts from several seeds (a token written over
  // shifts the logits a little: some seed's argmax shows it).
  for (int ahead : {0, 1}) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      RunConfig c = TinyConfig("gpt");
      c.batch_size = 2;
      // A (slot 0) ends after one step at position 3; B (slot 1) decodes
      // on; C takes slot 0, its 9 tokens in chunks of 4.
      c.trace = {{0, 2, 2}, {0, 2, 6}, {0, 9, 6}};
      torch::manual_seed(seed);
      auto created = CreateModel(c);
      ASSERT_TRUE(created.ok()) << created.status();
      auto model = std::dynamic_pointer_cast<LanguageModel>(*created);
      ASSERT_NE(model, nullptr);
      {
        // Larger weights: sharp attention and large values, so that one
        // key and value written over moves the logits past a tie.
        torch::NoGradGuard no_grad;
        for (torch::Tensor& p : model->parameters()) p.mul_(20);
      }
      serve::Load load;
      load.slots = c.batch_size;
      load.num_requests = 3;
      load.prefill_chunk = 4;
      for (const RunConfig::TraceRequest& t : c.trace) {
        load.trace.push_back({0, 0, t.input_tokens, t.output_tokens});
      }
      std::map<int64_t, std::vector<int64_t>> served;
      std::unique_ptr<serve::Model> server =
          NewServeModel(c, torch::Device(torch::kCPU), model, seed, &served, ahead);
      auto out = serve::Serve(load, server.get(), serve::SteadyTimeline(), nullptr);
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->requests, 3);
      torch::NoGradGuard no_grad;
      serve::Request r;
      r.id = 2;
      r.input_tokens = 9;
      const std::vector<int64_t> prompt = PromptOf(r, model->vocab_size(), seed);
      model->AllocateCache(1, 16, torch::kFloat32);
      std::vector<int64_t> alone;
      torch::Tensor token =
          model->Prefill(torch::tensor(prompt, torch::kLong).view({1, -1})).argmax(-1, true);
      alone.push_back(token.item<int64_t>());
      for (int position = 9; alone.size() < 6; ++position) {
        token = model->Decode(token, position).argmax(-1, true);
        alone.push_back(token.item<int64_t>());
      }
      EXPECT_EQ(served[2], alone) << "a step ahead " << ahead << ", seed " << seed;
    }
  }
}

// A trace whose longest prompt and longest output are two requests: a
// slot holds both (the cache's positions run to their sum), and the free
// row beside the long output, decoding on past its own request's end,
// stays inside llama's rotary table.
TEST(LanguageModel, ATraceOfALongPromptAndALongOutputServes) {
  RunConfig c = TinyConfig("llama");
  c.prompt_length = 4;
  c.new_tokens = 4;
  c.batch_size = 2;
  c.trace = {{0, 12, 1}, {0, 1, 12}};
  auto created = CreateModel(c);
  ASSERT_TRUE(created.ok()) << created.status();
  auto model = std::dynamic_pointer_cast<LanguageModel>(*created);
  ASSERT_NE(model, nullptr);
  serve::Load load;
  load.slots = c.batch_size;
  load.num_requests = 2;
  for (const RunConfig::TraceRequest& t : c.trace) {
    load.trace.push_back({0, 0, t.input_tokens, t.output_tokens});
  }
  std::unique_ptr<serve::Model> server = NewServeModel(c, torch::Device(torch::kCPU), model, 3);
  auto out = serve::Serve(load, server.get(), serve::SteadyTimeline(), nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->requests, 2);
}

}  // namespace
}  // namespace gpubench::engine
