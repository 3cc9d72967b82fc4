// Issue 41 item 7: prompt scoring is bounded by n x prompt tokens x (top-N + 1) with a 400 naming
// the field, and the non-streaming body is written as text in pieces (no JSON tree of millions of
// entries), each prompt's prompt_logprobs once per choice.
#include "server/common/scoring_limit.h"

#include <gtest/gtest.h>

#include "server/http/completion_request.h"
#include "server/http/openai_response.h"
#include "tests/unit/server/fake_tokenizer.h"

namespace llmserve {
namespace {

using nlohmann::json;

Result<GenerationRequest> parse(const std::string& body, int64_t max_entries) {
  static testing::FakeTokenizer tok;
  RequestLimits l;
  l.vocab_size = testing::FakeTokenizer::kVocab;
  l.max_model_len = 64;
  l.max_prompt_logprob_entries = max_entries;
  return parse_completion_request(body, tok, l);
}

std::string ids(int count) {
  std::string s = "[";
  for (int i = 0; i < count; ++i) s += (i ? "," : "") + std::to_string(1 + i % 20);
  return s + "]";
}

TEST(ScoringLimit, NTimesPromptTokensTimesTopPlusOne) {
  // 4 x 10 x (20 + 1) = 840 entries fit 1000; with n 5 it is 1050.
  const std::string base =
      R"({"prompt": )" + ids(10) + R"(, "max_tokens": 0, "prompt_logprobs": 20)";
  auto fits = parse(base + R"(, "n": 4})", 1000);
  ASSERT_TRUE(fits.is_ok()) << fits.status().message();
  EXPECT_EQ(prompt_logprob_entries(*fits), 840);
  auto over = parse(base + R"(, "n": 5})", 1000);
  ASSERT_FALSE(over.is_ok());
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = over.status().message();
  EXPECT_EQ(m.rfind("prompt_logprobs: ", 0), 0u) << m;
  EXPECT_NE(m.find("1050"), std::string::npos) << m;
  EXPECT_NE(m.find("server.max_prompt_logprob_entries"), std::string::npos) << m;
  // echo with logprobs scores the prompt too: the field named is `logprobs`.
  auto echo = parse(
      R"({"prompt": )" + ids(50) + R"(, "max_tokens": 0, "echo": true, "logprobs": 20})", 1000);
  ASSERT_FALSE(echo.is_ok());
  EXPECT_EQ(echo.status().message().rfind("logprobs: ", 0), 0u) << echo.status().message();
  // Without scoring there is nothing to bound.
  EXPECT_TRUE(parse(R"({"prompt": )" + ids(50) + R"(, "n": 16})", 1).is_ok());
}

TEST(ScoringLimit, BodyComesInPiecesWithEachChoicesPromptLogprobs) {
  ResponseContext c;
  c.id = "id-1";
  c.model = "m";
  c.n = 3;
  c.prompt_logprobs = 2;
  ResponseBuilder b(c);
  StepOutput first;
  first.index = 0;
  first.usage.prompt_tokens = 3;
  // Position 1: token 7 ranked 3rd after 5 and 6; position 2: token 5 ranked 1st.
  first.prompt_logprobs = {TokenLogprob{7, -2.5f, {{5, -0.25f}, {6, -1.5f}, {7, -2.5f}}, 3},
                           TokenLogprob{5, -0.5f, {{5, -0.5f}, {9, -1.0f}}, 1}};
  first.finish = FinishReason::kLength;
  b.accumulate(0, first);
  for (int32_t i = 1; i < 3; ++i) {
    StepOutput o;
    o.index = i;
    o.usage.prompt_tokens = 3;
    o.finish = FinishReason::kLength;
    b.accumulate(0, o);
  }
  std::vector<std::string> pieces;
  std::string piece;
  while (b.next_body_piece(&piece)) pieces.push_back(piece);
  EXPECT_EQ(pieces.size(), 3u + 2u);  // head, one per choice, tail
  std::string text;
  for (const auto& p : pieces) text += p;
  const json body = json::parse(text);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 3);
  ASSERT_EQ(body["choices"].size(), 3u);
  for (const json& choice : body["choices"]) {
    const json& pl = choice["prompt_logprobs"];
    ASSERT_EQ(pl.size(), 3u);
    EXPECT_TRUE(pl[0].is_null());
    EXPECT_EQ(pl[1].size(), 3u);  // the prompt token and the top 2
    EXPECT_EQ(pl[1]["7"]["rank"], 3);
    EXPECT_EQ(pl[1]["7"]["logprob"], -2.5);
    EXPECT_EQ(pl[1]["5"]["rank"], 1);
    EXPECT_EQ(pl[1]["6"]["rank"], 2);
    EXPECT_EQ(pl[2].size(), 2u);  // the prompt token is the top one: not twice
    EXPECT_EQ(pl[2]["5"]["rank"], 1);
    EXPECT_EQ(pl[2]["9"]["logprob"], -1.0);
    EXPECT_EQ(choice["finish_reason"], "length");
  }
}

}  // namespace
}  // namespace llmserve
