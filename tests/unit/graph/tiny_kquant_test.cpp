// A tiny random Llama converted to GGUF and quantized to Q4_K_M by llama.cpp's tools
// (tests/reference/make_kquant_gguf.py: Q4_K and Q6_K tensors, adjacent-pair RoPE). The oracle
// is transformers in f32 on the GGUF's weights dequantized by the `gguf` Python package, so
// this checks our K-quant loading and integer dot kernels end to end, not the quantization.
// Our q8x2 activations (about 16 bits, kernels/act_precision.h) bound the difference: observed
// ~1e-4 on logits of magnitude ~3; 2e-3 leaves headroom for other thread counts and ISAs while
// staying far below what one wrong block (or q8 activations, ~1e-2) would give.
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

const std::string kDir = std::string(LLMSERVE_FIXTURES_DIR) + "/tiny_kquant";

class TinyKQuant : public ::testing::Test {
 protected:
  void SetUp() override {
    ModelRunnerOptions o;
    o.model_path = kDir + "/model.gguf";
    o.num_threads = 2;
    o.block_size = 16;
    o.kv_cache_bytes = 16ull << 20;
    o.kv_cache_dtype = kernels::KvDtype::kF32;
    o.max_tokens_per_step = 64;
    o.max_samples_per_step = 64;
    auto r = ModelRunner::create(o);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    runner_ = std::move(r).value();
    j_ = nlohmann::json::parse(testing::read_text_file(kDir + "/expected.json"));
    expected_ = testing::read_f32_file(kDir + "/expected_logits.f32");
  }
  std::unique_ptr<ModelRunner> runner_;
  nlohmann::json j_;
  std::vector<float> expected_;
};

TEST_F(TinyKQuant, FixtureHoldsKQuantTensors) {
  int q4k = 0, q6k = 0;
  for (const auto& [name, type] : j_["tensor_types"].items()) {
    q4k += type == "Q4_K";
    q6k += type == "Q6_K";
  }
  EXPECT_GT(q4k, 0);
  EXPECT_GT(q6k, 0);
  EXPECT_TRUE(runner_->config().rope_interleaved);
  EXPECT_EQ(runner_->config().hidden_size, 256);
}

TEST_F(TinyKQuant, LogitsMatchTransformersOnDequantizedWeights) {
  const auto seqs = j_["sequences"].get<std::vector<std::vector<int32_t>>>();
  const int64_t V = runner_->config().vocab_size;
  for (int64_t chunk : {0, 1}) {
    size_t offset = 0;
    double worst = 0;
    for (const auto& seq : seqs) {
      const auto got = testing::prefill_all_logits(*runner_, seq, chunk, 0);
      ASSERT_EQ(got.size(), seq.size() * static_cast<size_t>(V));
      ASSERT_LE(offset + got.size(), expected_.size());
      for (size_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, static_cast<double>(std::fabs(got[i] - expected_[offset + i])));
      }
      offset += got.size();
    }
    EXPECT_EQ(offset, expected_.size());
    EXPECT_LT(worst, 2e-3) << "chunk " << chunk;
    std::printf(
        "[tiny_kquant %s] chunk %lld: max |logit diff| vs transformers on dequantized %.3g\n",
        j_["quant"].get<std::string>().c_str(), static_cast<long long>(chunk), worst);
  }
}

TEST_F(TinyKQuant, GreedyTokensMatchTransformers) {
  const auto prompt = j_["greedy_prompt"].get<std::vector<int32_t>>();
  const auto want = j_["greedy_tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(testing::greedy(*runner_, prompt, static_cast<int>(want.size())), want);
}

}  // namespace
}  // namespace llmserve
