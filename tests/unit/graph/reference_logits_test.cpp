// The default GGUF model (LLMSERVE_TEST_MODEL) against independent implementations on the same
// file: HF transformers (tests/reference/make_logits_fixtures.py) and llama.cpp
// (make_llamacpp_fixtures.py) -- last-prompt-position top-20 logits and 32-token greedy
// continuations for 22 prompts, chat-templated and raw, short and ~200 tokens.
//
// transformers runs f32 on the dequantized weights. Our matmuls quantize activations per
// 32-element block for integer dot products with the Q4_1 / Q8_0 weights:
// - q8x2 (the default): two 8-bit passes, rounding each element by at most amax/64516. The graph
//   itself is exact (on the weights dequantized to f32 safetensors it matches transformers to
//   1e-4), so what is left is that rounding: 127x below one pass's, whose measured effect on these
//   logits was 0.18-1.14 (so ~0.009 expected). We require |diff| <= 0.004 on the top-20 over an
//   f32 KV cache and <= 0.015 over the default f16 one (keys and values rounded to 11 bits), the
//   same top-5 sets, all 22 greedy continuations identical, and Paris for both the raw and the
//   chat France prompts, on AVX-512 and on AVX2 (ctest's unit_graph_model_avx2 run).
// - q8 (one pass, llama.cpp's own scheme): SmolLM2's activation outliers move logits by up to
//   ~1.1, which flips near-ties; against llama.cpp we require every parting at our top-2 margin
//   <= 0.6 and report the count.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/runner/matmul_precision.h"
#include "engine/runner/model_runner.h"
#include "engine/tokenizer/load_tokenizer.h"
#include "tests/unit/graph/graph_test_util.h"

