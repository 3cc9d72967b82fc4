#include "engine/sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace llmserve {
namespace {

TEST(SamplingParams, DefaultsAreValid) {
  EXPECT_TRUE(SamplingParams{}.validate(1000).is_ok());
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_k = -1;
  p.top_p = 1.0f;
  p.min_p = 1.0f;
  p.logit_bias = {{0, -100.0f}, {999, 100.0f}};
  p.stop = {"a", "b"};
  p.stop_token_ids = {999};
  p.logprobs = 20;
  p.max_tokens = 0;
  p.n = 4;
  EXPECT_TRUE(p.validate(1000).is_ok());
}

struct Case {
  const char* field;
  std::function<void(SamplingParams&)> set;
};

TEST(SamplingParams, ErrorsNameTheField) {
  const std::vector<Case> cases = {
      {"temperature", [](SamplingParams& p) { p.temperature = -0.1f; }},
      {"temperature", [](SamplingParams& p) { p.temperature = 101.0f; }},
      {"temperature", [](SamplingParams& p) { p.temperature = NAN; }},
      {"top_k", [](SamplingParams& p) { p.top_k = -2; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 0.0f; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 1.01f; }},
      {"min_p", [](SamplingParams& p) { p.min_p = -0.5f; }},
      {"min_p", [](SamplingParams& p) { p.min_p = 1.5f; }},
      {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = 0.0f; }},
      {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = 10.5f; }},
      {"presence_penalty", [](SamplingParams& p) { p.presence_penalty = 2.5f; }},
      {"frequency_penalty", [](SamplingParams& p) { p.frequency_penalty = -2.5f; }},
      {"logit_bias",
       [](SamplingParams& p) {
         p.logit_bias = {{1000, 1.0f}};
       }},
      {"logit_bias",
       [](SamplingParams& p) {
         p.logit_bias = {{-1, 1.0f}};
       }},
      {"logit_bias",
       [](SamplingParams& p) {
         p.logit_bias = {{5, 101.0f}};
       }},
      {"max_tokens", [](SamplingParams& p) { p.max_tokens = -1; }},
      {"min_tokens", [](SamplingParams& p) { p.min_tokens = -1; }},
      {"min_tokens", [](SamplingParams& p) { p.min_tokens = 17; }},
      {"stop", [](SamplingParams& p) { p.stop = std::vector<std::string>(17, "x"); }},
      {"stop",
       [](SamplingParams& p) {
         p.stop = {"ok", ""};
       }},
      {"stop_token_ids",
       [](SamplingParams& p) {
         p.stop_token_ids = {5, 1000};
       }},
      {"logprobs", [](SamplingParams& p) { p.logprobs = 21; }},
      {"logprobs", [](SamplingParams& p) { p.logprobs = -2; }},
      {"prompt_logprobs", [](SamplingParams& p) { p.prompt_logprobs = 50; }},
      {"n", [](SamplingParams& p) { p.n = 0; }},
      {"n", [](SamplingParams& p) { p.n = 129; }},
  };
  for (const Case& c : cases) {
    SamplingParams p;
    c.set(p);
    Status st = p.validate(1000, 20);
    ASSERT_FALSE(st.is_ok()) << c.field;
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message().rfind(std::string(c.field) + " ", 0), 0u) << st.message();
  }
}

}  // namespace
}  // namespace llmserve
