#include "server/http/openai_response.h"

#include <gtest/gtest.h>

#include "tests/unit/server/fake_tokenizer.h"

namespace llmserve {
namespace {

using nlohmann::json;

StepOutput out(int32_t index, const std::string& text, FinishReason f = FinishReason::kNone,
               int32_t completion = 1) {
  StepOutput o;
  o.index = index;
  o.text = text;
  o.token_ids = {static_cast<int32_t>(text.empty() ? 0 : text[0])};
  o.finish = f;
  o.usage.prompt_tokens = 5;
  o.usage.completion_tokens = completion;
  return o;
}

ResponseContext ctx(ApiKind kind) {
  ResponseContext c;
  c.kind = kind;
  c.id = "id-1";
  c.model = "m";
  c.created = 123;
  return c;
}

TEST(OpenAiResponse, ChatChunksRoleThenContentThenFinish) {
  ResponseBuilder b(ctx(ApiKind::kChat));
  auto first = b.chunks_for(0, out(0, "Hel"));
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(first[0]["id"], "id-1");
  EXPECT_EQ(first[0]["created"], 123);
  EXPECT_EQ(first[0]["model"], "m");
  EXPECT_EQ(first[0]["choices"][0]["delta"], (json{{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first[0]["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(first[1]["choices"][0]["delta"], (json{{"content", "Hel"}}));
  EXPECT_FALSE(first[0].contains("usage"));
  auto last = b.chunks_for(0, out(0, "lo", FinishReason::kStop, 2));
  ASSERT_EQ(last.size(), 2u);
  EXPECT_EQ(last[0]["choices"][0]["delta"]["content"], "lo");
  EXPECT_EQ(last[1]["choices"][0]["delta"], json::object());
  EXPECT_EQ(last[1]["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(b.usage_chunk().has_value());
}

TEST(OpenAiResponse, CompletionChunksAndUsageChunk) {
  auto c = ctx(ApiKind::kCompletion);
  c.include_usage = true;
  c.n = 2;
  ResponseBuilder b(c);
  auto a = b.chunks_for(0, out(1, "x"));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["object"], "text_completion");
  EXPECT_EQ(a[0]["choices"][0]["index"], 1);
  EXPECT_EQ(a[0]["choices"][0]["text"], "x");
  EXPECT_TRUE(a[0]["choices"][0]["logprobs"].is_null());
  EXPECT_TRUE(a[0]["usage"].is_null());
  EXPECT_TRUE(b.chunks_for(0, out(0, "")).empty());  // nothing to say
  auto f = b.chunks_for(0, out(0, "", FinishReason::kLength, 4));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]["choices"][0]["finish_reason"], "length");
  auto u = b.usage_chunk();
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ((*u)["choices"], json::array());
  EXPECT_EQ((*u)["usage"],
            (json{{"prompt_tokens", 5}, {"completion_tokens", 4}, {"total_tokens", 9}}));
}

TEST(OpenAiResponse, ChoiceIndexIsPromptTimesNPlusSample) {
  auto c = ctx(ApiKind::kCompletion);
  c.n = 2;
  c.num_prompts = 2;
  ResponseBuilder b(c);
  b.accumulate(1, out(1, "d", FinishReason::kStop));
  b.accumulate(0, out(0, "a", FinishReason::kStop));
  const json r = b.final_response();
  ASSERT_EQ(r["choices"].size(), 4u);
  EXPECT_EQ(r["choices"][3]["text"], "d");
  EXPECT_EQ(r["choices"][0]["text"], "a");
  EXPECT_EQ(r["usage"]["prompt_tokens"], 10);  // summed over prompts
}

TEST(OpenAiResponse, FinalChatBodyWithLogprobs) {
  testing::FakeTokenizer tok;
  auto c = ctx(ApiKind::kChat);
  c.logprobs = 1;
  c.tokenizer = &tok;
  ResponseBuilder b(c);
  StepOutput o = out(0, "A", FinishReason::kStop);
  o.logprobs.push_back({'A', -0.25f, {{'B', -1.5f}}});
  b.accumulate(0, o);
  const json r = b.final_response();
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"],
            (json{{"role", "assistant"}, {"content", "A"}, {"refusal", nullptr}}));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  const json& lp = r["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(lp["token"], "A");
  EXPECT_FLOAT_EQ(lp["logprob"].get<float>(), -0.25f);
  EXPECT_EQ(lp["bytes"], json::array({65}));
  EXPECT_EQ(lp["top_logprobs"][0]["token"], "B");
}

TEST(OpenAiResponse, CompletionLogprobsHaveOffsets) {
  testing::FakeTokenizer tok;
  auto c = ctx(ApiKind::kCompletion);
  c.logprobs = 0;
  c.tokenizer = &tok;
  ResponseBuilder b(c);
  StepOutput o = out(0, "ab", FinishReason::kStop);
  o.logprobs = {{'a', -1.0f, {}}, {'b', -2.0f, {}}};
  b.accumulate(0, o);
  const json lp = b.final_response()["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json::array({"a", "b"}));
  EXPECT_EQ(lp["token_logprobs"], json::array({-1.0, -2.0}));
  EXPECT_EQ(lp["text_offset"], json::array({0, 1}));
  EXPECT_EQ(lp["top_logprobs"].size(), 2u);
}

TEST(OpenAiResponse, ErrorOutputIsRemembered) {
  ResponseBuilder b(ctx(ApiKind::kCompletion));
  StepOutput o = out(0, "", FinishReason::kError);
  o.error = internal_error("boom");
  b.accumulate(0, o);
  EXPECT_EQ(b.error().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace llmserve