namespace llmserve {
namespace {

struct CaseResult {
  std::string prompt, kind;
  std::vector<int32_t> greedy, expected_greedy, llamacpp_greedy;
  std::vector<float> margins, expected_margins;
  float max_abs = 0;
  int top5_overlap = 0;
  bool top1_same = false;
};

std::vector<CaseResult> run_cases(const std::string& model_path, MatmulPrecision precision,
                                  kernels::KvDtype kv_dtype = kernels::KvDtype::kF16) {
  std::vector<CaseResult> results;
  ModelRunnerOptions o;
  o.model_path = model_path;
  o.num_threads = 1;  // hundreds of small decode steps: no pool wake-ups on a busy machine
  o.matmul_precision = precision;
  o.kv_cache_dtype = kv_dtype;
  o.kv_cache_bytes = 32ull * 16 * 2 * 30 * 3 * 64 * 4;  // 32 blocks of 16 tokens
  o.max_tokens_per_step = 512;
  o.max_samples_per_step = 1;
  auto runner = ModelRunner::create(o);
  EXPECT_TRUE(runner.is_ok()) << runner.status().to_string();
  if (!runner.is_ok()) return results;
  const auto fx = nlohmann::json::parse(testing::read_text_file(std::string(LLMSERVE_FIXTURES_DIR) +
                                                                "/logits/smollm2_135m_q4_1.json"));
  const auto lc = nlohmann::json::parse(testing::read_text_file(
      std::string(LLMSERVE_FIXTURES_DIR) + "/logits/smollm2_135m_q4_1_llamacpp.json"));
  const int steps = fx["steps"].get<int>();
  size_t case_index = 0;
  for (const auto& c : fx["cases"]) {
    CaseResult r;
    r.prompt = c["prompt"].get<std::string>();
    r.kind = c["kind"].get<std::string>();
    const auto ids = c["prompt_ids"].get<std::vector<int32_t>>();
    const auto top_ids = c["top_ids"].get<std::vector<int32_t>>();
    const auto top_logits = c["top_logits"].get<std::vector<float>>();
    r.expected_greedy = c["greedy"].get<std::vector<int32_t>>();
    r.expected_margins = c["greedy_margins"].get<std::vector<float>>();
    const auto& lcase = lc["cases"].at(case_index++);
    EXPECT_EQ(lcase["prompt_ids"].get<std::vector<int32_t>>(), ids);
    r.llamacpp_greedy = lcase["greedy"].get<std::vector<int32_t>>();
    std::vector<float> last;
    r.greedy = testing::greedy(**runner, ids, steps, &last, &r.margins);
    EXPECT_EQ(last.size(), static_cast<size_t>((*runner)->config().vocab_size));
    if (last.size() != static_cast<size_t>((*runner)->config().vocab_size)) return {};
    for (size_t i = 0; i < top_ids.size(); ++i) {
      r.max_abs =
          std::max(r.max_abs, std::fabs(last[static_cast<size_t>(top_ids[i])] - top_logits[i]));
    }
    std::vector<int32_t> order(last.size());
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + 5, order.end(), [&](int32_t a, int32_t b) {
      return last[static_cast<size_t>(a)] > last[static_cast<size_t>(b)];
    });
    for (int k = 0; k < 5; ++k) {
      r.top5_overlap +=
          std::count(top_ids.begin(), top_ids.begin() + 5, order[static_cast<size_t>(k)]) > 0;
    }
    r.top1_same = order[0] == top_ids[0];
    results.push_back(std::move(r));
  }
  return results;
}

// Index of the first differing token, or the length when equal.
size_t first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

// ctest runs each case in its own process: a configuration runs once per process, when a case
// first needs it.
class ReferenceLogits : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("LLMSERVE_TEST_MODEL");
    if (path == nullptr || *path == 0) GTEST_SKIP() << "LLMSERVE_TEST_MODEL not set";
    model_path_ = path;
  }
  static const std::vector<CaseResult>& results(MatmulPrecision precision,
                                                kernels::KvDtype kv_dtype) {
    static std::map<std::tuple<int, int, int>, std::vector<CaseResult>> cache;
    const std::tuple<int, int, int> key{static_cast<int>(precision.output),
                                        static_cast<int>(precision.prompt),
                                        static_cast<int>(kv_dtype)};
    auto it = cache.find(key);
    if (it == cache.end())
      it = cache.emplace(key, run_cases(model_path_, precision, kv_dtype)).first;
    return it->second;
  }
  // Defaults (f16 KV cache) with both matmul precisions, and q8x2 over f32 and int8 KV caches.
  static const std::vector<CaseResult>& q8x2() {
    return results(kernels::ActPrecision::kQ8x2, kernels::KvDtype::kF16);
  }
  static const std::vector<CaseResult>& q8() {
    return results(kernels::ActPrecision::kQ8, kernels::KvDtype::kF16);
  }
  static const std::vector<CaseResult>& q8x2_f32kv() {
    return results(kernels::ActPrecision::kQ8x2, kernels::KvDtype::kF32);
  }
  static const std::vector<CaseResult>& q8x2_int8kv() {
    return results(kernels::ActPrecision::kQ8x2, kernels::KvDtype::kInt8);
  }
  // engine.cpu_matmul_precision auto: the prompt rows before the last in one pass.
  static const std::vector<CaseResult>& auto_precision() {
    return results(*parse_matmul_precision("auto"), kernels::KvDtype::kF16);
  }
  static inline std::string model_path_;
};

// Top-20 logits of the last prompt position against transformers: every |diff| <= bound and
// at least min_top5 of the top-5 set shared; prints the worst.
void check_last_position(const std::vector<CaseResult>& set, const char* name, float bound,
                         int min_top5) {
  ASSERT_GE(set.size(), 20u);
  float worst = 0;
  int top5_all = 0, top1 = 0;
  for (const auto& r : set) {
    worst = std::max(worst, r.max_abs);
    top5_all += r.top5_overlap == 5;
    top1 += r.top1_same;
    EXPECT_LE(r.max_abs, bound) << r.kind << " prompt: " << r.prompt.substr(0, 40);
    EXPECT_GE(r.top5_overlap, min_top5) << r.prompt.substr(0, 40);
  }
  std::printf(
      "[reference] %s: %zu prompts: max |logit diff| on top-20 = %.4f (bound %.4f); top-5 sets "
      "identical on %d, top-1 on %d\n",
      name, set.size(), worst, bound, top5_all, top1);
}

