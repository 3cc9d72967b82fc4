// A tiny random Llama converted to GGUF and quantized to Q4_K_M (Q4_K + Q6_K tensors) and Q5_K_M
// (Q5_K + Q6_K) by llama.cpp's tools (tests/reference/make_kquant_gguf.py; adjacent-pair RoPE). The
// oracle is transformers in f32 on the GGUF's weights dequantized by the `gguf` Python package, so
// this checks our K-quant loading and integer dot kernels end to end, not the quantization.
// Our q8x2 activations (about 16 bits, kernels/act_precision.h) bound the difference: observed
// 9e-4 (Q4_K_M) and 8e-4 (Q5_K_M) on logits up to 5.6, i.e. 1/254 of the 0.24 that one-pass q8
// activations give (measured), as the two rules' rounding ratio predicts; 2e-3 is that with 2x
// headroom for other thread counts and ISAs, far below one wrong block or q8's error.
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

struct Quant {
  const char* dir;
  const char* main_type;  // the K-quant of most tensors (the rest Q6_K)
};

class TinyKQuant : public ::testing::TestWithParam<Quant> {
 protected:
  void SetUp() override {
    const std::string dir = std::string(LLMSERVE_FIXTURES_DIR) + "/" + GetParam().dir;
    ModelRunnerOptions o;
    o.model_path = dir + "/model.gguf";
    o.num_threads = 2;
    o.block_size = 16;
    o.kv_cache_bytes = 16ull << 20;
    o.kv_cache_dtype = kernels::KvDtype::kF32;
    o.max_tokens_per_step = 64;
    o.max_samples_per_step = 64;
    auto r = ModelRunner::create(o);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    runner_ = std::move(r).value();
    j_ = nlohmann::json::parse(testing::read_text_file(dir + "/expected.json"));
    expected_ = testing::read_f32_file(dir + "/expected_logits.f32");
  }
  std::unique_ptr<ModelRunner> runner_;
  nlohmann::json j_;
  std::vector<float> expected_;
};

TEST_P(TinyKQuant, FixtureHoldsKQuantTensors) {
  int main = 0, q6k = 0;
  for (const auto& [name, type] : j_["tensor_types"].items()) {
    main += type == GetParam().main_type;
    q6k += type == "Q6_K";
  }
  EXPECT_GT(main, 0);
  EXPECT_GT(q6k, 0);
  EXPECT_TRUE(runner_->config().rope_interleaved);
  EXPECT_EQ(runner_->config().hidden_size, 256);
}

TEST_P(TinyKQuant, LogitsMatchTransformersOnDequantizedWeights) {
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

TEST_P(TinyKQuant, GreedyTokensMatchTransformers) {
  const auto prompt = j_["greedy_prompt"].get<std::vector<int32_t>>();
  const auto want = j_["greedy_tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(testing::greedy(*runner_, prompt, static_cast<int>(want.size())), want);
}

INSTANTIATE_TEST_SUITE_P(Files, TinyKQuant,
                         ::testing::Values(Quant{"tiny_kquant", "Q4_K"},
                                           Quant{"tiny_kquant_q5_k_m", "Q5_K"}),
                         [](const auto& info) { return std::string(info.param.main_type); });

}  // namespace
}  // namespace llmserve
