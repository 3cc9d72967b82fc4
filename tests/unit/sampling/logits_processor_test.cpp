#include "engine/runner/logits_processor.h"

#include <gtest/gtest.h>

#include <cmath>

namespace llmserve {
namespace {

TEST(LogitsProcessor, PenaltiesMatchHandComputedExample) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  const std::vector<int32_t> prompt = {0, 1, 1};
  SamplingState st(p, prompt, 1);
  for (int32_t t : {2, 2, 3, 0}) st.append(t);
  std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, 4.0f};
  apply_logits_processors(logits, p, st, {});
  // token 0: prompt+output: 2/2 = 1, then presence 0.5 + freq 0.25*1 -> 0.25
  EXPECT_FLOAT_EQ(logits[0], 0.25f);
  EXPECT_FLOAT_EQ(logits[1], -2.0f);                // prompt only: -1 * 2
  EXPECT_FLOAT_EQ(logits[2], 0.25f - 0.5f - 0.5f);  // 0.5/2, presence, 2 * 0.25
  EXPECT_FLOAT_EQ(logits[3], 1.5f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(logits[4], 4.0f);  // unseen
}

TEST(LogitsProcessor, BiasThenMinTokensMask) {
  SamplingParams p;
  p.logit_bias = {{1, 3.0f}, {7, 1.0f}, {-2, 1.0f}};
  p.min_tokens = 1;
  p.stop_token_ids = {2};
  SamplingState st(p, {}, 1);
  std::vector<float> logits = {0.0f, 0.0f, 10.0f, 0.0f};
  const std::vector<int32_t> eos = {3};
  apply_logits_processors(logits, p, st, eos);
  EXPECT_FLOAT_EQ(logits[1], 3.0f);
  EXPECT_TRUE(std::isinf(logits[2]) && logits[2] < 0);
  EXPECT_TRUE(std::isinf(logits[3]) && logits[3] < 0);
  st.append(1);
  std::vector<float> again = {0.0f, 0.0f, 10.0f, 0.0f};
  apply_logits_processors(again, p, st, eos);
  EXPECT_FLOAT_EQ(again[2], 10.0f);
  EXPECT_FLOAT_EQ(again[3], 0.0f);
}

TEST(LogitsProcessor, NoPenaltyLeavesRowUntouched) {
  SamplingParams p;
  SamplingState st(p, std::vector<int32_t>{0, 1}, 1);
  st.append(1);
  std::vector<float> logits = {1.0f, -1.0f};
  apply_logits_processors(logits, p, st, {});
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -1.0f}));
  EXPECT_TRUE(st.output_counts().empty());
}

}  // namespace
}  // namespace llmserve
