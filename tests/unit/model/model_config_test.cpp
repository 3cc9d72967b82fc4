#include "engine/model/model_config.h"

#include <gtest/gtest.h>

#include <tuple>

#include "engine/model/gguf_file.h"
#include "tests/unit/model/gguf_writer_for_tests.h"
#include "tests/unit/model/test_files.h"

namespace llmserve {
namespace {

TEST(ModelConfig, KvBytesArithmetic) {
  ModelConfig c;
  c.num_layers = 30;
  c.num_kv_heads = 3;
  c.head_dim = 64;
  EXPECT_EQ(c.kv_bytes_per_token(2), 23040u);
  EXPECT_EQ(c.kv_bytes_per_token(4), 46080u);
  EXPECT_EQ(c.kv_bytes_formula(2),
            "2 x 30 layers x 3 kv_heads x 64 head_dim x 2 bytes = 23040 bytes/token");
}

constexpr const char* kLlama3 = R"({
  "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
  "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
  "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
  "rope_theta": 500000.0, "tie_word_embeddings": false, "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009], "attention_bias": false,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"}})";

TEST(ModelConfig, HfLlama3) {
  auto r = model_config_from_hf_json(kLlama3);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const ModelConfig& c = *r;
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.num_layers, 32);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.ffn_size, 14336);
  EXPECT_EQ(c.vocab_size, 128256);
  EXPECT_EQ(c.max_context, 131072);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-5f);
  EXPECT_FLOAT_EQ(c.rope_theta, 500000.0f);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_FLOAT_EQ(c.rope_scaling.factor, 8.0f);
  EXPECT_FLOAT_EQ(c.rope_scaling.high_freq_factor, 4.0f);
  EXPECT_EQ(c.rope_scaling.original_max_position, 8192);
  EXPECT_FALSE(c.rope_interleaved);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.bos_id, 128000);
  EXPECT_EQ(c.eos_id, 128001);
  EXPECT_EQ(c.eos_ids, (std::vector<int32_t>{128001, 128008, 128009}));
  EXPECT_EQ(c.pad_id, -1);
  EXPECT_EQ(c.kv_bytes_per_token(2), 131072u);
}

// transformers 5 moves rope_theta and the scaling into "rope_parameters".
TEST(ModelConfig, HfRopeParametersOfTransformers5) {
  auto r = model_config_from_hf_json(R"({
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 100,
    "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_position_embeddings": 8192}})");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_FLOAT_EQ(r->rope_theta, 500000.0f);
  EXPECT_EQ(r->rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_FLOAT_EQ(r->rope_scaling.factor, 8.0f);
  EXPECT_EQ(r->rope_scaling.original_max_position, 8192);
  auto plain = model_config_from_hf_json(R"({
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 100,
    "rope_parameters": {"rope_type": "default", "rope_theta": 100000.0}})");
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  EXPECT_FLOAT_EQ(plain->rope_theta, 100000.0f);
  EXPECT_EQ(plain->rope_scaling.type, RopeScalingType::kNone);
}

TEST(ModelConfig, HfQwen2AndMistral) {
  auto q = model_config_from_hf_json(R"({"model_type": "qwen2", "hidden_size": 896,
    "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
    "intermediate_size": 4864, "vocab_size": 151936, "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": true,
    "bos_token_id": 151643, "eos_token_id": 151645, "rope_scaling": null,
    "sliding_window": 32768, "use_sliding_window": false})");
  ASSERT_TRUE(q.is_ok()) << q.status().to_string();
  EXPECT_TRUE(q->attention_bias);
  EXPECT_TRUE(q->tie_word_embeddings);
  EXPECT_EQ(q->head_dim, 64);
  EXPECT_EQ(q->rope_scaling.type, RopeScalingType::kNone);
  auto m = model_config_from_hf_json(R"({"model_type": "mistral", "hidden_size": 4096,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 14336, "vocab_size": 32768,
    "max_position_embeddings": 32768, "rope_theta": 1000000.0, "bos_token_id": 1,
    "eos_token_id": 2, "rope_scaling": {"type": "linear", "factor": 2.0}})");
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(m->architecture, "mistral");
  EXPECT_FALSE(m->attention_bias);
  EXPECT_EQ(m->rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_FLOAT_EQ(m->rope_scaling.factor, 2.0f);
}

TEST(ModelConfig, HfErrorsNameTheKey) {
  auto expect_err = [](const char* json, const char* needle) {
    auto r = model_config_from_hf_json(json);
    ASSERT_FALSE(r.is_ok()) << json;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  expect_err("{", "not valid JSON");
  expect_err("[]", "object");
  expect_err(R"({"model_type": "gpt2"})", "gpt2");
  expect_err(R"({"model_type": "llama", "hidden_size": 64})", "num_hidden_layers");
  expect_err(R"({"model_type": "llama", "hidden_size": "64"})", "hidden_size");
  expect_err(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 3, "num_key_value_heads": 2, "intermediate_size": 8,
      "vocab_size": 10})",
             "num_kv_heads");
  expect_err(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 8, "vocab_size": 10,
      "rope_scaling": {"type": "yarn", "factor": 4}})",
             "yarn");
  expect_err(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 8, "vocab_size": 10,
      "eos_token_id": 99})",
             "99");
  expect_err(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 0, "intermediate_size": 8, "vocab_size": 10})",
             "num_attention_heads");
}