// The defaults (q8x2 activations, f16 KV cache): logits within 0.015 of transformers' (measured
// 0.0121 with AVX-512, 0.0137 with AVX2: f16 rounds keys and values to 11 bits), the same top-5
// sets, all 22 greedy 32-token continuations identical, and Paris for the raw and the chat France
// prompts (the chat one a near-tie with SmolLM2's default system prompt: "The" 25.325 vs "L"
// 25.243 in transformers' f32 logits).
TEST_F(ReferenceLogits, DefaultsMatchTransformersLogitsAndGreedyText) {
  check_last_position(q8x2(), "q8x2", 0.015f, 5);
  int identical = 0;
  for (const auto& r : q8x2()) {
    const size_t i = first_difference(r.greedy, r.expected_greedy);
    if (i == r.greedy.size()) {
      ++identical;
      continue;
    }
    ADD_FAILURE() << "q8x2 parts from transformers at step " << i << " (HF margin "
                  << r.expected_margins[i] << ", ours " << r.margins[i]
                  << "): " << r.prompt.substr(0, 40);
  }
  std::printf(
      "[reference] q8x2: greedy 32-token continuations identical to transformers on %d of %zu\n",
      identical, q8x2().size());
  auto tok = load_tokenizer(model_path_);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  int found = 0;
  for (const auto& r : q8x2()) {
    if (r.prompt == "The capital of France is" || r.prompt == "What is the capital of France?") {
      ++found;
      const std::string text = (*tok)->decode(r.greedy, true);
      EXPECT_NE(text.find("Paris"), std::string::npos) << r.kind << ": " << text;
    }
  }
  EXPECT_EQ(found, 2);
}

// Over an f32 KV cache only the activation rounding is left: 0.0030 (AVX-512) and 0.0032 (AVX2).
TEST_F(ReferenceLogits, F32KvCacheMatchesTransformersLogits) {
  check_last_position(q8x2_f32kv(), "q8x2 + f32 KV", 0.004f, 5);
}

// An int8 KV cache rounds each key and value element by at most amax/254 of its (token, head)
// row (after the Hadamard rotation that spreads outlier channels; f16 rounds by |x| 2^-11), and
// on AVX-512 VNNI the query is rounded to int8 per head the same way for the integer q.k. A
// score then moves by up to |q|_1 amax_k/254 (plus |k|_1 amax_q/254) and an output by
// amax_v/254 where one key takes all the weight: on SmolLM2 a few 0.1 of a logit, not f16's
// 0.01. Measured (printed): 0.03-0.23 on the top-20 logits of 21 prompts and 0.37 on the 4-token
// "The quick brown fox" (short prompts put nearly all attention on the first token, whose value
// row's rounding then reaches the output whole); without VNNI 0.43. The bounds below hold those
// with a margin; the greedy continuations part from the f16 cache's only at near-ties
// (measured: 17 of 22 identical, every parting at an f16 margin <= 0.035; without VNNI 18 of 22,
// largest 0.128; without the rotation 15 of 22, largest 0.254).
constexpr float kInt8Bound = 0.5f;
constexpr float kInt8PartingMargin = 0.2f;

