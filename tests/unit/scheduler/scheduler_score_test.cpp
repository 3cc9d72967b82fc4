// Prompt scoring (Request::score_prompt, for prompt logprobs): chunks capped by
// max_scored_tokens_per_step, scored rows counted exactly once per prompt token, no prefix-cache
// hit, and other requests unaffected.
#include <gtest/gtest.h>

#include "engine/scheduler/scheduler.h"
#include "tests/unit/scheduler/scheduler_harness.h"

namespace llmserve {
namespace {

using testing::expected_outputs;
using testing::Harness;
using testing::make_request;
using testing::tokens;

SchedulerConfig score_config(int32_t budget, int32_t max_scored, bool chunked = true) {
  SchedulerConfig c;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = 8;
  c.max_model_len = 4096;
  c.enable_chunked_prefill = chunked;
  c.max_scored_tokens_per_step = max_scored;
  return c;
}

Request scoring(uint64_t id, std::vector<int32_t> prompt, int32_t max_tokens) {
  Request r = make_request(id, std::move(prompt), max_tokens);
  r.score_prompt = true;
  return r;
}

TEST(SchedulerScore, ChunksAreCappedAndEveryPromptTokenAfterTheFirstIsScoredOnce) {
  for (const bool chunked : {true, false}) {
    Harness h(score_config(4096, 16, chunked), 100);
    h.add(scoring(1, tokens(40, 3), 2));
    std::vector<int32_t> news, scored;
    std::vector<bool> samples;
    while (h.sched->has_unfinished_requests()) {
      const auto& out = h.step();
      ASSERT_EQ(out.scheduled.size(), 1u);
      news.push_back(out.scheduled[0].num_new_tokens);
      scored.push_back(out.scheduled[0].num_scored);
      samples.push_back(out.scheduled[0].sample);
    }
    // 39 tokens to score in chunks of 16: 16 + 16 + 7, the last chunk also sampling.
    EXPECT_EQ(news, (std::vector<int32_t>{16, 16, 8, 1})) << "chunked=" << chunked;
    EXPECT_EQ(scored, (std::vector<int32_t>{16, 16, 7, 0}));
    EXPECT_EQ(samples, (std::vector<bool>{false, false, true, true}));
    EXPECT_EQ(h.tracked[1].outputs, expected_outputs(tokens(40, 3), 2));
    h.expect_all_blocks_free();
  }
}

TEST(SchedulerScore, ScoreOnlyRequestComputesThePromptAndSamplesNothing) {
  Harness h(score_config(64, 64), 100);
  h.add(scoring(1, tokens(30, 4), 0));
  const auto& out = h.step();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].num_new_tokens, 30);
  EXPECT_EQ(out.scheduled[0].num_scored, 29);
  EXPECT_FALSE(out.scheduled[0].sample);
  h.run_to_completion();
  EXPECT_EQ(h.tracked[1].reason, FinishReason::kLength);
  h.expect_all_blocks_free();
}

TEST(SchedulerScore, ScoringSkipsThePrefixCacheWhileOthersStillHitIt) {
  Harness h(score_config(512, 256), 100);
  const auto prompt = tokens(100, 9);
  h.add(make_request(1, prompt, 1));
  h.run_to_completion();
  h.add(scoring(2, prompt, 1));
  h.add(make_request(3, prompt, 1));
  const auto& out = h.step();
  ASSERT_EQ(out.scheduled.size(), 2u);
  EXPECT_EQ(out.scheduled[0].request_id, 2u);
  EXPECT_EQ(out.scheduled[0].num_computed_tokens, 0);  // every row computed to be scored
  EXPECT_EQ(out.scheduled[0].num_scored, 99);
  EXPECT_EQ(out.scheduled[1].request_id, 3u);
  EXPECT_EQ(out.scheduled[1].num_computed_tokens, 96);  // 6 full cached blocks
  EXPECT_EQ(out.scheduled[1].num_scored, 0);
  h.run_to_completion();
  EXPECT_EQ(h.tracked[2].outputs, expected_outputs(prompt, 1));
  EXPECT_EQ(h.tracked[3].outputs, expected_outputs(prompt, 1));
  h.expect_all_blocks_free();
}

TEST(SchedulerScore, StepsShareTheScoringRoomAndOthersAreNotHeldBack) {
  Harness h(score_config(512, 32), 100);
  h.add(scoring(1, tokens(50, 1), 1));
  h.add(scoring(2, tokens(50, 2), 1));
  h.add(make_request(3, tokens(50, 3), 1));
  const auto& out = h.step();
  int32_t scored = 0;
  bool plain_ran = false;
  for (const auto& s : out.scheduled) {
    scored += s.num_scored;
    if (s.request_id == 3) plain_ran = s.num_new_tokens == 50;
  }
  EXPECT_LE(scored, 32);
  EXPECT_TRUE(plain_ran);  // a plain prefill behind a scoring one that waits still runs
  h.run_to_completion();
  for (uint64_t id : {1u, 2u, 3u}) {
    EXPECT_EQ(h.tracked[id].outputs, expected_outputs(tokens(50, static_cast<int32_t>(id)), 1));
  }
  h.expect_all_blocks_free();
}

}  // namespace
}  // namespace llmserve