// sliding_window: Mistral's applies to every layer; Qwen2's only with use_sliding_window (and
// then per layer, refused); transformers 5's layer_types decide when present.
TEST(ModelConfig, HfSlidingWindow) {
  const std::string base = R"("hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 100)";
  auto cfg = [&](const std::string& extra) {
    return model_config_from_hf_json("{" + base + ", " + extra + "}");
  };
  auto m = cfg(R"("model_type": "mistral", "sliding_window": 4096)");
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(m->sliding_window, 4096);
  auto none = cfg(R"("model_type": "mistral", "sliding_window": null)");
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ(none->sliding_window, 0);
  auto llama = cfg(R"("model_type": "llama")");
  ASSERT_TRUE(llama.is_ok());
  EXPECT_EQ(llama->sliding_window, 0);
  auto q_off = cfg(R"("model_type": "qwen2", "sliding_window": 32768)");
  ASSERT_TRUE(q_off.is_ok());
  EXPECT_EQ(q_off->sliding_window, 0);  // use_sliding_window defaults to false
  auto q_full = cfg(R"("model_type": "qwen2", "sliding_window": 32768, "use_sliding_window": true,
    "layer_types": ["full_attention", "full_attention"])");
  ASSERT_TRUE(q_full.is_ok());
  EXPECT_EQ(q_full->sliding_window, 0);
  auto all = cfg(R"("model_type": "mistral", "sliding_window": 16,
    "layer_types": ["sliding_attention", "sliding_attention"])");
  ASSERT_TRUE(all.is_ok());
  EXPECT_EQ(all->sliding_window, 16);
  EXPECT_EQ(cfg(R"("model_type": "qwen2", "sliding_window": 64, "use_sliding_window": true)")
                .status()
                .code(),
            StatusCode::kUnimplemented);
  EXPECT_EQ(cfg(R"("model_type": "mistral", "sliding_window": 16,
    "layer_types": ["sliding_attention", "full_attention"])")
                .status()
                .code(),
            StatusCode::kUnimplemented);
  EXPECT_FALSE(cfg(R"("model_type": "mistral", "sliding_window": -3)").is_ok());
}

TEST(ModelConfig, FromGgufTinyFile) {
  auto f = GgufFile::open(testing::fixture_path("model/tiny.gguf"));
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto r = model_config_from_gguf(**f);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->architecture, "llama");
  EXPECT_TRUE(r->rope_interleaved);
  EXPECT_EQ(r->rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_FLOAT_EQ(r->rope_scaling.factor, 4.0f);
  EXPECT_EQ(r->vocab_size, 16);  // from the token_embd tensor (no llama.vocab_size key)
}

TEST(ModelConfig, FromGgufQwen2AndErrors) {
  testing::GgufBuilder b;
  b.add_string("general.architecture", "qwen2")
      .add_u32("qwen2.block_count", 2)
      .add_u32("qwen2.context_length", 64)
      .add_u32("qwen2.embedding_length", 32)
      .add_u32("qwen2.feed_forward_length", 64)
      .add_u32("qwen2.attention.head_count", 4)
      .add_u32("qwen2.attention.head_count_kv", 2)
      .add_u32("qwen2.vocab_size", 100)
      .add_f32("qwen2.rope.freq_base", 1e6f)
      .add_u32("qwen2.attention.sliding_window", 48);
  b.add_f32_tensor("blk.0.attn_q.bias", {32}, std::vector<float>(32));
  const auto bytes = b.build();
  auto f = GgufFile::parse(testing::as_bytes(bytes));
  ASSERT_TRUE(f.is_ok());
  auto r = model_config_from_gguf(**f);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_FALSE(r->rope_interleaved);
  EXPECT_TRUE(r->attention_bias);
  EXPECT_TRUE(r->tie_word_embeddings);
  EXPECT_EQ(r->head_dim, 8);
  EXPECT_FLOAT_EQ(r->rope_theta, 1e6f);
  EXPECT_EQ(r->sliding_window, 48);

  // llama.cpp's per-layer pattern: all false = no window; mixed = refused.
  for (auto [pattern, want_ok, want_window] : {std::tuple{std::vector<uint8_t>{0, 0}, true, 0},
                                               std::tuple{std::vector<uint8_t>{1, 1}, true, 48},
                                               std::tuple{std::vector<uint8_t>{1, 0}, false, 0}}) {
    testing::GgufBuilder pb = b;
    pb.add_array("qwen2.attention.sliding_window_pattern", testing::GgufBuilder::kBool, pattern);
    const auto pbytes = pb.build();
    auto pf = GgufFile::parse(testing::as_bytes(pbytes));
    ASSERT_TRUE(pf.is_ok());
    auto pr = model_config_from_gguf(**pf);
    ASSERT_EQ(pr.is_ok(), want_ok) << pr.status().to_string();
    if (want_ok) {
      EXPECT_EQ(pr->sliding_window, want_window);
    }
  }

  auto bad = testing::GgufBuilder().add_string("general.architecture", "llama").build();
  auto fb = GgufFile::parse(testing::as_bytes(bad));
  ASSERT_TRUE(fb.is_ok());
  auto rb = model_config_from_gguf(**fb);
  ASSERT_FALSE(rb.is_ok());
  EXPECT_NE(rb.status().message().find("llama.embedding_length"), std::string::npos);
  auto arch = testing::GgufBuilder().add_string("general.architecture", "falcon").build();
  auto fa = GgufFile::parse(testing::as_bytes(arch));
  EXPECT_EQ(model_config_from_gguf(**fa).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace llmserve
