#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model/model_weights.h"
#include "llmserve/kernels/dequantize.h"
#include "tests/unit/model/gguf_writer_for_tests.h"
#include "tests/unit/model/test_files.h"

namespace llmserve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::fixture_path;

json load_fixture_json(const std::string& rel) {
  const auto bytes = testing::read_bytes(fixture_path(rel));
  return json::parse(bytes.begin(), bytes.end());
}

TEST(LoadModel, DefaultModelConfigMatchesPythonReader) {
  const char* path = std::getenv("LLMSERVE_TEST_MODEL");
  if (path == nullptr) GTEST_SKIP() << "LLMSERVE_TEST_MODEL not set";
  auto r = load_model(path);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const LoadedModel& m = **r;
  const json exp = load_fixture_json("model/default_model_expected.json")["config"];
  const ModelConfig& c = m.config();
  EXPECT_EQ(c.architecture, exp["architecture"].get<std::string>());
  EXPECT_EQ(c.hidden_size, exp["hidden_size"].get<int64_t>());
  EXPECT_EQ(c.num_layers, exp["num_layers"].get<int64_t>());
  EXPECT_EQ(c.num_heads, exp["num_heads"].get<int64_t>());
  EXPECT_EQ(c.num_kv_heads, exp["num_kv_heads"].get<int64_t>());
  EXPECT_EQ(c.head_dim, exp["head_dim"].get<int64_t>());
  EXPECT_EQ(c.ffn_size, exp["ffn_size"].get<int64_t>());
  EXPECT_EQ(c.vocab_size, exp["vocab_size"].get<int64_t>());
  EXPECT_FLOAT_EQ(c.rms_norm_eps, exp["rms_norm_eps"].get<float>());
  EXPECT_FLOAT_EQ(c.rope_theta, exp["rope_theta"].get<float>());
  EXPECT_EQ(c.max_context, exp["max_context"].get<int64_t>());
  EXPECT_EQ(c.tie_word_embeddings, exp["tie_word_embeddings"].get<bool>());
  EXPECT_EQ(c.bos_id, exp["bos_id"].get<int32_t>());
  EXPECT_EQ(c.eos_id, exp["eos_id"].get<int32_t>());
  EXPECT_EQ(c.pad_id, exp["pad_id"].get<int32_t>());
  EXPECT_TRUE(c.rope_interleaved);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kNone);
  EXPECT_EQ(m.parameter_count(), exp["parameter_count"].get<uint64_t>());
  EXPECT_EQ(m.weight_bytes(), exp["weight_bytes"].get<uint64_t>());
  EXPECT_EQ(m.tensors().size(), exp["tensor_count"].get<size_t>());
  EXPECT_EQ(c.kv_bytes_per_token(2), 23040u);
  ASSERT_NE(m.gguf(), nullptr);
  EXPECT_TRUE(m.tokenizer_dir().empty());
  EXPECT_EQ(m.tensor("output.weight"), nullptr);
  const TensorView* q = m.tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->shape, (std::vector<int64_t>{576, 576}));
  EXPECT_EQ(q->rows(), 576);
  EXPECT_EQ(q->cols(), 576);
  EXPECT_EQ(q->nbytes, kernels::row_bytes(q->type, 576) * 576);
}

TEST(LoadModel, TinyGguf) {
  auto r = load_model(fixture_path("model/tiny.gguf"));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)->source(), LoadedModel::Source::kGguf);
  EXPECT_TRUE((*r)->config().tie_word_embeddings);
  const TensorView* e = (*r)->tensor("token_embd.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->type, kernels::DType::Q8_0);
  EXPECT_EQ(e->shape, (std::vector<int64_t>{16, 32}));
}

TEST(LoadModel, BuiltTinyLlamaWithUntiedHead) {
  testing::TinyLlamaSpec spec;
  spec.tied = false;
  const std::string path = (fs::temp_directory_path() / "llmserve_model_untied.gguf").string();
  ASSERT_TRUE(testing::tiny_llama_gguf(spec).write(path));
  auto r = load_model(path);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_FALSE((*r)->config().tie_word_embeddings);
  EXPECT_NE((*r)->tensor("output.weight"), nullptr);
  EXPECT_EQ((*r)->config().head_dim, 8);
  fs::remove(path);
}

