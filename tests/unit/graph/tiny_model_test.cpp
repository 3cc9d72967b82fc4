// The tiny random HF Llama (tests/reference/make_tiny_model.py): F32 safetensors, halves RoPE,
// untied LM head. Our logits must match transformers' f32 logits at every position to 1e-4.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/runner/batch_builder.h"
#include "engine/runner/model_runner.h"
#include "tests/unit/graph/graph_test_util.h"

namespace llmserve {
namespace {

const std::string kDir = std::string(LLMSERVE_FIXTURES_DIR) + "/tiny_llama";

class TinyModel : public ::testing::Test {
 protected:
  void SetUp() override {
    ModelRunnerOptions o;
    o.model_path = kDir;
    o.num_threads = 2;
    o.block_size = 4;  // many block edges for short sequences
    o.kv_cache_bytes = 64 * 4 * runner_bytes_per_token();
    o.kv_cache_dtype = kernels::KvDtype::kF32;  // the graph's f32 arithmetic, end to end
    o.max_tokens_per_step = 128;
    o.max_samples_per_step = 128;
    auto r = ModelRunner::create(o);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    runner_ = std::move(r).value();
    const auto j = nlohmann::json::parse(testing::read_text_file(kDir + "/expected.json"));
    seqs_ = j["sequences"].get<std::vector<std::vector<int32_t>>>();
    expected_ = testing::read_f32_file(kDir + "/expected_logits.f32");
  }
  // 2 layers x 2 kv heads x 16 head_dim x 2 (K, V) x 4 bytes.
  static uint64_t runner_bytes_per_token() { return 2 * 2 * 16 * 2 * 4; }

  std::unique_ptr<ModelRunner> runner_;
  std::vector<std::vector<int32_t>> seqs_;
  std::vector<float> expected_;
};

TEST_F(TinyModel, ConfigUsesHalvesRope) {
  EXPECT_FALSE(runner_->config().rope_interleaved);
  EXPECT_FALSE(runner_->config().tie_word_embeddings);
  EXPECT_EQ(runner_->num_blocks(), 64);
}

TEST_F(TinyModel, MatchesTransformersAtEveryPosition) {
  const int64_t V = runner_->config().vocab_size;
  size_t offset = 0;
  for (const auto& seq : seqs_) {
    const auto got = testing::prefill_all_logits(*runner_, seq, 0, 3);
    ASSERT_EQ(got.size(), seq.size() * static_cast<size_t>(V));
    ASSERT_LE(offset + got.size(), expected_.size());
    double max_diff = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[i] - expected_[offset + i])));
    }
    EXPECT_LT(max_diff, 1e-4) << "sequence of " << seq.size() << " tokens";
    std::printf("[tiny] %zu tokens: max |logit diff| vs transformers %.3g\n", seq.size(), max_diff);
    offset += got.size();
  }
  EXPECT_EQ(offset, expected_.size());
}

TEST_F(TinyModel, ChunkedAndTokenByTokenMatchTransformers) {
  const int64_t V = runner_->config().vocab_size;
  const auto& seq = seqs_.back();
  size_t offset = 0;
  for (size_t i = 0; i + 1 < seqs_.size(); ++i) offset += seqs_[i].size() * static_cast<size_t>(V);
  for (int64_t chunk : {1, 5, 16}) {
    const auto got = testing::prefill_all_logits(*runner_, seq, chunk, 7);
    ASSERT_EQ(got.size(), seq.size() * static_cast<size_t>(V));
    double max_diff = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[i] - expected_[offset + i])));
    }
    EXPECT_LT(max_diff, 1e-4) << "chunk " << chunk;
  }
}

TEST_F(TinyModel, RejectsBadBatches) {
  const std::vector<int32_t> tok = {5, 6, 999};  // 999 outside the vocab of 300
  const auto table = contiguous_block_table(0, 3, runner_->block_size());
  BatchBuilder b(runner_->block_size());
  const BatchEntry e{tok, 0, 3, table, true};
  auto batch = b.build(std::span(&e, 1));
  ASSERT_TRUE(batch.is_ok());
  EXPECT_FALSE(runner_->execute(*batch).is_ok());
  const std::vector<int32_t> ok_tok(200, 5);  // 200 tokens > max_tokens_per_step 128
  const auto big_table = contiguous_block_table(0, 200, runner_->block_size());
  const BatchEntry big{ok_tok, 0, 200, big_table, true};
  auto big_batch = b.build(std::span(&big, 1));
  ASSERT_TRUE(big_batch.is_ok());
  EXPECT_FALSE(runner_->execute(*big_batch).is_ok());
}

// The default f16 KV cache: twice the blocks for the same bytes, and logits within f16 rounding
// of the keys and values (relative 2^-11) of transformers' f32 ones.
TEST_F(TinyModel, F16KvCacheHoldsTwiceTheBlocksAndStaysClose) {
  ModelRunnerOptions o;
  o.model_path = kDir;
  o.num_threads = 2;
  o.block_size = 4;
  o.kv_cache_bytes = 64 * 4 * runner_bytes_per_token();
  o.max_tokens_per_step = 128;
  o.max_samples_per_step = 128;
  ASSERT_EQ(o.kv_cache_dtype, kernels::KvDtype::kF16);
  auto r = ModelRunner::create(o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)->num_blocks(), 128);
  EXPECT_EQ((*r)->kv_cache_bytes(), 64u * 4 * runner_bytes_per_token());
  const int64_t V = (*r)->config().vocab_size;
  size_t offset = 0;
  for (const auto& seq : seqs_) {
    const auto got = testing::prefill_all_logits(**r, seq, 5, 3);
    ASSERT_EQ(got.size(), seq.size() * static_cast<size_t>(V));
    double max_diff = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[i] - expected_[offset + i])));
    }
    EXPECT_LT(max_diff, 2e-2) << "sequence of " << seq.size() << " tokens";
    std::printf("[tiny f16 kv] %zu tokens: max |logit diff| vs transformers %.3g\n", seq.size(),
                max_diff);
    offset += got.size();
  }
}

TEST(ModelRunner, RejectsKvBudgetBelowOneBlock) {
  ModelRunnerOptions o;
  o.model_path = kDir;
  o.kv_cache_bytes = 100;
  EXPECT_FALSE(ModelRunner::create(o).is_ok());
}

}  // namespace
}  // namespace llmserve
