// Tiny random HF models beyond plain Llama (tests/reference/make_tiny_variants.py), F32
// safetensors + config.json, against transformers' f32 logits at every position and its greedy
// tokens: Qwen2 (q/k/v biases, tied LM head), Mistral with sliding_window 7 (prompts of up to 60
// tokens, decode far past the window), Llama with llama3 RoPE scaling (positions up to 99 >
// original_max_position_embeddings 32). f32 KV cache: the graph's f32 arithmetic end to end, so
// 1e-4 as for tiny_llama (observed ~1e-5: different summation orders of 64..160-term dots).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/runner/model_runner.h"
#include "tests/unit/graph/graph_test_util.h"

namespace llmserve {
namespace {

struct Fixture {
  std::vector<std::vector<int32_t>> seqs;
  std::vector<float> logits;
  std::vector<int32_t> greedy_prompt, greedy_tokens;
};

std::string dir_of(const std::string& name) {
  return std::string(LLMSERVE_FIXTURES_DIR) + "/" + name;
}

Fixture read_fixture(const std::string& dir) {
  Fixture f;
  const auto j = nlohmann::json::parse(testing::read_text_file(dir + "/expected.json"));
  f.seqs = j["sequences"].get<std::vector<std::vector<int32_t>>>();
  f.greedy_prompt = j["greedy_prompt"].get<std::vector<int32_t>>();
  f.greedy_tokens = j["greedy_tokens"].get<std::vector<int32_t>>();
  f.logits = testing::read_f32_file(dir + "/expected_logits.f32");
  return f;
}

std::unique_ptr<ModelRunner> make_runner(const std::string& dir, kernels::KvDtype dtype) {
  ModelRunnerOptions o;
  o.model_path = dir;
  o.num_threads = 2;
  o.block_size = 4;  // many block edges, windows that start inside blocks
  o.kv_cache_bytes = 64ull << 20;
  o.kv_cache_dtype = dtype;
  o.max_tokens_per_step = 128;
  o.max_samples_per_step = 128;
  auto r = ModelRunner::create(o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : nullptr;
}

// Max |ours - transformers| over every position of every sequence, prefilled in chunks of
// `chunk` tokens (0: at once; 1: token by token, i.e. the decode kernel).
double max_logit_diff(ModelRunner& runner, const Fixture& f, int64_t chunk) {
  const int64_t V = runner.config().vocab_size;
  size_t offset = 0;
  double worst = 0;
  for (const auto& seq : f.seqs) {
    const auto got = testing::prefill_all_logits(runner, seq, chunk, 3);
    EXPECT_EQ(got.size(), seq.size() * static_cast<size_t>(V));
    if (got.size() != seq.size() * static_cast<size_t>(V) || offset + got.size() > f.logits.size())
      return INFINITY;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::fabs(got[i] - f.logits[offset + i])));
    }
    offset += got.size();
  }
  EXPECT_EQ(offset, f.logits.size());
  return worst;
}

class TinyVariant : public ::testing::TestWithParam<const char*> {};

TEST_P(TinyVariant, LogitsMatchTransformersAtEveryPosition) {
  const std::string dir = dir_of(GetParam());
  const Fixture f = read_fixture(dir);
  auto runner = make_runner(dir, kernels::KvDtype::kF32);
  ASSERT_NE(runner, nullptr);
  for (int64_t chunk : {0, 1, 5}) {
    const double d = max_logit_diff(*runner, f, chunk);
    EXPECT_LT(d, 1e-4) << GetParam() << " chunk " << chunk;
    std::printf("[%s] chunk %lld: max |logit diff| vs transformers %.3g\n", GetParam(),
                static_cast<long long>(chunk), d);
  }
}

TEST_P(TinyVariant, GreedyTokensMatchTransformers) {
  const std::string dir = dir_of(GetParam());
  const Fixture f = read_fixture(dir);
  auto runner = make_runner(dir, kernels::KvDtype::kF32);
  ASSERT_NE(runner, nullptr);
  const auto got =
      testing::greedy(*runner, f.greedy_prompt, static_cast<int>(f.greedy_tokens.size()));
  EXPECT_EQ(got, f.greedy_tokens) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Models, TinyVariant,
                         ::testing::Values("tiny_qwen2", "tiny_mistral_sw", "tiny_llama3_rope"),
                         [](const auto& info) { return std::string(info.param).substr(5); });

TEST(TinyVariantConfig, ReadsEachModelsShape) {
  auto qwen = make_runner(dir_of("tiny_qwen2"), kernels::KvDtype::kF32);
  ASSERT_NE(qwen, nullptr);
  EXPECT_EQ(qwen->config().architecture, "qwen2");
  EXPECT_TRUE(qwen->config().attention_bias);
  EXPECT_TRUE(qwen->config().tie_word_embeddings);
  EXPECT_EQ(qwen->config().sliding_window, 0);  // use_sliding_window false
  auto mistral = make_runner(dir_of("tiny_mistral_sw"), kernels::KvDtype::kF32);
  ASSERT_NE(mistral, nullptr);
  EXPECT_EQ(mistral->config().architecture, "mistral");
  EXPECT_EQ(mistral->config().sliding_window, 7);
  auto llama3 = make_runner(dir_of("tiny_llama3_rope"), kernels::KvDtype::kF32);
  ASSERT_NE(llama3, nullptr);
  EXPECT_EQ(llama3->config().rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_EQ(llama3->config().rope_scaling.original_max_position, 32);
  EXPECT_FLOAT_EQ(llama3->config().rope_scaling.factor, 8.0f);
}

// The sliding window with the default f16 cache and the int8 one: within their rounding of
// transformers (f16: as tiny_llama's 2e-2; int8: per-row scales, 1 part in 254 of each row).
TEST(TinyVariantKvDtypes, MistralWindowHoldsWithF16AndInt8Pages) {
  const std::string dir = dir_of("tiny_mistral_sw");
  const Fixture f = read_fixture(dir);
  for (auto [dtype, tol] :
       {std::pair{kernels::KvDtype::kF16, 2e-2}, std::pair{kernels::KvDtype::kInt8, 2e-1}}) {
    auto runner = make_runner(dir, dtype);
    ASSERT_NE(runner, nullptr);
    const double d = max_logit_diff(*runner, f, 5);
    EXPECT_LT(d, tol) << kernels::kv_dtype_name(dtype);
    std::printf("[tiny_mistral_sw %s kv] max |logit diff| vs transformers %.3g\n",
                kernels::kv_dtype_name(dtype), d);
  }
}

}  // namespace
}  // namespace llmserve
