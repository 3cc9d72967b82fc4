// Speculative decoding bookkeeping in the scheduler, with the harness's fake model as the
// verifier: whatever the drafts, every request's outputs equal those of decoding without them,
// rollback leaves exactly the last token uncomputed, and no block leaks.
#include <gtest/gtest.h>

#include <random>

#include "engine/scheduler/scheduler.h"
#include "tests/unit/scheduler/scheduler_harness.h"

namespace llmserve {
namespace {

using testing::expected_outputs;
using testing::fake_next_token;
using testing::Harness;
using testing::make_request;
using testing::tokens;

SchedulerConfig spec_config(int32_t budget, int32_t max_seqs, int32_t max_len = 4096) {
  SchedulerConfig c;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = max_seqs;
  c.max_model_len = max_len;
  return c;
}

// The next k tokens the fake model will produce: drafts that are always accepted.
std::vector<int32_t> oracle_drafts(const Request& r, int32_t k) {
  std::vector<int32_t> out = r.output_token_ids, d;
  for (int32_t i = 0; i < k; ++i) {
    d.push_back(fake_next_token(r.prompt_token_ids, out));
    out.push_back(d.back());
  }
  return d;
}

TEST(SchedulerSpec, CorrectDraftsAreAllAcceptedAndSaveSteps) {
  Harness h(spec_config(256, 4), 100);
  h.drafter = [](const Request& r) { return oracle_drafts(r, 4); };
  h.add(make_request(1, tokens(40, 1), 41));
  const int steps = h.run_to_completion();
  EXPECT_EQ(h.tracked[1].outputs, expected_outputs(tokens(40, 1), 41));
  // 1 prefill step (first token), then 40 tokens in checks of 4 drafts + 1: 8 steps.
  EXPECT_EQ(steps, 1 + 8);
  EXPECT_EQ(h.tracked[1].accepted_tokens, h.tracked[1].draft_tokens);
  EXPECT_EQ(h.tracked[1].draft_tokens, 32);  // the last check is cut to the 5 tokens left
  h.expect_all_blocks_free();
}

TEST(SchedulerSpec, WrongDraftsAreAllRejectedAndChangeNothing) {
  Harness h(spec_config(256, 4), 100);
  h.drafter = [](const Request& r) {
    std::vector<int32_t> d = oracle_drafts(r, 3);
    for (int32_t& t : d) t = 1000 + t;  // the fake model's tokens are < 1000
    return d;
  };
  h.add(make_request(1, tokens(33, 2), 30));
  const int steps = h.run_to_completion();
  EXPECT_EQ(h.tracked[1].outputs, expected_outputs(tokens(33, 2), 30));
  EXPECT_EQ(steps, 30);
  EXPECT_EQ(h.tracked[1].accepted_tokens, 0);
  EXPECT_GT(h.tracked[1].draft_tokens, 0);
  h.expect_all_blocks_free();
}

TEST(SchedulerSpec, MixedDraftsUnderPreemptionAndChunkedPrefillKeepOutputs) {
  // A tight cache (preemptions), a small budget (drafts cut, prompts chunked), and drafts whose
  // first few tokens are right and the rest wrong, at random.
  Harness h(spec_config(64, 6, 400), 40);
  std::mt19937 rng(7);
  h.drafter = [&rng](const Request& r) {
    std::vector<int32_t> d = oracle_drafts(r, 1 + static_cast<int32_t>(rng() % 6));
    const size_t good = rng() % (d.size() + 1);
    for (size_t i = good; i < d.size(); ++i) d[i] = 1000 + static_cast<int32_t>(rng() % 50);
    return d;
  };
  for (uint64_t id = 1; id <= 12; ++id) {
    h.add(make_request(id, tokens(20 + static_cast<int32_t>(id) * 9, static_cast<int32_t>(id)),
                       30 + static_cast<int32_t>(id) * 3));
  }
  h.run_to_completion();
  int32_t drafts = 0, accepted = 0;
  for (uint64_t id = 1; id <= 12; ++id) {
    const auto& t = h.tracked[id];
    EXPECT_EQ(t.reason, FinishReason::kLength) << id;
    EXPECT_EQ(t.outputs, expected_outputs(t.prompt, t.max_tokens)) << id;
    drafts += t.draft_tokens;
    accepted += t.accepted_tokens;
  }
  EXPECT_GT(h.sched->num_preemptions(), 0);
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafts);
  h.expect_all_blocks_free();
}

TEST(SchedulerSpec, DraftsAreCutToBudgetAndLengthLimits) {
  // Budget 8 with 3 decodes: each decode keeps its own token; the first gets what is left.
  Harness h(spec_config(8, 4, 64), 40);
  h.drafter = [](const Request& r) { return oracle_drafts(r, 10); };
  for (uint64_t id = 1; id <= 3; ++id) h.add(make_request(id, tokens(2, static_cast<int>(id)), 20));
  h.step();  // the three prompts (6 tokens) fit in one step
  const SchedulerOutput& out = h.step();
  ASSERT_EQ(out.scheduled.size(), 3u);
  EXPECT_EQ(out.scheduled[0].num_draft_tokens(), 8 - 3);
  EXPECT_EQ(out.scheduled[1].num_draft_tokens(), 0);
  EXPECT_EQ(out.scheduled[2].num_draft_tokens(), 0);
  EXPECT_EQ(out.stats.num_draft_tokens, 5);
  h.run_to_completion();
  for (uint64_t id = 1; id <= 3; ++id) {
    EXPECT_EQ(h.tracked[id].outputs, expected_outputs(tokens(2, static_cast<int>(id)), 20));
  }
  // max_model_len: a request near it drafts only what still fits.
  Harness m(spec_config(64, 4, 12), 40);
  m.drafter = [](const Request& r) { return oracle_drafts(r, 10); };
  m.add(make_request(9, tokens(5, 9), 100));
  m.run_to_completion();
  EXPECT_EQ(m.tracked[9].outputs, expected_outputs(tokens(5, 9), 7));
  EXPECT_EQ(m.tracked[9].reason, FinishReason::kLength);
}

TEST(SchedulerSpec, DraftsAreDroppedBeforeAnyoneIsPreempted) {
  // 3 usable blocks of 4 tokens: two requests of 5 tokens hold 2 + 1 blocks... the drafts of
  // the first would need a new block; they are dropped and nobody is preempted for them.
  Harness h(spec_config(64, 4, 64), 4, /*block_size=*/4);
  h.drafter = [](const Request& r) { return oracle_drafts(r, 4); };
  h.add(make_request(1, tokens(6, 1), 3));
  h.add(make_request(2, tokens(3, 2), 2));
  h.run_to_completion();
  EXPECT_EQ(h.sched->num_preemptions(), 0);
  EXPECT_EQ(h.tracked[1].outputs, expected_outputs(tokens(6, 1), 3));
  EXPECT_EQ(h.tracked[2].outputs, expected_outputs(tokens(3, 2), 2));
  h.expect_all_blocks_free();
}

TEST(SchedulerSpec, PrefixCacheHoldsAcceptedTokensOnly) {
  Harness h(spec_config(256, 4), 100);
  std::mt19937 rng(3);
  h.drafter = [&rng](const Request& r) {
    std::vector<int32_t> d = oracle_drafts(r, 4);
    if (rng() % 2) d.back() = 1001;  // half the checks reject the last draft
    return d;
  };
  h.add(make_request(1, tokens(30, 4), 40));
  h.run_to_completion();
  const std::vector<int32_t> out = h.tracked[1].outputs;
  ASSERT_EQ(out, expected_outputs(tokens(30, 4), 40));
  // A prompt of request 1's whole sequence finds its full blocks (70 tokens: 4 blocks of 16).
  std::vector<int32_t> prompt = tokens(30, 4);
  prompt.insert(prompt.end(), out.begin(), out.end());
  h.drafter = nullptr;
  h.add(make_request(2, prompt, 1));
  h.run_to_completion();
  EXPECT_EQ(h.tracked[2].cached_tokens, 64);
  // A prompt that differs from the accepted tokens where a rejected draft sat finds less.
  std::vector<int32_t> other = prompt;
  other[40] = 1001;
  h.add(make_request(3, other, 1));
  h.run_to_completion();
  EXPECT_EQ(h.tracked[3].cached_tokens, 32);
  h.expect_all_blocks_free();
}

TEST(SchedulerSpec, SetDraftTokensNeedsADecodingRequest) {
  Harness h(spec_config(256, 4), 100);
  const std::vector<int32_t> d = {1, 2};
  EXPECT_EQ(h.sched->set_draft_tokens(5, d).code(), StatusCode::kNotFound);
  h.add(make_request(5, tokens(10, 5), 4));
  EXPECT_EQ(h.sched->set_draft_tokens(5, d).code(), StatusCode::kFailedPrecondition);  // waiting
  h.step();
  EXPECT_TRUE(h.sched->set_draft_tokens(5, d).is_ok());
}

}  // namespace
}  // namespace llmserve
