// Tiny random models of Qwen3, Gemma 3 and Phi-3 (tests/reference/make_tiny_families.py), each
// from its HF folder (F32 safetensors + config.json) and from the GGUF llama.cpp's converter made
// of it, against transformers' f32 logits at every position (whole prompt, token by token, in
// chunks of 5) and its greedy tokens; on the GGUF also llama.cpp's greedy tokens when the
// fixture holds them. f32 KV cache: f32 arithmetic end to end, so 1e-4 as for the Llama
// variants (observed ~1e-5).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/runner/model_runner.h"
#include "tests/unit/graph/graph_test_util.h"

namespace llmserve {
namespace {

using nlohmann::json;

std::string dir_of(const std::string& name) {
  return std::string(LLMSERVE_FIXTURES_DIR) + "/" + name;
}

json meta_of(const std::string& dir) {
  return json::parse(testing::read_text_file(dir + "/expected.json"));
}

std::unique_ptr<ModelRunner> make_runner(const std::string& path, int64_t max_model_len = 512) {
  ModelRunnerOptions o;
  o.model_path = path;
  o.num_threads = 2;
  o.block_size = 4;  // many block edges, windows that start inside blocks
  o.kv_cache_bytes = 64ull << 20;
  o.kv_cache_dtype = kernels::KvDtype::kF32;
  o.max_tokens_per_step = 128;
  o.max_samples_per_step = 128;
  o.max_model_len = max_model_len;
  auto r = ModelRunner::create(o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : nullptr;
}

// Max |ours - expected| over every position of every sequence, prefilled in chunks of `chunk`.
double max_logit_diff(ModelRunner& runner, const std::vector<std::vector<int32_t>>& seqs,
                      const std::vector<float>& expected, int64_t chunk) {
  const auto V = static_cast<size_t>(runner.config().vocab_size);
  size_t offset = 0;
  double worst = 0;
  for (const auto& seq : seqs) {
    const auto got = testing::prefill_all_logits(runner, seq, chunk, 3);
    EXPECT_EQ(got.size(), seq.size() * V);
    if (got.size() != seq.size() * V || offset + got.size() > expected.size()) return INFINITY;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::fabs(got[i] - expected[offset + i])));
    }
    offset += got.size();
  }
  EXPECT_EQ(offset, expected.size());
  return worst;
}

struct Source {
  const char* family;
  bool gguf;
};

class TinyFamily : public ::testing::TestWithParam<Source> {
 protected:
  std::string dir() const { return dir_of(std::string("tiny_") + GetParam().family); }
  std::string model_path() const { return GetParam().gguf ? dir() + "/model.gguf" : dir(); }
  // The GGUF's own oracle where the GGUF cannot carry a setting (make_tiny_families.py).
  std::string logits_file() const {
    const std::string g = dir() + "/expected_logits_gguf.f32";
    return GetParam().gguf && std::filesystem::exists(g) ? g : dir() + "/expected_logits.f32";
  }
  std::vector<int32_t> greedy_tokens(const json& m) const {
    if (GetParam().gguf && m.contains("gguf_greedy_tokens")) {
      return m["gguf_greedy_tokens"].get<std::vector<int32_t>>();
    }
    return m["greedy_tokens"].get<std::vector<int32_t>>();
  }
};

TEST_P(TinyFamily, LogitsMatchTransformersAtEveryPosition) {
  const json m = meta_of(dir());
  const auto seqs = m["sequences"].get<std::vector<std::vector<int32_t>>>();
  const auto expected = testing::read_f32_file(logits_file());
  auto runner = make_runner(model_path(), 32);  // <= Phi-3's original context: short factors
  ASSERT_NE(runner, nullptr);
  for (int64_t chunk : {0, 1, 5}) {
    const double d = max_logit_diff(*runner, seqs, expected, chunk);
    EXPECT_LT(d, 1e-4) << model_path() << " chunk " << chunk;
    std::printf("[%s] chunk %lld: max |logit diff| vs transformers %.3g\n", model_path().c_str(),
                static_cast<long long>(chunk), d);
  }
}

TEST_P(TinyFamily, GreedyTokensMatchTransformers) {
  const json m = meta_of(dir());
  auto runner = make_runner(model_path());
  ASSERT_NE(runner, nullptr);
  const auto want = greedy_tokens(m);
  const auto prompt = m["greedy_prompt"].get<std::vector<int32_t>>();
  // Phi-3 with longrope: transformers switches to the long factors past the original context;
  // the greedy run stays within it and so does our context (short factors).
  auto short_runner = make_runner(model_path(), 32);
  ASSERT_NE(short_runner, nullptr);
  EXPECT_EQ(testing::greedy(*short_runner, prompt, static_cast<int>(want.size())), want);
}

