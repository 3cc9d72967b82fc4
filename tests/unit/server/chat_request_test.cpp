#include "server/http/chat_request.h"

#include <gtest/gtest.h>

#include "tests/unit/server/chatml_renderer.h"
#include "tests/unit/server/fake_tokenizer.h"

namespace llmserve {
namespace {

using testing::chatml;

RequestLimits limits() {
  RequestLimits l;
  l.vocab_size = testing::FakeTokenizer::kVocab;
  l.max_model_len = 128;
  l.model_name = "fake-model";
  return l;
}

Result<GenerationRequest> parse(const std::string& body, ChatRenderer r = chatml) {
  static testing::FakeTokenizer tok;
  return parse_chat_request(body, tok, r, limits());
}

TEST(ChatRequest, RendersAndTokenizesWithSpecialTokens) {
  auto r = parse(R"({"model":"fake-model","messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->prompt_texts[0], "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(r->prompt_token_ids[0].front(), testing::FakeTokenizer::kImStart);
  // Default max_tokens: the room left in the context.
  EXPECT_EQ(r->params.max_tokens, 128 - static_cast<int32_t>(r->prompt_token_ids[0].size()));
  EXPECT_FALSE(r->logprobs.has_value());
  EXPECT_EQ(r->params.logprobs, -1);
}

TEST(ChatRequest, ContentPartsAndAssistantNullContent) {
  auto r = parse(R"({"messages":[{"role":"system","content":[{"type":"text","text":"a"},
    {"type":"text","text":"b"}]},{"role":"assistant","content":null},
    {"role":"user","content":"q"}],"add_generation_prompt":false})");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->prompt_texts[0],
            "<|im_start|>system\nab<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n"
            "<|im_start|>user\nq<|im_end|>\n");
}

TEST(ChatRequest, LogprobsAndTopLogprobs) {
  auto r =
      parse(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":3})");
  ASSERT_TRUE(r.is_ok());
  ASSERT_TRUE(r->logprobs.has_value());
  EXPECT_EQ(*r->logprobs, 3);
  EXPECT_EQ(r->params.logprobs, 3);
  auto bad = parse(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":3})");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message().rfind("top_logprobs: ", 0), 0u);
}

TEST(ChatRequest, NoTemplateIsRejected) {
  auto r = parse(R"({"messages":[{"role":"user","content":"x"}]})", ChatRenderer());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(ChatRequest, TemplateErrorsPropagate) {
  auto r = parse(R"({"messages":[{"role":"user","content":"x"}]})",
                 [](const nlohmann::json&, bool) -> Result<std::string> {
                   return invalid_argument("messages: template raised 'roles must alternate'");
                 });
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("alternate"), std::string::npos);
}

}  // namespace
}  // namespace llmserve
