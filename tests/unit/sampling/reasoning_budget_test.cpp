// The reasoning budget at token level: where the section opens and ends (in text, as the
// server's reasoning parser reads it), the count, the forced close (single- and multi-token),
// and in the sampler: the forced token wins over the logits at every temperature, on the host
// and through draft chains (host and parallel), and drafts past the forced point are rejected.
#include "engine/reasoning/reasoning_budget.h"

#include <gtest/gtest.h>

#include <random>

#include "engine/grammar/token_bitmask.h"
#include "engine/runner/draft_chains.h"
#include "engine/runner/sampler.h"
#include "engine/runner/sampling_pack.h"

namespace llmserve {
namespace {

using Phase = ReasoningBudgetState::Phase;

// A vocabulary whose bytes the test chooses: 0 "<think>", 1 "</think>", 2 "a", 3 " b", 4 "\n",
// 5 "</", 6 "think>", 7 "<", 8 "think", 9 ">", 10 "x</think>y", 11 " ", then plain letters.
constexpr int32_t kBudgetVocab = 64;
constexpr int32_t kOpen = 0, kClose = 1, kA = 2, kB = 3, kNl = 4, kLt2 = 5, kThinkGt = 6, kLt = 7,
                  kThink = 8, kGt = 9, kInline = 10, kSpace = 11;

std::shared_ptr<const TokenBytesTable> table() {
  auto t = std::make_shared<TokenBytesTable>(
      std::vector<std::string>{"<think>", "</think>", "a", " b", "\n", "</", "think>", "<", "think",
                               ">", "x</think>y", " "});
  for (int32_t i = static_cast<int32_t>(t->size()); i < kBudgetVocab; ++i) {
    t->push_back(std::string(1, static_cast<char>('A' + i % 26)));
  }
  return t;
}

ReasoningBudgetState state(int32_t budget, bool inside, std::vector<int32_t> close = {kClose}) {
  ReasoningBudget b;
  b.max_tokens = budget;
  b.starts_inside = inside;
  return ReasoningBudgetState(b, std::move(close), table());
}

TEST(ReasoningBudget, ForcesTheCloseAfterExactlyBudgetTokensInside) {
  ReasoningBudgetState s = state(3, /*inside=*/true);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(s.forced_token(), -1) << i;
    s.append(kA);
  }
  EXPECT_EQ(s.num_reasoning_tokens(), 3);
  EXPECT_EQ(s.phase(), Phase::kForcing);
  EXPECT_EQ(s.forced_token(), kClose);
  s.append(kClose);
  EXPECT_EQ(s.phase(), Phase::kDone);
  EXPECT_EQ(s.forced_token(), -1);
  for (int i = 0; i < 10; ++i) s.append(kA);  // the answer: free
  EXPECT_EQ(s.forced_token(), -1);
}

TEST(ReasoningBudget, ZeroForcesTheCloseFirst) {
  EXPECT_EQ(state(0, true).forced_token(), kClose);
  ReasoningBudgetState s = state(0, false);
  EXPECT_EQ(s.forced_token(), -1);  // not open yet
  s.append(kOpen);
  EXPECT_EQ(s.forced_token(), kClose);
}

TEST(ReasoningBudget, TheReplyOpensTheSectionAfterWhitespaceInAnyTokens) {
  ReasoningBudgetState s = state(2, false);
  s.append(kNl);
  s.append(kSpace);
  EXPECT_EQ(s.phase(), Phase::kMayOpen);
  s.append(kLt);
  s.append(kThink);
  EXPECT_EQ(s.phase(), Phase::kMayOpen);
  s.append(kGt);  // "<think>" complete: the marker's tokens are not counted
  EXPECT_EQ(s.phase(), Phase::kInside);
  EXPECT_EQ(s.num_reasoning_tokens(), 0);
  s.append(kA);
  EXPECT_EQ(s.forced_token(), -1);
  s.append(kB);
  EXPECT_EQ(s.forced_token(), kClose);
}

TEST(ReasoningBudget, AReplyWithoutTheSectionIsNeverConstrained) {
  ReasoningBudgetState s = state(0, false);
  s.append(kA);
  EXPECT_EQ(s.phase(), Phase::kDone);
  s.append(kOpen);  // a later <think> is content, as the parser reads it
  for (int i = 0; i < 5; ++i) s.append(kA);
  EXPECT_EQ(s.forced_token(), -1);
}

TEST(ReasoningBudget, AModelThatClosesWithinBudgetIsLeftAlone) {
  ReasoningBudgetState s = state(5, true);
  s.append(kA);
  s.append(kClose);
  EXPECT_EQ(s.phase(), Phase::kDone);
  ReasoningBudgetState split = state(5, true, {kLt2, kThinkGt});
  split.append(kA);
  split.append(kLt2);
  split.append(kThink);
  split.append(kGt);  // "</" "think" ">": the close in other tokens than the forced ones
  EXPECT_EQ(split.phase(), Phase::kDone);
  ReasoningBudgetState in_one = state(5, true);
  in_one.append(kInline);  // "x</think>y"
  EXPECT_EQ(in_one.phase(), Phase::kDone);
}

TEST(ReasoningBudget, AMultiTokenCloseIsForcedTokenByToken) {
  ReasoningBudgetState s = state(2, true, {kLt2, kThinkGt});
  s.append(kA);
  s.append(kB);
  EXPECT_EQ(s.forced_token(), kLt2);
  s.append(kLt2);
  EXPECT_EQ(s.forced_token(), kThinkGt);
  s.append(kThinkGt);
  EXPECT_EQ(s.phase(), Phase::kDone);
}

TEST(ReasoningBudget, ACloseTheModelBeganIsCompletedNotRepeated) {
  ReasoningBudgetState s = state(2, true, {kLt2, kThinkGt});
  s.append(kA);
  s.append(kLt2);  // the budget runs out right after the model wrote "</"
  EXPECT_EQ(s.forced_token(), kThinkGt);
  s.append(kThinkGt);
  EXPECT_EQ(s.phase(), Phase::kDone);
}

TEST(ReasoningBudget, CopiesMoveIndependently) {
  ReasoningBudgetState a = state(1, true);
  ReasoningBudgetState b = a;
  b.append(kA);
  EXPECT_EQ(a.forced_token(), -1);
  EXPECT_EQ(b.forced_token(), kClose);
}

TEST(ReasoningBudget, ValidateNamesBadValues) {
  ReasoningBudget b;
  EXPECT_TRUE(b.validate().is_ok());
  b.max_tokens = -2;
  EXPECT_FALSE(b.validate().is_ok());
  b.max_tokens = 3;
  b.close.clear();
  EXPECT_FALSE(b.validate().is_ok());
}

// --- in the sampler ---

std::vector<float> logits_favouring(int32_t token, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(kBudgetVocab);
  for (float& x : v) x = dist(gen);
  v[static_cast<size_t>(token)] = 20.0f;
  v[kClose] = -30.0f;  // the model would never close
  return v;
}

SamplingState budgeted(const SamplingParams& p, int32_t budget) {
  SamplingState st(p, std::vector<int32_t>{1, 2}, SamplingState::resolve_seed(p, 0, 7, 0));
  st.set_reasoning_budget(state(budget, true));
  return st;
}

TEST(ReasoningBudgetSampling, TheForcedCloseBeatsTheLogitsAtEveryTemperature) {
  for (float t : {0.0f, 0.7f, 1.5f}) {
    SamplingParams p;
    p.temperature = t;
    p.seed = 5;
    p.top_k = 5;
    p.logit_bias = {{kClose, -100.0f}};
    SamplingState st = budgeted(p, 4);
    Sampler sampler(kBudgetVocab, {});
    std::vector<int32_t> got;
    for (uint64_t i = 0; i < 8; ++i) {
      got.push_back(sampler.sample(logits_favouring(kA, i), p, st).token_id);
    }
    for (size_t i = 0; i < 4; ++i) EXPECT_NE(got[i], kClose) << t;
    EXPECT_EQ(got[4], kClose) << "temperature " << t;
    for (size_t i = 5; i < 8; ++i) EXPECT_NE(got[i], kClose) << t;
  }
}

TEST(ReasoningBudgetSampling, LogprobsOfTheForcedTokenAreTheModels) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.logprobs = 1;
  SamplingState st = budgeted(p, 0);
  Sampler sampler(kBudgetVocab, {});
  const SampleResult r = sampler.sample(logits_favouring(kA, 1), p, st);
  ASSERT_EQ(r.token_id, kClose);
  ASSERT_TRUE(r.logprob.has_value());
  EXPECT_LT(r.logprob->logprob, -40.0f);  // raw log-softmax: the model did not want it
  EXPECT_EQ(r.logprob->top[0].token_id, kA);
}

