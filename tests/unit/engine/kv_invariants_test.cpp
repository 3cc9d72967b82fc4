// KV-cache invariants through the whole engine on the real model: a shared 200-token prefix is a
// cache hit with unchanged tokens; a KV budget that forces preemption changes no token; aborts
// free their blocks; nothing leaks.
#include <gtest/gtest.h>

#include <iostream>
#include <thread>

#include "tests/unit/engine/engine_test_util.h"

namespace llmserve::testing {
namespace {

// Bytes of one KV block of the engine's cache dtype.
uint64_t block_bytes(const Engine& e) {
  const auto dtype = kernels::parse_kv_dtype(e.options().kv_cache_dtype);
  return e.model_config().kv_bytes_per_token(dtype.value_or(kernels::KvDtype::kF32)) *
         static_cast<uint64_t>(e.options().block_size);
}

std::vector<int32_t> prefix_of(const Tokenizer& tok, size_t n) {
  std::string text;
  while (tok.encode(text, true, false).size() < n + 1) {
    text +=
        "The quick brown fox jumps over the lazy dog near the quiet river bank, while the "
        "old miller counts his sacks of grain and sings about the autumn harvest. ";
  }
  auto ids = tok.encode(text, true, false);
  ids.resize(n);
  return ids;
}

void expect_shared_prefix_hits(const char* kv_dtype) {
  EngineOptions o = small_options();
  o.kv_cache_dtype = kv_dtype;
  auto cached = make_engine(o);
  ASSERT_NE(cached, nullptr);
  const Tokenizer& tok = cached->tokenizer();
  const std::vector<int32_t> prefix = prefix_of(tok, 200);
  auto with_suffix = [&](const std::string& s) {
    std::vector<int32_t> p = prefix;
    for (int32_t id : tok.encode(s, false, false)) p.push_back(id);
    return make_request(p, 12);
  };

  const Collected first = run_alone(*cached, with_suffix(" Question: who sings?"));
  const EngineStats before = cached->stats();
  const Collected second = run_alone(*cached, with_suffix(" Question: what is counted?"));
  const EngineStats after = cached->stats();
  const uint64_t hits = after.prefix_cache_hits - before.prefix_cache_hits;
  std::cout << "[prefix cache] second request: " << second.usage.cached_prompt_tokens << " of "
            << second.usage.prompt_tokens << " prompt tokens cached (" << hits << " hit tokens)\n";
  EXPECT_EQ(first.usage.cached_prompt_tokens, 0);
  EXPECT_EQ(second.usage.cached_prompt_tokens, 192);  // 12 full blocks of the 200-token prefix
  EXPECT_EQ(hits, 192u);
  expect_no_leak(*cached);

  o.enable_prefix_caching = false;
  auto uncached = make_engine(o);
  ASSERT_NE(uncached, nullptr);
  const Collected reference = run_alone(*uncached, with_suffix(" Question: what is counted?"));
  EXPECT_EQ(reference.usage.cached_prompt_tokens, 0);
  ASSERT_EQ(second.samples.size(), 1u);
  EXPECT_EQ(second.samples[0].token_ids, reference.samples[0].token_ids);
  EXPECT_EQ(second.samples[0].text, reference.samples[0].text);
  expect_no_leak(*uncached);
}

TEST(EngineKvCache, SharedPrefixHitsCacheWithSameTokens) {
  LLMSERVE_REQUIRE_MODEL();
  expect_shared_prefix_hits("f16");
}

// Quantized pages are shared through the prefix cache like any other (their scales with them).
TEST(EngineKvCache, Int8SharedPrefixHitsCacheWithSameTokens) {
  LLMSERVE_REQUIRE_MODEL();
  expect_shared_prefix_hits("int8");
}

void expect_preemption_keeps_tokens(const char* kv_dtype) {
  constexpr size_t kRequests = 8;
  constexpr int32_t kTokens = 16;
  EngineOptions o = small_options();
  o.kv_cache_dtype = kv_dtype;
  auto large = make_engine(o);
  ASSERT_NE(large, nullptr);
  const auto prompts = distinct_prompts(large->tokenizer(), kRequests);
  auto requests = [&] {
    std::vector<GenerateRequest> r;
    for (const auto& p : prompts) {
      r.push_back(make_request(p, kTokens));
      r.back().params.ignore_eos = true;
    }
    return r;
  };
  const std::vector<Collected> reference = run_together(*large, requests());
  EXPECT_EQ(large->stats().preemptions, 0u);
  expect_no_leak(*large);

  // Room for about two requests at a time (each needs up to 5 blocks), plus the null block.
  o.kv_cache_bytes = block_bytes(*large) * 11;
  auto tiny = make_engine(o);
  ASSERT_NE(tiny, nullptr);
  const std::vector<Collected> squeezed = run_together(*tiny, requests());
  const EngineStats s = tiny->stats();
  std::cout << "[preemption] " << s.kv_blocks_total << " usable blocks, " << s.preemptions
            << " preemptions\n";
  EXPECT_GT(s.preemptions, 0u);
  ASSERT_EQ(squeezed.size(), kRequests);
  for (size_t i = 0; i < kRequests; ++i) {
    EXPECT_EQ(squeezed[i].samples[0].finish, FinishReason::kLength) << "request " << i;
    EXPECT_EQ(squeezed[i].samples[0].token_ids, reference[i].samples[0].token_ids)
        << "request " << i;
  }
  expect_no_leak(*tiny);
}

TEST(EngineKvCache, PreemptionUnderTinyBudgetGivesSameTokens) {
  LLMSERVE_REQUIRE_MODEL();
  expect_preemption_keeps_tokens("f16");
}

TEST(EngineKvCache, Int8PreemptionUnderTinyBudgetGivesSameTokens) {
  LLMSERVE_REQUIRE_MODEL();
  expect_preemption_keeps_tokens("int8");
}

TEST(EngineKvCache, AbortMidDecodeFreesBlocks) {
  LLMSERVE_REQUIRE_MODEL();
  auto engine = make_engine(small_options());
  ASSERT_NE(engine, nullptr);
  const auto prompts = distinct_prompts(engine->tokenizer(), 3);
  GenerateRequest r = make_request(prompts[0], 500);
  r.params.ignore_eos = true;
  r.external_id = "cmpl-abort-me";
  auto stream = engine->submit(std::move(r));
  ASSERT_TRUE(stream.is_ok());
  GenerateRequest r2 = make_request(prompts[1], 500);
  r2.params.ignore_eos = true;
  auto cancelled = engine->submit(std::move(r2));
  ASSERT_TRUE(cancelled.is_ok());
  GenerateRequest r3 = make_request(prompts[2], 500);
  r3.params.ignore_eos = true;
  r3.external_id = "cmpl-external";
  auto external = engine->submit(std::move(r3));
  ASSERT_TRUE(external.is_ok());

  // Wait until all three decode, then end them three ways.
  for (auto* s : {&*stream, &*cancelled, &*external}) {
    for (int got = 0; got < 3;) {
      auto out = (*s)->next(std::chrono::seconds(60));
      ASSERT_TRUE(out.has_value());
      got += static_cast<int>(out->token_ids.size());
    }
  }
  EXPECT_GT(engine->stats().kv_cache_usage_ratio, 0.0);
  engine->abort((*stream)->request_id());
  (*cancelled)->cancel();
  EXPECT_TRUE(engine->abort_external("cmpl-external"));
  EXPECT_FALSE(engine->abort_external("cmpl-unknown"));

  const Collected a = collect(**stream);
  ASSERT_EQ(a.samples.size(), 1u);
  EXPECT_EQ(a.samples[0].finish, FinishReason::kAbort);
  EXPECT_LT(a.usage.completion_tokens, 500);
  EXPECT_GE(a.usage.completion_tokens, 3);
  const Collected x = collect(**external);
  EXPECT_EQ(x.samples[0].finish, FinishReason::kAbort);
  // The cancelled stream's reader is gone; the engine notices at its next step.
  for (int i = 0; i < 200 && engine->stats().requests_running > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  expect_no_leak(*engine);
  EXPECT_GE(engine->stats().finished_by_reason[static_cast<size_t>(FinishReason::kAbort)], 3u);
}

}  // namespace
}  // namespace llmserve::testing
