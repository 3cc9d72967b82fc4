// Tiny random mixture-of-experts models (tests/reference/make_tiny_moe.py) on the CPU backend,
// from the HF folder (bf16 safetensors) and from llama.cpp's conversion of it (bf16 GGUF),
// against transformers' f32 forward on the same bf16 weights: logits at every position
// (prefilled at once, token by token, in chunks of 5) and greedy tokens; and, where the fixture
// has them, llama.cpp's greedy tokens on the GGUF. Mixtral (4 experts top-2; and with sliding
// window 9, HF only: llama.cpp's converter drops Mixtral's window), Qwen3-MoE (8 experts top-3,
// renormalised, q/k norm), Qwen3-MoE with norm_topk_prob false and a dense layer 0. The BF16
// kernels compute in exact f32 and the KV cache is f32, so 1e-4 as for the other tiny f32 models
// (different summation orders of 32..96-term dots).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/model/model_weights.h"
#include "engine/model/moe_tensors.h"
#include "engine/runner/model_runner.h"
#include "tests/unit/graph/graph_test_util.h"

namespace llmserve {
namespace {

struct MoeFixture {
  std::vector<std::vector<int32_t>> seqs;
  std::vector<float> logits;
  std::vector<int32_t> greedy_prompt, greedy_tokens, llamacpp_tokens;
  std::vector<double> greedy_margins;  // transformers' top-1 minus top-2 logit per step
  nlohmann::json json;
};

std::string moe_dir_of(const std::string& name) {
  return std::string(LLMSERVE_FIXTURES_DIR) + "/" + name;
}

MoeFixture read_moe_fixture(const std::string& dir) {
  MoeFixture f;
  f.json = nlohmann::json::parse(testing::read_text_file(dir + "/expected.json"));
  f.seqs = f.json["sequences"].get<std::vector<std::vector<int32_t>>>();
  f.greedy_prompt = f.json["greedy_prompt"].get<std::vector<int32_t>>();
  f.greedy_tokens = f.json["greedy_tokens"].get<std::vector<int32_t>>();
  if (f.json.contains("llamacpp_greedy_tokens")) {
    f.llamacpp_tokens = f.json["llamacpp_greedy_tokens"].get<std::vector<int32_t>>();
  }
  f.greedy_margins = f.json["greedy_margins"].get<std::vector<double>>();
  f.logits = testing::read_f32_file(dir + "/expected_logits.f32");
  return f;
}

std::unique_ptr<ModelRunner> make_runner(const std::string& path) {
  ModelRunnerOptions o;
  o.model_path = path;
  o.num_threads = 2;
  o.block_size = 4;
  o.kv_cache_bytes = 32ull << 20;
  o.kv_cache_dtype = kernels::KvDtype::kF32;
  o.max_tokens_per_step = 64;
  o.max_samples_per_step = 64;
  auto r = ModelRunner::create(o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : nullptr;
}

double moe_max_logit_diff(ModelRunner& runner, const MoeFixture& f, int64_t chunk) {
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

// (fixture, file): "" is the HF folder, else a file in it.
struct Case {
  const char* fixture;
  const char* file;
};

std::string path_of(const Case& c) {
  const std::string dir = moe_dir_of(c.fixture);
  return *c.file ? dir + "/" + c.file : dir;
}

class TinyMoe : public ::testing::TestWithParam<Case> {};

TEST_P(TinyMoe, LogitsMatchTransformersAtEveryPosition) {
  const MoeFixture f = read_moe_fixture(moe_dir_of(GetParam().fixture));
  auto runner = make_runner(path_of(GetParam()));
  ASSERT_NE(runner, nullptr);
  for (int64_t chunk : {0, 1, 5}) {
    const double d = moe_max_logit_diff(*runner, f, chunk);
    EXPECT_LT(d, 1e-4) << path_of(GetParam()) << " chunk " << chunk;
    std::printf("[%s %s] chunk %lld: max |logit diff| vs transformers %.3g\n", GetParam().fixture,
                *GetParam().file ? GetParam().file : "hf", static_cast<long long>(chunk), d);
  }
}

TEST_P(TinyMoe, GreedyTokensMatchTransformers) {
  const MoeFixture f = read_moe_fixture(moe_dir_of(GetParam().fixture));
  auto runner = make_runner(path_of(GetParam()));
  ASSERT_NE(runner, nullptr);
  const auto got =
      testing::greedy(*runner, f.greedy_prompt, static_cast<int>(f.greedy_tokens.size()));
  EXPECT_EQ(got, f.greedy_tokens) << path_of(GetParam());
}

TEST_P(TinyMoe, GreedyTokensMatchLlamaCpp) {
  const MoeFixture f = read_moe_fixture(moe_dir_of(GetParam().fixture));
  if (!*GetParam().file) GTEST_SKIP() << "llama.cpp runs the GGUF only";
  if (f.llamacpp_tokens.empty()) {
    GTEST_SKIP() << "no llamacpp_greedy_tokens in " << GetParam().fixture
                 << "/expected.json (make_tiny_moe.py ran without --llama-server)";
  }
  // llama.cpp's CPU BF16 matmul rounds activations to bf16 (relative 2^-9): it may take the other
  // side of a near-tie, after which the continuations part. Compared: every step before the
  // first where llama.cpp left transformers' token at a margin under 0.02.
  size_t n = 0;
  while (n < f.llamacpp_tokens.size() && n < f.greedy_margins.size() &&
         !(f.greedy_margins[n] < 0.02 && f.llamacpp_tokens[n] != f.greedy_tokens[n])) {
    ++n;
  }
  ASSERT_GE(n, 8u) << "llama.cpp parted from transformers at a near-tie too early to compare";
  auto runner = make_runner(path_of(GetParam()));
  ASSERT_NE(runner, nullptr);
  const auto got = testing::greedy(*runner, f.greedy_prompt, static_cast<int>(n));
  EXPECT_EQ(got, std::vector<int32_t>(f.llamacpp_tokens.begin(), f.llamacpp_tokens.begin() + n))
      << path_of(GetParam());
  std::printf("[%s] %zu greedy tokens equal llama.cpp's\n", GetParam().fixture, n);
}

INSTANTIATE_TEST_SUITE_P(
    Models, TinyMoe,
    ::testing::Values(Case{"tiny_mixtral", ""}, Case{"tiny_mixtral", "model.gguf"},
                      Case{"tiny_mixtral_sw", ""}, Case{"tiny_qwen3_moe", ""},
                      Case{"tiny_qwen3_moe", "model.gguf"}, Case{"tiny_qwen3_moe_mixed", ""}),
    [](const auto& info) {
      return std::string(info.param.fixture).substr(5) + (*info.param.file ? "_gguf" : "_hf");
    });

TEST(TinyMoeConfig, ReadsEachModelsRouting) {
  for (const char* file : {"", "/model.gguf"}) {
    auto mixtral = load_model(moe_dir_of("tiny_mixtral") + file);
    ASSERT_TRUE(mixtral.is_ok()) << mixtral.status().to_string();
    const ModelConfig& m = (*mixtral)->config();
    EXPECT_EQ(m.num_experts, 4);
    EXPECT_EQ(m.num_experts_used, 2);
    EXPECT_EQ(m.expert_ffn_size, 64);
    EXPECT_TRUE(m.norm_topk_prob);
    EXPECT_TRUE(m.dense_layers.empty());
    EXPECT_EQ(m.sliding_window, 0) << file;
    auto qwen = load_model(moe_dir_of("tiny_qwen3_moe") + file);
    ASSERT_TRUE(qwen.is_ok()) << qwen.status().to_string();
    const ModelConfig& q = (*qwen)->config();
    EXPECT_EQ(q.num_experts, 8);
    EXPECT_EQ(q.num_experts_used, 3);
    EXPECT_EQ(q.expert_ffn_size, 32);
    EXPECT_TRUE(q.norm_topk_prob);
    EXPECT_TRUE(q.qk_norm);
  }
  auto windowed = load_model(moe_dir_of("tiny_mixtral_sw"));
  ASSERT_TRUE(windowed.is_ok()) << windowed.status().to_string();
  EXPECT_EQ((*windowed)->config().sliding_window, 9);
  auto mixed = load_model(moe_dir_of("tiny_qwen3_moe_mixed"));
  ASSERT_TRUE(mixed.is_ok()) << mixed.status().to_string();
  EXPECT_FALSE((*mixed)->config().norm_topk_prob);
  EXPECT_EQ((*mixed)->config().dense_layers, std::vector<int64_t>{0});
  EXPECT_FALSE((*mixed)->config().is_moe_layer(0));
  EXPECT_TRUE((*mixed)->config().is_moe_layer(1));
}

// Total parameters as transformers counts them (model.num_parameters()) and the active ones
// (total less the experts a token leaves out, counted from the modules), for both files.
TEST(TinyMoeConfig, ParameterCountsMatchTransformers) {
  for (const char* name :
       {"tiny_mixtral", "tiny_mixtral_sw", "tiny_qwen3_moe", "tiny_qwen3_moe_mixed"}) {
    const MoeFixture f = read_moe_fixture(moe_dir_of(name));
    for (const char* file : {"", "/model.gguf"}) {
      if (*file && !std::filesystem::exists(moe_dir_of(name) + file)) continue;
      auto m = load_model(moe_dir_of(name) + file);
      ASSERT_TRUE(m.is_ok()) << m.status().to_string();
      EXPECT_EQ((*m)->parameter_count(), f.json["parameters"].get<uint64_t>()) << name << file;
      EXPECT_EQ(active_parameter_count(**m), f.json["active_parameters"].get<uint64_t>())
          << name << file;
    }
  }
}

// K-quant experts end to end: a tiny Qwen3-MoE (hidden and expert ffn 256) quantized to Q4_K_M by
// llama-quantize (gate / up experts Q4_K, down experts Q6_K: each expert a slice of a 3-D
// tensor, packed like a matrix), against transformers in f32 on the GGUF's weights dequantized by
// the gguf package. Our q8x2 activations bound the difference as in tiny_kquant_test.cpp (2e-3).
TEST(TinyMoeKQuant, Q4KMExpertsMatchTheDequantizedWeights) {
  const std::string dir = moe_dir_of("tiny_qwen3_moe_q4_k_m");
  const auto j = nlohmann::json::parse(testing::read_text_file(dir + "/expected.json"));
  EXPECT_EQ(j["tensor_types"]["blk.0.ffn_gate_exps.weight"], "Q4_K");
  EXPECT_EQ(j["tensor_types"]["blk.0.ffn_down_exps.weight"], "Q6_K");
  MoeFixture f;
  f.seqs = j["sequences"].get<std::vector<std::vector<int32_t>>>();
  f.logits = testing::read_f32_file(dir + "/expected_logits.f32");
  auto runner = make_runner(dir + "/model.gguf");
  ASSERT_NE(runner, nullptr);
  for (int64_t chunk : {0, 1, 5}) {
    const double d = moe_max_logit_diff(*runner, f, chunk);
    EXPECT_LT(d, 2e-3) << "chunk " << chunk;
    std::printf("[tiny_qwen3_moe_q4_k_m] chunk %lld: max |logit diff| %.3g\n",
                static_cast<long long>(chunk), d);
  }
  const auto prompt = j["greedy_prompt"].get<std::vector<int32_t>>();
  const auto want = j["greedy_tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(testing::greedy(*runner, prompt, static_cast<int>(want.size())), want);
}

}  // namespace
}  // namespace llmserve