// llama.cpp (llama-server, context 256) on the same GGUFs: its greedy tokens recorded by
// make_tiny_families.py --llama-server.
TEST(TinyFamilyLlamaCpp, GreedyTokensOnTheGgufsEqualLlamaCpp) {
  for (const char* family : {"tiny_qwen3", "tiny_gemma3", "tiny_phi3"}) {
    const json m = meta_of(dir_of(family));
    if (!m.contains("llamacpp_greedy_tokens")) {
      GTEST_SKIP() << family << ": no llama.cpp tokens (make_tiny_families.py --llama-server)";
    }
    const auto want = m["llamacpp_greedy_tokens"].get<std::vector<int32_t>>();
    // The same context as llama-server's: Phi-3's long factors.
    auto runner = make_runner(dir_of(family) + "/model.gguf", 256);
    ASSERT_NE(runner, nullptr);
    const auto prompt = m["greedy_prompt"].get<std::vector<int32_t>>();
    EXPECT_EQ(testing::greedy(*runner, prompt, static_cast<int>(want.size())), want) << family;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, TinyFamily,
                         ::testing::Values(Source{"qwen3", false}, Source{"qwen3", true},
                                           Source{"gemma3", false}, Source{"gemma3", true},
                                           Source{"phi3", false}, Source{"phi3", true}),
                         [](const auto& info) {
                           return std::string(info.param.family) +
                                  (info.param.gguf ? "_gguf" : "_hf");
                         });

// Longrope past the original context (32): a context of 128 takes the long factors, which
// transformers uses for sequences longer than 32.
TEST(TinyFamilyPhi3, LongFactorsPastTheOriginalContext) {
  for (const std::string& path : {dir_of("tiny_phi3"), dir_of("tiny_phi3") + "/model.gguf"}) {
    const json m = meta_of(dir_of("tiny_phi3"));
    const auto seqs = m["long_sequences"].get<std::vector<std::vector<int32_t>>>();
    const auto expected = testing::read_f32_file(dir_of("tiny_phi3") + "/expected_logits_long.f32");
    auto runner = make_runner(path, 128);
    ASSERT_NE(runner, nullptr);
    for (int64_t chunk : {0, 1, 5}) {
      const double d = max_logit_diff(*runner, seqs, expected, chunk);
      EXPECT_LT(d, 1e-4) << path << " chunk " << chunk;
      std::printf("[%s long] chunk %lld: max |logit diff| vs transformers %.3g\n", path.c_str(),
                  static_cast<long long>(chunk), d);
    }
  }
}

TEST(TinyFamilyConfig, Phi3Shape) {
  for (const std::string& path : {dir_of("tiny_phi3"), dir_of("tiny_phi3") + "/model.gguf"}) {
    auto r = make_runner(path);
    ASSERT_NE(r, nullptr);
    const ModelConfig& c = r->config();
    EXPECT_EQ(c.architecture, "phi3") << path;
    EXPECT_EQ(c.rope_dim, 12) << path;  // head_dim 16 x partial_rotary_factor 0.75
    EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kLongrope) << path;
    EXPECT_EQ(c.rope_scaling.original_max_position, 32) << path;
    EXPECT_EQ(c.rope_scaling.short_factor.size(), 6u) << path;
    // transformers' default: sqrt(1 + ln(128 / 32) / ln(32)).
    EXPECT_NEAR(c.rope_scaling.attention_factor, std::sqrt(1.0 + std::log(4.0) / std::log(32.0)),
                1e-6)
        << path;
    // The fused qkv_proj / gate_up_proj (attn_qkv / ffn_up) as the graph's separate matrices.
    EXPECT_NE(r->model().tensor("blk.1.attn_v.weight"), nullptr) << path;
    EXPECT_NE(r->model().tensor("blk.1.ffn_gate.weight"), nullptr) << path;
    EXPECT_EQ(r->model().tensor("blk.1.ffn_up.weight")->shape, (std::vector<int64_t>{128, 64}))
        << path;
  }
}