TEST_F(ReferenceLogits, Int8KvCacheStaysCloseToF16) {
  ASSERT_EQ(q8x2_int8kv().size(), q8x2().size());
  float worst = 0, worst_f16 = 0;
  int identical = 0, top5_all = 0;
  for (size_t c = 0; c < q8x2().size(); ++c) {
    const CaseResult& r = q8x2_int8kv()[c];
    const CaseResult& f16 = q8x2()[c];
    worst = std::max(worst, r.max_abs);
    worst_f16 = std::max(worst_f16, f16.max_abs);
    top5_all += r.top5_overlap == 5;
    EXPECT_LE(r.max_abs, kInt8Bound) << r.prompt.substr(0, 40);
    EXPECT_GE(r.top5_overlap, 4) << r.prompt.substr(0, 40);
    std::printf("[reference] int8 KV %s %-40s max |diff| %.4f (f16 KV %.4f)\n", r.kind.c_str(),
                r.prompt.substr(0, 40).c_str(), r.max_abs, f16.max_abs);
    const size_t i = first_difference(r.greedy, f16.greedy);
    if (i == r.greedy.size()) {
      ++identical;
      continue;
    }
    std::printf("[reference] int8 KV parts from f16 KV at step %zu (f16 margin %.4f): %s\n", i,
                f16.margins[i], r.prompt.substr(0, 40).c_str());
    EXPECT_LE(f16.margins[i], kInt8PartingMargin) << r.prompt.substr(0, 40);
  }
  std::printf(
      "[reference] q8x2 + int8 KV: max |logit diff| vs transformers on top-20 = %.4f (f16 KV "
      "%.4f); top-5 sets identical on %d of %zu; greedy identical to f16 KV on %d of %zu\n",
      worst, worst_f16, top5_all, q8x2().size(), identical, q8x2().size());
}

// One 8-bit pass: partings from llama.cpp (same scheme, other rounding details) and from
// transformers happen only at near-ties; reported, with the identical counts.
TEST_F(ReferenceLogits, OnePassPartsOnlyAtNearTies) {
  check_last_position(q8(), "q8", 1.5f, 3);
  int same_llamacpp = 0, same_hf = 0;
  for (const auto& r : q8()) {
    const size_t i = first_difference(r.greedy, r.llamacpp_greedy);
    same_hf += r.greedy == r.expected_greedy;
    if (i == r.greedy.size()) {
      ++same_llamacpp;
      continue;
    }
    std::printf("[reference] q8 parts from llama.cpp at step %zu (our margin %.4f): %s\n", i,
                r.margins[i], r.prompt.substr(0, 40).c_str());
    EXPECT_LE(r.margins[i], 0.6f) << r.prompt.substr(0, 40);
  }
  std::printf(
      "[reference] q8: greedy continuations identical to llama.cpp on %d of %zu, to transformers "
      "on %d\n",
      same_llamacpp, q8().size(), same_hf);
}

// auto (engine.cpu_matmul_precision auto): the prompt's rows in one pass, the generated
// tokens' rows in two. The first token's logits come from a one-pass prompt, so they sit as far
// from transformers' as q8's; every later token's row is exact but attends to the prompt's one-pass
// keys and values. Greedy continuations part from transformers only at near-ties, as q8's do
// (measured: 12 of 22 identical, every parting at an HF margin <= 0.32; the bounds are q8's).
TEST_F(ReferenceLogits, AutoPrecisionPartsOnlyAtNearTies) {
  check_last_position(auto_precision(), "auto", 1.5f, 3);
  float worst_q8 = 0;
  for (const auto& r : q8()) worst_q8 = std::max(worst_q8, r.max_abs);
  int same_hf = 0, same_q8x2 = 0;
  for (size_t c = 0; c < auto_precision().size(); ++c) {
    const CaseResult& r = auto_precision()[c];
    same_q8x2 += r.greedy == q8x2()[c].greedy;
    const size_t i = first_difference(r.greedy, r.expected_greedy);
    if (i == r.greedy.size()) {
      ++same_hf;
      continue;
    }
    std::printf("[reference] auto parts from transformers at step %zu (HF margin %.4f): %s\n", i,
                r.expected_margins[i], r.prompt.substr(0, 40).c_str());
    EXPECT_LE(r.expected_margins[i], 0.6f) << r.prompt.substr(0, 40);
  }
  std::printf(
      "[reference] auto: greedy identical to transformers on %d of %zu, to q8x2 on %d; q8's worst "
      "|logit diff| %.4f\n",
      same_hf, auto_precision().size(), same_q8x2, worst_q8);
}

}  // namespace
}  // namespace llmserve
