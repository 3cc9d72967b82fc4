// Prompt logprobs through the engine on the default model: each scored prompt row equals the
// raw log-softmax the sampler reports for a request that ends at that position (the logits are
// batch- and chunk-invariant), whatever the chunking, with a prefix-cache hit available, with
// n > 1 and under preemption; bad values are refused.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/engine/engine_test_util.h"

namespace llmserve {
namespace {

using testing::make_engine;
using testing::small_options;

struct Scored {
  std::vector<TokenLogprob> prompt;  // positions 1..
  std::vector<int32_t> tokens;
  int32_t messages_with_prompt = 0;
  FinishReason finish = FinishReason::kNone;
};

Scored read_all(RequestStream& s) {
  Scored out;
  while (auto o = s.next(std::chrono::seconds(120))) {
    if (!o->prompt_logprobs.empty()) {
      ++out.messages_with_prompt;
      EXPECT_EQ(o->index, 0);
      out.prompt = o->prompt_logprobs;
    }
    if (o->index == 0)
      out.tokens.insert(out.tokens.end(), o->token_ids.begin(), o->token_ids.end());
    if (o->finish != FinishReason::kNone && o->index == 0) out.finish = o->finish;
  }
  return out;
}

GenerateRequest scoring_request(const std::vector<int32_t>& prompt, int32_t max_tokens,
                                int32_t top) {
  GenerateRequest r = testing::make_request(prompt, max_tokens);
  r.params.prompt_logprobs = top;
  return r;
}

Scored score(Engine& e, GenerateRequest r) {
  auto s = e.submit(std::move(r));
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? read_all(**s) : Scored{};
}

std::vector<int32_t> test_prompt(const Tokenizer& tok) {
  return tok.encode(
      "The lighthouse keeper climbed the narrow stairs every evening, lit the great lamp, and "
      "watched the ships pass the rocks until morning came over the grey sea.");
}

TEST(PromptLogprobs, ScoredRowsEqualTheSamplersLogprobsAtEveryPosition) {
  LLMSERVE_REQUIRE_MODEL();
  EngineOptions o = small_options();
  o.max_scored_tokens_per_step = 8;  // the prompt is scored over several chunks
  auto engine = make_engine(o);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = test_prompt(engine->tokenizer());
  ASSERT_GT(prompt.size(), 20u);
  const Scored s = score(*engine, scoring_request(prompt, 2, 4));
  ASSERT_EQ(s.prompt.size(), prompt.size() - 1);
  EXPECT_EQ(s.messages_with_prompt, 1);
  EXPECT_EQ(s.tokens.size(), 2u);
  for (size_t k = 1; k < prompt.size(); k += 5) {
    // The oracle: a request ending at position k - 1 samples from that position's logits.
    GenerateRequest r = testing::make_request({prompt.begin(), prompt.begin() + k}, 1);
    r.params.logprobs = 4;
    const auto c = testing::run_alone(*engine, std::move(r));
    ASSERT_EQ(c.samples[0].logprobs.size(), 1u);
    const TokenLogprob& want = c.samples[0].logprobs[0];
    const TokenLogprob& got = s.prompt[k - 1];
    EXPECT_EQ(got.token_id, prompt[k]);
    ASSERT_EQ(got.top.size(), want.top.size()) << k;
    for (size_t j = 0; j < want.top.size(); ++j) {
      EXPECT_EQ(got.top[j].token_id, want.top[j].token_id) << k;
      EXPECT_NEAR(got.top[j].logprob, want.top[j].logprob, 1e-5) << k;
    }
    // The prompt token's own logprob and rank, from the same distribution.
    float lp = -INFINITY;
    int32_t rank = 1;
    for (const auto& t : want.top) {
      if (t.token_id == prompt[k]) lp = t.logprob;
    }
    for (const auto& t : want.top) rank += t.logprob > got.logprob;
    if (std::isfinite(lp)) {
      EXPECT_NEAR(got.logprob, lp, 1e-5) << k;
      EXPECT_EQ(got.rank, rank) << k;
    } else {
      EXPECT_LE(got.logprob, want.top.back().logprob + 1e-6) << k;
      EXPECT_GT(got.rank, static_cast<int32_t>(want.top.size())) << k;
    }
  }
  testing::expect_no_leak(*engine);
}

TEST(PromptLogprobs, ChunkingPrefixCacheAndNDoNotChangeTheScores) {
  LLMSERVE_REQUIRE_MODEL();
  EngineOptions one = small_options();
  one.max_num_batched_tokens = 256;
  one.max_scored_tokens_per_step = 256;
  auto whole = make_engine(one);
  ASSERT_NE(whole, nullptr);
  const std::vector<int32_t> prompt = test_prompt(whole->tokenizer());
  const Scored ref = score(*whole, scoring_request(prompt, 0, 3));
  ASSERT_EQ(ref.prompt.size(), prompt.size() - 1);
  EXPECT_EQ(ref.finish, FinishReason::kLength);
  EXPECT_TRUE(ref.tokens.empty());
  whole.reset();

  EngineOptions small = small_options();
  small.max_scored_tokens_per_step = 5;
  auto engine = make_engine(small);
  ASSERT_NE(engine, nullptr);
  (void)testing::run_alone(*engine, testing::make_request(prompt, 1));  // fills the prefix cache
  GenerateRequest r = scoring_request(prompt, 3, 3);
  r.params.n = 3;
  r.params.temperature = 0.8f;
  r.params.seed = 7;
  const Scored s = score(*engine, std::move(r));
  ASSERT_EQ(s.prompt.size(), ref.prompt.size());
  EXPECT_EQ(s.messages_with_prompt, 1);  // sample 0 only
  for (size_t k = 0; k < ref.prompt.size(); ++k) {
    EXPECT_EQ(s.prompt[k].token_id, ref.prompt[k].token_id);
    EXPECT_NEAR(s.prompt[k].logprob, ref.prompt[k].logprob, 1e-5) << k;
    EXPECT_EQ(s.prompt[k].rank, ref.prompt[k].rank) << k;
    ASSERT_EQ(s.prompt[k].top.size(), 3u);
    for (size_t j = 0; j < 3; ++j)
      EXPECT_EQ(s.prompt[k].top[j].token_id, ref.prompt[k].top[j].token_id);
  }
  testing::expect_no_leak(*engine);
}

TEST(PromptLogprobs, ScoresSurvivePreemption) {
  LLMSERVE_REQUIRE_MODEL();
  EngineOptions o = small_options();
  o.kv_cache_bytes = 30 * 16 * 23040ull;  // 30 blocks: four long requests preempt each other
  o.max_scored_tokens_per_step = 16;
  auto engine = make_engine(o);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = test_prompt(engine->tokenizer());
  const Scored ref = score(*engine, scoring_request(prompt, 0, 2));
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 4; ++i) {
    GenerateRequest r = scoring_request(prompt, 150, 2);
    r.params.ignore_eos = true;
    auto st = engine->submit(std::move(r));
    ASSERT_TRUE(st.is_ok()) << st.status().to_string();
    streams.push_back(*st);
  }
  for (auto& st : streams) {
    const Scored s = read_all(*st);
    ASSERT_EQ(s.prompt.size(), ref.prompt.size());
    for (size_t k = 0; k < ref.prompt.size(); ++k) {
      EXPECT_NEAR(s.prompt[k].logprob, ref.prompt[k].logprob, 1e-5) << k;
    }
  }
  EXPECT_GT(engine->stats().preemptions, 0u);
  testing::expect_no_leak(*engine);
}

TEST(PromptLogprobs, OutOfRangeIsRefusedByName) {
  LLMSERVE_REQUIRE_MODEL();
  auto engine = make_engine(small_options());
  ASSERT_NE(engine, nullptr);
  GenerateRequest r = scoring_request({1, 2, 3}, 1, 21);
  auto s = engine->submit(std::move(r));
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("prompt_logprobs"), std::string::npos);
}

}  // namespace
}  // namespace llmserve
