#include "server/http/completion_request.h"

#include <gtest/gtest.h>

#include "tests/unit/server/fake_tokenizer.h"

namespace llmserve {
namespace {

RequestLimits limits() {
  RequestLimits l;
  l.vocab_size = testing::FakeTokenizer::kVocab;
  l.max_model_len = 64;
  l.model_name = "fake-model";
  return l;
}

Result<GenerationRequest> parse(const std::string& body) {
  static testing::FakeTokenizer tok;
  return parse_completion_request(body, tok, limits());
}

TEST(CompletionRequest, StringPromptAndDefaults) {
  auto r = parse(R"({"model":"fake-model","prompt":"abc"})");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->prompt_token_ids.size(), 1u);
  EXPECT_EQ(r->prompt_token_ids[0], (std::vector<int32_t>{'a', 'b', 'c'}));
  EXPECT_EQ(r->params.max_tokens, 16);
  EXPECT_FALSE(r->max_tokens_given);
  EXPECT_FALSE(r->stream);
  EXPECT_FALSE(r->logprobs.has_value());
  EXPECT_EQ(r->params.logprobs, -1);
}

TEST(CompletionRequest, PromptForms) {
  auto a = parse(R"({"prompt":["ab","c"]})");
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->prompt_token_ids.size(), 2u);
  auto b = parse(R"({"prompt":[1,2,3]})");
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->prompt_token_ids, (std::vector<std::vector<int32_t>>{{1, 2, 3}}));
  auto c = parse(R"({"prompt":[[1],[2,3]]})");
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->prompt_token_ids, (std::vector<std::vector<int32_t>>{{1}, {2, 3}}));
}

TEST(CompletionRequest, EverySamplingField) {
  auto r = parse(R"({"prompt":"x","max_tokens":10,"temperature":0.5,"top_p":0.9,"top_k":40,
    "min_p":0.1,"presence_penalty":0.5,"frequency_penalty":-0.5,"repetition_penalty":1.1,
    "logit_bias":{"5":-100,"7":2.5},"seed":-1,"stop":["\n","END"],"stop_token_ids":[258],
    "ignore_eos":true,"min_tokens":2,"n":3,"logprobs":4,"user":"u","priority":-2,
    "timeout":1.5,"stream":true,"stream_options":{"include_usage":true},
    "skip_special_tokens":false,"include_stop_str_in_output":true,"echo":false,"suffix":""})");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const SamplingParams& p = r->params;
  EXPECT_EQ(p.max_tokens, 10);
  EXPECT_FLOAT_EQ(p.temperature, 0.5f);
  EXPECT_FLOAT_EQ(p.top_p, 0.9f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.min_p, 0.1f);
  EXPECT_FLOAT_EQ(p.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(p.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.1f);
  EXPECT_EQ(p.logit_bias.size(), 2u);
  EXPECT_FLOAT_EQ(p.logit_bias.at(5), -100.0f);
  EXPECT_EQ(p.seed, std::optional<uint64_t>(~0ull));
  EXPECT_EQ(p.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_EQ(p.stop_token_ids, (std::vector<int32_t>{258}));
  EXPECT_TRUE(p.ignore_eos);
  EXPECT_EQ(p.min_tokens, 2);
  EXPECT_EQ(p.n, 3);
  EXPECT_EQ(p.logprobs, 4);
  EXPECT_FALSE(p.skip_special_tokens);
  EXPECT_TRUE(p.include_stop_str_in_output);
  EXPECT_EQ(r->priority, -2);
  EXPECT_EQ(r->timeout_seconds, std::optional<double>(1.5));
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_EQ(r->user, "u");
}

TEST(CompletionRequest, MaxCompletionTokensAndStopString) {
  auto r = parse(R"({"prompt":"x","max_completion_tokens":7,"stop":"z"})");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->params.max_tokens, 7);
  EXPECT_EQ(r->params.stop, (std::vector<std::string>{"z"}));
}

TEST(CompletionRequest, DefaultMaxTokensShrinksToTheRoomLeft) {
  auto r = parse(R"({"prompt":")" + std::string(60, 'a') + R"("})");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->params.max_tokens, 4);
}

TEST(CompletionRequest, ContextLengthExceededNamesBothNumbers) {
  auto r = parse(R"({"prompt":")" + std::string(60, 'a') + R"(","max_tokens":10})");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(r.status().message().find("64"), std::string::npos);
  EXPECT_NE(r.status().message().find("60"), std::string::npos);
}

TEST(CompletionRequest, NullFieldsAreAbsent) {
  auto r = parse(R"({"prompt":"x","temperature":null,"stop":null,"logprobs":null,"seed":null})");
  ASSERT_TRUE(r.is_ok());
  EXPECT_FLOAT_EQ(r->params.temperature, 1.0f);
  EXPECT_FALSE(r->params.seed.has_value());
}

TEST(CompletionRequest, ErrorsNameTheField) {
  auto r = parse(R"({"prompt":"x","temperature":3})");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message().rfind("temperature: ", 0), 0u) << r.status().message();
}

}  // namespace
}  // namespace llmserve
