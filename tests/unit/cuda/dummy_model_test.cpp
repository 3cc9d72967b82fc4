// The dummy-weights GGUF opens with load_model and has the preset's shapes (no GPU needed).
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/model/dummy_model.h"
#include "engine/model/model_weights.h"

namespace llmserve {
namespace {

TEST(DummyModel, TinyPresetLoadsWithTheConfigShapes) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  auto path = write_dummy_gguf("tiny", dir, 1);
  ASSERT_TRUE(path.is_ok()) << path.status().message();
  auto model = load_model(path.value());
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  auto want = dummy_model_config("tiny");
  ASSERT_TRUE(want.is_ok());
  const ModelConfig& got = (*model)->config();
  EXPECT_EQ(got.hidden_size, want->hidden_size);
  EXPECT_EQ(got.num_layers, want->num_layers);
  EXPECT_EQ(got.num_kv_heads, want->num_kv_heads);
  EXPECT_EQ(got.vocab_size, want->vocab_size);
  EXPECT_TRUE(got.rope_interleaved);
  EXPECT_TRUE((*model)->check_tensors().is_ok()) << (*model)->check_tensors().message();
  const TensorView* norm = (*model)->tensor("blk.1.ffn_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(reinterpret_cast<const uint16_t*>(norm->data)[5], 0x3f80);  // bf16 1.0
  std::filesystem::remove(path.value());
}

TEST(DummyModel, PresetsAndErrors) {
  EXPECT_EQ(dummy_model_presets().size(), 3u);
  auto c8 = dummy_model_config("llama-3.1-8b");
  ASSERT_TRUE(c8.is_ok());
  EXPECT_EQ(c8->kv_bytes_per_token(2), 2ull * 32 * 8 * 128 * 2);
  EXPECT_TRUE(c8->validate().is_ok());
  auto c1 = dummy_model_config("llama-3.2-1b");
  ASSERT_TRUE(c1.is_ok());
  EXPECT_TRUE(c1->tie_word_embeddings);
  EXPECT_EQ(c1->head_dim, 64);
  EXPECT_FALSE(dummy_model_config("gpt-5").is_ok());
  EXPECT_FALSE(write_dummy_gguf("nope", "/tmp").is_ok());
}

}  // namespace
}  // namespace llmserve
