// Batch invariance on the real model: each request's tokens are the same alone as in a batch of
// 16 with continuous batching and chunked prefill (greedy and seeded sampling).
#include <gtest/gtest.h>

#include "tests/unit/engine/engine_test_util.h"

namespace llmserve::testing {
namespace {

constexpr size_t kPrompts = 16;
constexpr int32_t kTokens = 16;

void expect_batched_equals_alone(float temperature, float top_p, const char* kv_dtype = "f16") {
  EngineOptions o = small_options();
  o.kv_cache_dtype = kv_dtype;
  o.enable_prefix_caching = false;  // every run computes its prompt from scratch
  auto engine = make_engine(o);
  ASSERT_NE(engine, nullptr);
  const auto prompts = distinct_prompts(engine->tokenizer(), kPrompts);
  auto request = [&](size_t i) {
    GenerateRequest r = make_request(prompts[i], kTokens, temperature);
    r.params.top_p = top_p;
    r.params.ignore_eos = true;
    if (temperature > 0) r.params.seed = 1000 + i;
    return r;
  };

  std::vector<Collected> alone;
  for (size_t i = 0; i < kPrompts; ++i) alone.push_back(run_alone(*engine, request(i)));
  const uint64_t steps_alone = engine->stats().steps;

  std::vector<GenerateRequest> reqs;
  for (size_t i = 0; i < kPrompts; ++i) reqs.push_back(request(i));
  const std::vector<Collected> together = run_together(*engine, std::move(reqs));
  const uint64_t steps_together = engine->stats().steps - steps_alone;

  ASSERT_EQ(together.size(), kPrompts);
  for (size_t i = 0; i < kPrompts; ++i) {
    ASSERT_EQ(alone[i].samples.size(), 1u);
    ASSERT_EQ(together[i].samples.size(), 1u);
    EXPECT_EQ(alone[i].samples[0].token_ids.size(), static_cast<size_t>(kTokens));
    EXPECT_EQ(together[i].samples[0].token_ids, alone[i].samples[0].token_ids) << "prompt " << i;
    EXPECT_EQ(together[i].samples[0].text, alone[i].samples[0].text) << "prompt " << i;
    EXPECT_EQ(together[i].samples[0].finish, FinishReason::kLength);
  }
  // The batch really was batched: far fewer steps than the sequential runs.
  EXPECT_LT(steps_together * 3, steps_alone);
  expect_no_leak(*engine);
}

TEST(EngineBatchInvariance, GreedyBatchedEqualsAlone) {
  LLMSERVE_REQUIRE_MODEL();
  expect_batched_equals_alone(0.0f, 1.0f);
}

TEST(EngineBatchInvariance, SeededSamplingBatchedEqualsAlone) {
  LLMSERVE_REQUIRE_MODEL();
  expect_batched_equals_alone(0.8f, 0.9f);
}

// Quantized pages change nothing about batching and chunked prefill: alone equals batched.
TEST(EngineBatchInvariance, Int8KvGreedyBatchedEqualsAlone) {
  LLMSERVE_REQUIRE_MODEL();
  expect_batched_equals_alone(0.0f, 1.0f, "int8");
}

}  // namespace
}  // namespace llmserve::testing
