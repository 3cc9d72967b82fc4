// max_tokens below 1 (issue 41 item 10): a negative value is told what is allowed (>= 1, or 0 to
// score the prompt only), not a range that starts at 0 which then refuses 0; the same words on
// /v1/completions, /v1/chat/completions (under either name) and gRPC; 0 passes where it scores
// the prompt.
#include <gtest/gtest.h>

#include "server/grpc/proto_request.h"
#include "server/http/chat_request.h"
#include "server/http/completion_request.h"
#include "server/http/http_error.h"
#include "tests/unit/server/fake_tokenizer.h"

namespace llmserve {
namespace {

RequestLimits max_tokens_limits() {
  RequestLimits l;
  l.vocab_size = testing::FakeTokenizer::kVocab;
  l.max_model_len = 64;
  return l;
}

Status completion(const std::string& fields) {
  static testing::FakeTokenizer tok;
  return parse_completion_request(R"({"prompt":"x",)" + fields + "}", tok, max_tokens_limits())
      .status();
}

Status chat(const std::string& fields) {
  static testing::FakeTokenizer tok;
  auto render = [](const nlohmann::json&, bool) -> Result<std::string> { return std::string("x"); };
  return parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],)" + fields + "}", tok,
                            ChatRenderer(render), max_tokens_limits())
      .status();
}

Status proto(int32_t max_tokens, bool prompt_logprobs = false) {
  static testing::FakeTokenizer tok;
  v1::GenerateRequest r;
  r.set_prompt("x");
  r.set_max_tokens(max_tokens);
  if (prompt_logprobs) r.set_prompt_logprobs(0);
  return parse_proto_request(r, tok, max_tokens_limits()).status();
}

// The message after "<field>: ".
std::string said(const Status& s) {
  const std::string field = param_from_message(s.message());
  return s.message().substr(field.size() + 2);
}

TEST(MaxTokens, BelowOneIsToldWhatIsAllowedTheSameEverywhere) {
  for (int v : {-1, 0}) {
    SCOPED_TRACE(v);
    const std::string n = std::to_string(v);
    const Status c = completion(R"("max_tokens":)" + n);
    const Status h = chat(R"("max_tokens":)" + n);
    const Status hc = chat(R"("max_completion_tokens":)" + n);
    const Status g = proto(v);
    for (const Status& s : {c, h, hc, g}) {
      ASSERT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
      // Not "must be in [0, ...]": 0 would then be refused too.
      EXPECT_EQ(s.message().find("[0,"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find(">= 1"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find("prompt_logprobs"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find("got " + n), std::string::npos) << s.message();
    }
    EXPECT_EQ(param_from_message(c.message()), "max_tokens");
    EXPECT_EQ(param_from_message(h.message()), "max_tokens");
    EXPECT_EQ(param_from_message(hc.message()), "max_completion_tokens");
    EXPECT_EQ(param_from_message(g.message()), "max_tokens");
    EXPECT_EQ(said(c), said(h));
    EXPECT_EQ(said(c), said(hc));
    EXPECT_EQ(said(c), said(g));
  }
}

TEST(MaxTokens, ZeroScoresThePrompt) {
  EXPECT_TRUE(completion(R"("max_tokens":0,"echo":true)").is_ok());
  EXPECT_TRUE(completion(R"("max_tokens":0,"prompt_logprobs":0)").is_ok());
  EXPECT_TRUE(chat(R"("max_tokens":0,"prompt_logprobs":0)").is_ok());
  EXPECT_TRUE(proto(0, /*prompt_logprobs=*/true).is_ok());
  EXPECT_FALSE(completion(R"("max_tokens":-1,"echo":true)").is_ok());
}

}  // namespace
}  // namespace llmserve