TEST(TinyFamilyConfig, Qwen3Shape) {
  for (const std::string& path : {dir_of("tiny_qwen3"), dir_of("tiny_qwen3") + "/model.gguf"}) {
    auto r = make_runner(path);
    ASSERT_NE(r, nullptr);
    const ModelConfig& c = r->config();
    EXPECT_EQ(c.architecture, "qwen3") << path;
    EXPECT_TRUE(c.qk_norm) << path;
    EXPECT_FALSE(c.attention_bias) << path;
    EXPECT_EQ(c.head_dim, 32) << path;  // not hidden / heads = 16
    EXPECT_FALSE(c.rope_interleaved) << path;
    // 2 layers x 2 kv heads x 32 head_dim x 2 (K and V) x 4 bytes.
    EXPECT_EQ(c.kv_bytes_per_token(4), 1024u) << path;
  }
}

TEST(TinyFamilyConfig, Gemma3Shape) {
  for (const std::string& path : {dir_of("tiny_gemma3"), dir_of("tiny_gemma3") + "/model.gguf"}) {
    auto r = make_runner(path);
    ASSERT_NE(r, nullptr);
    const ModelConfig& c = r->config();
    EXPECT_EQ(c.architecture, "gemma3") << path;
    EXPECT_TRUE(c.qk_norm && c.sandwich_norms) << path;
    EXPECT_EQ(c.ffn_activation, FfnActivation::kGeluTanh) << path;
    EXPECT_EQ(c.head_dim, 32) << path;  // not hidden / heads = 24
    EXPECT_FLOAT_EQ(c.embedding_scale, std::sqrt(48.0f)) << path;
    EXPECT_FLOAT_EQ(c.final_logit_softcap, 6.0f) << path;
    EXPECT_EQ(c.sliding_window, 0) << path;  // the KV cache keeps every position
    EXPECT_EQ(c.local_window, 6) << path;
    EXPECT_EQ(c.layer_windows(), (std::vector<int64_t>{6, 6, 6, 6, 6, 0})) << path;
    EXPECT_FLOAT_EQ(c.rope_local_theta, 10000.0f) << path;
    EXPECT_FLOAT_EQ(c.rope_theta, 1e6f) << path;
    // 6 layers x 1 kv head x 32 head_dim x 2 (K and V) x 2 bytes.
    EXPECT_EQ(c.kv_bytes_per_token(2), 768u) << path;
  }
  // query_pre_attn_scalar 20 in config.json; the GGUF (made with 32) carries none: 1 / sqrt(32).
  EXPECT_FLOAT_EQ(make_runner(dir_of("tiny_gemma3"))->config().attention_scale,
                  1.0f / std::sqrt(20.0f));
  EXPECT_FLOAT_EQ(make_runner(dir_of("tiny_gemma3") + "/model.gguf")->config().attention_scale,
                  1.0f / std::sqrt(32.0f));
}

TEST(TinyFamilyConfig, Gemma3HfConfigVariants) {
  // A transformers 4 config.json of a multimodal checkpoint: text_config, sliding_window_pattern,
  // rope_local_base_freq, rope_scaling for the global layers.
  const auto c = model_config_from_hf_json(R"({"model_type": "gemma3", "eos_token_id": [1, 106],
      "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "num_hidden_layers": 8,
      "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
      "intermediate_size": 10240, "sliding_window": 1024, "sliding_window_pattern": 4,
      "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "query_pre_attn_scalar": 256,
      "rope_scaling": {"rope_type": "linear", "factor": 8.0}}})");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->architecture, "gemma3");
  EXPECT_EQ(c->vocab_size, 262208);
  EXPECT_EQ(c->local_layers, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 0}));
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_FLOAT_EQ(c->rope_scaling.factor, 8.0f);
  EXPECT_EQ(c->eos_ids, (std::vector<int32_t>{1, 106}));
  // 8 layers x 4 kv heads x 256 head_dim x 2 x 2 bytes.
  EXPECT_EQ(c->kv_bytes_per_token(2), 32768u);
  const auto bad = model_config_from_hf_json(R"({"model_type": "gemma3_text", "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
      "vocab_size": 300, "attn_logit_softcapping": 50.0})");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("attn_logit_softcapping"), std::string::npos);
  const auto other = model_config_from_hf_json(R"({"model_type": "gemma2", "hidden_size": 64})");
  ASSERT_FALSE(other.is_ok());
  EXPECT_NE(other.status().message().find("'gemma2' not supported"), std::string::npos);
}

}  // namespace
}  // namespace llmserve