TEST(ReasoningBudgetSampling, DraftsPastTheForcedPointAreRejectedOnHostAndDevicePaths) {
  SamplingParams p;
  p.temperature = 0.0f;
  const size_t rows = 5;
  std::vector<float> logits;
  for (size_t r = 0; r < rows; ++r) {
    const auto row = logits_favouring(kA, r);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  // One at a time (no speculation): a a close a a.
  SamplingState ref = budgeted(p, 2);
  Sampler sampler(kBudgetVocab, {});
  std::vector<int32_t> want;
  for (size_t r = 0; r < rows; ++r) {
    want.push_back(
        sampler.sample(std::span(logits).subspan(r * kBudgetVocab, kBudgetVocab), p, ref).token_id);
  }
  ASSERT_EQ(want, (std::vector<int32_t>{kA, kA, kClose, kA, kA}));
  // Drafts that ignore the budget (a a a a): the third is rejected, the close sampled there.
  for (bool parallel : {false, true}) {
    SamplingState st = budgeted(p, 2);
    std::vector<SampleRow> chain;
    for (size_t j = 0; j < rows; ++j) {
      chain.push_back({nullptr, &p, &st, j + 1 < rows ? kA : -1});
    }
    std::vector<SampleResult> got;
    if (parallel) {
      ParallelChains chains;
      std::span<const SampleRow> prepared = chains.prepare(chain);
      for (size_t s = 0; s < prepared.size(); ++s) {
        got.push_back(sampler.sample(std::span(logits).subspan(s * kBudgetVocab, kBudgetVocab),
                                     *prepared[s].params, *prepared[s].state));
      }
      chains.finish(got);
    } else {
      got = sample_chains(sampler, logits, chain);
    }
    std::vector<int32_t> ids;
    for (const SampleResult& r : got) ids.push_back(r.token_id);
    EXPECT_EQ(ids, (std::vector<int32_t>{kA, kA, kClose, -1, -1})) << parallel;
    EXPECT_EQ(st.num_generated(), 3);
    EXPECT_EQ(st.reasoning_budget()->phase(), Phase::kDone) << parallel;
  }
}

TEST(ReasoningBudgetSampling, TheDevicePackCarriesAOneTokenMask) {
  SamplingParams p;
  p.temperature = 0.0f;
  SamplingState free_state = budgeted(p, 3);
  SamplingState forced_state = budgeted(p, 0);
  const std::vector<SampleRow> rows = {{nullptr, &p, &free_state}, {nullptr, &p, &forced_state}};
  SamplingPack pack;
  SamplingPackLimits limits;
  limits.max_rows = 8;
  limits.max_sparse_entries = 64;
  ASSERT_TRUE(pack_sampling_rows(rows, {}, kBudgetVocab, limits, pack).is_ok());
  EXPECT_EQ(pack.rows[0].grammar_mask, -1);
  ASSERT_EQ(pack.num_grammar_rows, 1);
  const std::span<const uint32_t> mask(pack.grammar_masks.data(),
                                       static_cast<size_t>(token_bitmask_words(kBudgetVocab)));
  for (int32_t id = 0; id < kBudgetVocab; ++id)
    EXPECT_EQ(token_allowed(mask, id), id == kClose) << id;
}

}  // namespace
}  // namespace llmserve
