// FP8 e4m3 checkpoints on the CPU backend (tests/reference/make_tiny_fp8.py): a tiny random
// Llama in transformers' FineGrainedFP8 layout (128 x 128 block scales, weight_scale_inv F32) and
// in compressed-tensors' channel layout (weight_scale BF16 [N, 1]), and model.quantize fp8 of the
// bf16 source. Oracle: transformers' f32 forward with each linear weight replaced by q * s (for
// the block layout the generator checks that transformers' own FP8 loader gives the same logits
// within 6e-6). Our packed FP8 kernels multiply each e4m3 value by its scale in f32 — the same f32
// weight the oracle uses — and accumulate in f32 with an f32 KV cache, so only the summation order
// differs: 1e-4 as for the f32 families (observed ~1e-5).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/runner/model_runner.h"
#include "tests/unit/graph/graph_test_util.h"

namespace llmserve {
namespace {

using kernels::DType;
using nlohmann::json;

const std::string kRoot = std::string(LLMSERVE_FIXTURES_DIR) + "/tiny_fp8";

std::unique_ptr<ModelRunner> make_runner(const std::string& path,
                                         const std::string& quantize = "") {
  ModelRunnerOptions o;
  o.model_path = path;
  o.num_threads = 2;
  o.block_size = 4;
  o.kv_cache_bytes = 16ull << 20;
  o.kv_cache_dtype = kernels::KvDtype::kF32;
  o.max_tokens_per_step = 128;
  o.max_samples_per_step = 128;
  o.quantize = quantize;
  auto r = ModelRunner::create(o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : nullptr;
}

json meta_of(const std::string& variant) {
  return json::parse(testing::read_text_file(kRoot + "/" + variant + "/expected.json"));
}

double max_logit_diff(ModelRunner& runner, const std::string& variant, int64_t chunk) {
  const json m = meta_of(variant);
  const auto seqs = m["sequences"].get<std::vector<std::vector<int32_t>>>();
  const std::vector<float> expected =
      testing::read_f32_file(kRoot + "/" + variant + "/expected_logits.f32");
  size_t offset = 0;
  double worst = 0;
  for (const auto& seq : seqs) {
    const auto got = testing::prefill_all_logits(runner, seq, chunk, 2);
    if (offset + got.size() > expected.size()) return INFINITY;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::fabs(got[i] - expected[offset + i])));
    }
    offset += got.size();
  }
  EXPECT_EQ(offset, expected.size());
  return worst;
}

constexpr const char* kLinear[] = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                   "ffn_gate", "ffn_up", "ffn_down"};

struct Case {
  const char* name;
  const char* dir;       // the model folder
  const char* quantize;  // model.quantize
  const char* oracle;    // the fixture folder whose logits it must match
  int64_t block_rows, block_cols;
};

class TinyFp8 : public ::testing::TestWithParam<Case> {};

TEST_P(TinyFp8, LinearWeightsStayFp8WithTheirScaleGrid) {
  const Case c = GetParam();
  auto r = make_runner(kRoot + "/" + c.dir, c.quantize);
  ASSERT_TRUE(r);
  for (int layer = 0; layer < 2; ++layer) {
    for (const char* kind : kLinear) {
      const std::string name = block_tensor_name(layer, std::string(kind) + ".weight");
      const TensorView* t = r->model().tensor(name);
      ASSERT_NE(t, nullptr) << name;
      EXPECT_EQ(t->type, DType::F8_E4M3) << name;
      EXPECT_EQ(t->nbytes, static_cast<size_t>(t->rows() * t->cols())) << name;
      EXPECT_EQ(t->scales.block_rows, c.block_rows) << name;
      EXPECT_EQ(t->scales.block_cols, c.block_cols < 0 ? t->cols() : c.block_cols) << name;
    }
  }
  // As the published files: embeddings, norms and the LM head stay bf16.
  EXPECT_EQ(r->model().tensor("token_embd.weight")->type, DType::BF16);
  EXPECT_EQ(r->model().tensor("output.weight")->type, DType::BF16);
  EXPECT_EQ(r->model().tensor("blk.0.attn_norm.weight")->type, DType::BF16);
}

TEST_P(TinyFp8, LogitsMatchTransformersOnTheDequantizedWeights) {
  const Case c = GetParam();
  auto r = make_runner(kRoot + "/" + c.dir, c.quantize);
  ASSERT_TRUE(r);
  for (int64_t chunk : {0, 5, 1}) {
    const double d = max_logit_diff(*r, c.oracle, chunk);
    std::printf("%s chunk %ld: max |logit diff| vs transformers %.2e\n", c.name,
                static_cast<long>(chunk), d);
    EXPECT_LT(d, 1e-4) << "chunk " << chunk;
  }
}

TEST_P(TinyFp8, GreedyTokensMatchTransformers) {
  const Case c = GetParam();
  auto r = make_runner(kRoot + "/" + c.dir, c.quantize);
  ASSERT_TRUE(r);
  const json m = meta_of(c.oracle);
  const auto want = m["greedy_tokens"].get<std::vector<int32_t>>();
  const auto prompt = m["greedy_prompt"].get<std::vector<int32_t>>();
  EXPECT_EQ(testing::greedy(*r, prompt, static_cast<int>(want.size())), want);
}

INSTANTIATE_TEST_SUITE_P(Layouts, TinyFp8,
                         ::testing::Values(Case{"block", "block", "", "block", 128, 128},
                                           Case{"channel", "channel", "", "channel", 1, -1},
                                           Case{"quantize_fp8", "bf16", "fp8", "block", 128, 128}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.name);
                         });

// model.quantize fp8 applies the block rule the generator used for block/: the same e4m3 bytes
// and scales as the checkpoint, so the same logits bit for bit.
TEST(TinyFp8Quantize, BytesAndScalesEqualTheBlockCheckpoint) {
  auto quantized = make_runner(kRoot + "/bf16", "fp8");
  auto stored = make_runner(kRoot + "/block");
  ASSERT_TRUE(quantized && stored);
  for (int layer = 0; layer < 2; ++layer) {
    for (const char* kind : kLinear) {
      const std::string name = block_tensor_name(layer, std::string(kind) + ".weight");
      const TensorView* a = quantized->model().tensor(name);
      const TensorView* b = stored->model().tensor(name);
      ASSERT_EQ(a->nbytes, b->nbytes) << name;
      EXPECT_EQ(std::memcmp(a->data, b->data, a->nbytes), 0) << name;
      const size_t n = a->scales.count(a->rows(), a->cols());
      ASSERT_EQ(n, b->scales.count(b->rows(), b->cols())) << name;
      EXPECT_EQ(std::memcmp(a->scales.data, b->scales.data, n * sizeof(float)), 0) << name;
    }
  }
  const auto seq = meta_of("block")["sequences"][3].get<std::vector<int32_t>>();
  EXPECT_EQ(testing::prefill_all_logits(*quantized, seq, 0),
            testing::prefill_all_logits(*stored, seq, 0));
}

// The bf16 source itself, for scale: what FP8 costs against transformers' bf16 model.
TEST(TinyFp8Quantize, Bf16SourceMatchesTransformers) {
  auto r = make_runner(kRoot + "/bf16");
  ASSERT_TRUE(r);
  EXPECT_LT(max_logit_diff(*r, "bf16", 0), 1e-4);
}

}  // namespace
}  // namespace llmserve