void check_hf_model(const std::string& dir) {
  auto r = load_model(dir);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const LoadedModel& m = **r;
  EXPECT_EQ(m.source(), LoadedModel::Source::kSafetensors);
  EXPECT_EQ(m.gguf(), nullptr);
  EXPECT_EQ(m.tokenizer_dir(), dir);
  const ModelConfig& c = m.config();
  EXPECT_FALSE(c.rope_interleaved);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_EQ(c.rope_scaling.original_max_position, 128);
  EXPECT_EQ(c.eos_ids, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(m.tensors().size(), 2u + 9u * 2u);  // rotary inv_freq skipped
  const json exp = load_fixture_json("model/hf_tiny_expected.json");
  for (const auto& [hf_name, shape] : exp["shapes"].items()) {
    const std::string name = canonical_tensor_name(hf_name);
    if (name.empty()) continue;
    const TensorView* t = m.tensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->shape, shape.get<std::vector<int64_t>>()) << name;
    std::vector<float> vals(static_cast<size_t>(t->num_elements()));
    kernels::dequantize_row(t->type, t->data, vals.data(), t->num_elements());
    const auto first = exp["first_values"][hf_name].get<std::vector<float>>();
    for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(vals[i], first[i]) << name;
  }
  EXPECT_EQ(m.tensor("blk.0.attn_q.weight")->type, kernels::DType::F16);
  EXPECT_EQ(m.tensor("token_embd.weight")->type, kernels::DType::F32);
  EXPECT_EQ(m.parameter_count(),
            16u * 32 + 32 + 2 * (2 * 32 + 32 * 32 * 2 + 16 * 32 * 2 + 3 * 64 * 32));
}

TEST(LoadModel, HfSingleFile) {
  check_hf_model(fixture_path("model/hf_tiny"));
}
TEST(LoadModel, HfSharded) {
  check_hf_model(fixture_path("model/hf_tiny_sharded"));
}

TEST(LoadModel, CanonicalNames) {
  EXPECT_EQ(canonical_tensor_name("model.layers.12.self_attn.q_proj.weight"),
            "blk.12.attn_q.weight");
  EXPECT_EQ(canonical_tensor_name("model.layers.0.self_attn.k_proj.bias"), "blk.0.attn_k.bias");
  EXPECT_EQ(canonical_tensor_name("model.layers.3.mlp.down_proj.weight"), "blk.3.ffn_down.weight");
  EXPECT_EQ(canonical_tensor_name("model.layers.3.post_attention_layernorm.weight"),
            "blk.3.ffn_norm.weight");
  EXPECT_EQ(canonical_tensor_name("lm_head.weight"), "output.weight");
  EXPECT_EQ(canonical_tensor_name("model.embed_tokens.weight"), "token_embd.weight");
  EXPECT_EQ(canonical_tensor_name("model.norm.weight"), "output_norm.weight");
  EXPECT_EQ(canonical_tensor_name("model.layers.x.mlp.up_proj.weight"), "");
  EXPECT_EQ(canonical_tensor_name("model.layers.1"), "");
  EXPECT_EQ(block_tensor_name(7, "ffn_up.weight"), "blk.7.ffn_up.weight");
}

class HfDirErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("llmserve_model_hf_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::copy(fixture_path("model/hf_tiny_sharded"), dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  Status load_status() {
    auto r = load_model(dir_.string());
    return r.is_ok() ? Status::ok() : r.status();
  }
  fs::path dir_;
};

TEST_F(HfDirErrors, ShardedCopyLoads) {
  EXPECT_TRUE(load_status().is_ok());
}

TEST_F(HfDirErrors, MissingShard) {
  fs::remove(dir_ / "model-00002-of-00002.safetensors");
  const Status st = load_status();
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.message();
}

TEST_F(HfDirErrors, PathTraversalInIndex) {
  write("model.safetensors.index.json",
        R"({"weight_map": {"model.norm.weight": "../x.safetensors"}})");
  EXPECT_NE(load_status().message().find("file name"), std::string::npos);
}

TEST_F(HfDirErrors, IndexNamesAbsentTensor) {
  auto idx = load_fixture_json("model/hf_tiny_sharded/model.safetensors.index.json");
  idx["weight_map"]["model.layers.5.mlp.up_proj.weight"] = "model-00001-of-00002.safetensors";
  write("model.safetensors.index.json", idx.dump());
  EXPECT_NE(load_status().message().find("model.layers.5.mlp.up_proj.weight"), std::string::npos);
}

TEST_F(HfDirErrors, ConfigDisagreesWithShapes) {
  auto cfg = load_fixture_json("model/hf_tiny_sharded/config.json");
  cfg["intermediate_size"] = 32;
  write("config.json", cfg.dump());
  const Status st = load_status();
  EXPECT_NE(st.message().find("ffn_gate.weight"), std::string::npos) << st.message();
}

TEST_F(HfDirErrors, MissingConfigAndBadJson) {
  write("config.json", "{not json");
  EXPECT_NE(load_status().message().find("config.json"), std::string::npos);
  fs::remove(dir_ / "config.json");
  EXPECT_EQ(load_status().code(), StatusCode::kNotFound);
}

TEST(LoadModel, MissingPath) {
  EXPECT_EQ(load_model("/nonexistent/model.gguf").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace llmserve
