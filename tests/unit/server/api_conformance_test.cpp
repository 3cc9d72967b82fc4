// OpenAI / vLLM / llama.cpp API conformance of the HTTP readers and writers (issue 51, findings
// 15 and 17-21): integral floats as integers, continue_final_message, llama.cpp's grammar fields,
// Responses context errors, spec-required fields.
#include <gtest/gtest.h>

#include "server/common/continue_final_message.h"
#include "server/http/chat_request.h"
#include "server/http/completion_request.h"
#include "server/http/http_error.h"
#include "server/http/json_fields.h"
#include "server/http/openai_response.h"
#include "server/http/responses_output.h"
#include "server/http/responses_request.h"
#include "server/http/sse.h"
#include "tests/unit/server/chatml_renderer.h"
#include "tests/unit/server/fake_tokenizer.h"

namespace llmserve {
namespace {

using nlohmann::json;

using testing::chatml;

RequestLimits limits(int32_t max_model_len = 256) {
  RequestLimits l;
  l.vocab_size = testing::FakeTokenizer::kVocab;
  l.max_model_len = max_model_len;
  return l;
}

Result<GenerationRequest> chat(const std::string& body) {
  static testing::FakeTokenizer tok;
  return parse_chat_request(body, tok, chatml, limits());
}

Result<GenerationRequest> completion(const std::string& body) {
  static testing::FakeTokenizer tok;
  return parse_completion_request(body, tok, limits());
}

std::string param_of(const Status& s) {
  return http_error_from_status(s).param;
}

// --- 17: integer fields take integral floats ---

TEST(IntegerValue, IntegersAndIntegralFloats) {
  EXPECT_EQ(*json_fields::integer_value(json(8), "f"), 8);
  EXPECT_EQ(*json_fields::integer_value(json(8.0), "f"), 8);
  EXPECT_EQ(*json_fields::integer_value(json(-3.0), "f"), -3);
  EXPECT_EQ(*json_fields::integer_value(json(-0.0), "f"), 0);
  EXPECT_EQ(*json_fields::integer_value(json(1e15), "f"), 1000000000000000);
}

TEST(IntegerValue, FractionsStringsAndHugeValuesNameTheField) {
  for (const json& bad : {json(8.5), json("8"), json(true), json::array({1})}) {
    auto r = json_fields::integer_value(bad, "max_tokens");
    ASSERT_FALSE(r.is_ok()) << bad.dump();
    EXPECT_EQ(r.status().message().rfind("max_tokens: expected an integer", 0), 0u)
        << r.status().message();
  }
  auto u = json_fields::integer_value(json(18446744073709551615u), "seed");
  ASSERT_FALSE(u.is_ok());
  EXPECT_EQ(u.status().message().rfind("seed: must be a 64-bit integer", 0), 0u);
  // Floats past 2^53 stand for integers the client did not write: -2^63 - 1 parses as -2^63.
  for (const json& huge : {json(1e300), json(9223372036854775808.0),
                           json::parse("-9223372036854775809"), json(9007199254740994.0)}) {
    auto r = json_fields::integer_value(huge, "seed");
    ASSERT_FALSE(r.is_ok()) << huge.dump();
    EXPECT_EQ(r.status().message().rfind("seed: must be an integer written without", 0), 0u)
        << r.status().message();
  }
  EXPECT_EQ(*json_fields::integer_value(json(9007199254740992.0), "f"), 9007199254740992);
}

TEST(IntegerValue, EveryIntegerFieldOfChatAndCompletionsReadsIntegralFloats) {
  auto c = chat(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":8.0,"seed":7.0,
      "n":2.0,"logprobs":true,"top_logprobs":3.0,"top_k":5.0,"min_tokens":1.0,
      "priority":-2.0,"stop_token_ids":[3.0,4],"temperature":1})");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->params.max_tokens, 8);
  EXPECT_EQ(c->params.seed, 7u);
  EXPECT_EQ(c->params.n, 2);
  EXPECT_EQ(c->logprobs, 3);
  EXPECT_EQ(c->params.top_k, 5);
  EXPECT_EQ(c->params.min_tokens, 1);
  EXPECT_EQ(c->priority, -2);
  EXPECT_EQ(c->params.stop_token_ids, (std::vector<int32_t>{3, 4}));
  auto p = completion(R"({"prompt":[5.0,6],"max_tokens":4.0,"logprobs":2.0,"best_of":1.0})");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->prompt_token_ids[0], (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(p->params.max_tokens, 4);
  EXPECT_EQ(p->logprobs, 2);
}

TEST(IntegerValue, FractionalValuesAre400sNamingTheField) {
  for (const char* field :
       {"max_tokens", "max_completion_tokens", "seed", "n", "top_k", "min_tokens", "priority"}) {
    auto c = chat(std::string(R"({"messages":[{"role":"user","content":"hi"}],")") + field +
                  R"(":8.5})");
    ASSERT_FALSE(c.is_ok()) << field;
    EXPECT_EQ(param_of(c.status()), field) << c.status().message();
  }
  auto top = chat(R"({"messages":[{"role":"user","content":"hi"}],"logprobs":true,
      "top_logprobs":1.5})");
  EXPECT_EQ(param_of(top.status()), "top_logprobs");
  EXPECT_EQ(param_of(completion(R"({"prompt":"x","logprobs":0.5})").status()), "logprobs");
  EXPECT_EQ(param_of(completion(R"({"prompt":[1.5]})").status()), "prompt");
  static testing::FakeTokenizer tok;
  auto r =
      parse_responses_request(R"({"input":"x","max_output_tokens":8.5})", tok, chatml, limits());
  EXPECT_EQ(param_of(r.status()), "max_output_tokens");
  auto ok =
      parse_responses_request(R"({"input":"x","max_output_tokens":8.0})", tok, chatml, limits());
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->params.max_tokens, 8);
  // The Response object repeats it as the integer it is.
  auto t = translate_responses_request(R"({"input":"x","max_output_tokens":8.0})");
  ASSERT_TRUE(t.is_ok());
  EXPECT_TRUE(t->echo["max_output_tokens"].is_number_integer());
  EXPECT_EQ(t->echo["max_output_tokens"], 8);
}

// --- 19: continue_final_message ---

TEST(ContinueFinalMessage, CutsAfterTheLastOccurrenceOfTheContent) {
  EXPECT_EQ(*cut_after_final_message("<u>Paris is</u><a>Paris is</a>\n", "Paris is"),
            "<u>Paris is</u><a>Paris is");
  // A template that trims: matched on the trimmed text, trailing space not put back.
  EXPECT_EQ(*cut_after_final_message("<a>The answer</a>", "The answer  "), "<a>The answer");
  auto missing = cut_after_final_message("<a>something else</a>", "The answer");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(param_of(missing.status()), "continue_final_message");
  EXPECT_EQ(param_of(cut_after_final_message("<a></a>", " ").status()), "continue_final_message");
}

TEST(ContinueFinalMessage, ChatPromptEndsWithThePartialAssistantMessage) {
  auto r = chat(R"({"messages":[{"role":"user","content":"Capital of France?"},
      {"role":"assistant","content":"The capital is"}],"continue_final_message":true})");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->prompt_texts[0],
            "<|im_start|>user\nCapital of France?<|im_end|>\n<|im_start|>assistant\n"
            "The capital is");
  // Explicit add_generation_prompt: false is the same request.
  auto same = chat(R"({"messages":[{"role":"user","content":"Capital of France?"},
      {"role":"assistant","content":"The capital is"}],"continue_final_message":true,
      "add_generation_prompt":false})");
  ASSERT_TRUE(same.is_ok());
  EXPECT_EQ(same->prompt_texts[0], r->prompt_texts[0]);
  // Without it the assistant turn is closed and a new one opened.
  auto closed = chat(R"({"messages":[{"role":"user","content":"Capital of France?"},
      {"role":"assistant","content":"The capital is"}]})");
  ASSERT_TRUE(closed.is_ok());
  EXPECT_NE(closed->prompt_texts[0].find("The capital is<|im_end|>"), std::string::npos);
}

TEST(ContinueFinalMessage, RefusedWithAGenerationPromptOrANonAssistantLastMessage) {
  auto both = chat(R"({"messages":[{"role":"user","content":"q"},
      {"role":"assistant","content":"a"}],"continue_final_message":true,
      "add_generation_prompt":true})");
  ASSERT_FALSE(both.is_ok());
  EXPECT_EQ(param_of(both.status()), "continue_final_message");
  EXPECT_NE(both.status().message().find("add_generation_prompt"), std::string::npos);
  auto user_last = chat(R"({"messages":[{"role":"user","content":"q"}],
      "continue_final_message":true})");
  ASSERT_FALSE(user_last.is_ok());
  EXPECT_EQ(param_of(user_last.status()), "continue_final_message");
  auto not_bool = chat(R"({"messages":[{"role":"user","content":"q"}],
      "continue_final_message":"yes"})");
  EXPECT_EQ(param_of(not_bool.status()), "continue_final_message");
}

// --- 19: llama.cpp's json_schema and grammar ---

TEST(LlamaCppGrammarFields, JsonSchemaAndGrammarAreHonoured) {
  auto s = chat(R"({"messages":[{"role":"user","content":"hi"}],
      "json_schema":{"type":"object","properties":{"b":{"type":"integer"},"a":{}}}})");
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  ASSERT_TRUE(s->grammar.has_value());
  EXPECT_EQ(s->grammar->kind, GrammarKind::kJsonSchema);
  EXPECT_EQ(s->grammar->field, "json_schema");
  // The caller's property order is kept (b before a).
  EXPECT_LT(s->grammar->text.find("\"b\""), s->grammar->text.find("\"a\""));
  auto g = completion(R"({"prompt":"x","grammar":"root ::= \"yes\" | \"no\""})");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_TRUE(g->grammar.has_value());
  EXPECT_EQ(g->grammar->kind, GrammarKind::kEbnf);
  EXPECT_EQ(g->grammar->text, "root ::= \"yes\" | \"no\"");
}

TEST(LlamaCppGrammarFields, BadShapesAndCombinationsNameTheField) {
  EXPECT_EQ(param_of(completion(R"({"prompt":"x","grammar":{}})").status()), "grammar");
  EXPECT_EQ(param_of(completion(R"({"prompt":"x","json_schema":3})").status()), "json_schema");
  auto two = completion(R"({"prompt":"x","grammar":"root ::= \"a\"","json_schema":{}})");
  ASSERT_FALSE(two.is_ok());
  EXPECT_NE(two.status().message().find("cannot be combined"), std::string::npos);
}

// --- 15 and 20: /v1/responses ---

TEST(ResponsesConformance, StructuredOutputsReachTheChatPath) {
  static testing::FakeTokenizer tok;
  auto r = parse_responses_request(R"({"input":"x","structured_outputs":{"choice":["yes","no"]}})",
                                   tok, chatml, limits());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_TRUE(r->grammar.has_value());
  EXPECT_EQ(r->grammar->kind, GrammarKind::kChoice);
  auto g =
      parse_responses_request(R"({"input":"x","grammar":"root ::= \"a\""})", tok, chatml, limits());
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(g->grammar->kind, GrammarKind::kEbnf);
  // Refused as chat refuses it, in Responses terms.
  auto both = parse_responses_request(
      R"({"input":"x","structured_outputs":{"regex":"a"},"text":{"format":{"type":"json_object"}}})",
      tok, chatml, limits());
  ASSERT_FALSE(both.is_ok());
  EXPECT_EQ(both.status().message(),
            "structured_outputs: cannot be combined with text.format (give one "
            "structured-output field)");
  auto bad =
      parse_responses_request(R"({"input":"x","structured_outputs":{}})", tok, chatml, limits());
  EXPECT_EQ(param_of(bad.status()), "structured_outputs");
}

TEST(ResponsesConformance, ContextErrorsNameInputOrMaxOutputTokens) {
  static testing::FakeTokenizer tok;
  const RequestLimits small = limits(32);
  const std::string long_input(200, 'x');
  auto input = parse_responses_request(R"({"input":")" + long_input + R"("})", tok, chatml, small);
  ASSERT_FALSE(input.is_ok());
  HttpError e = http_error_from_status(input.status());
  EXPECT_EQ(e.param, "input");
  EXPECT_EQ(e.code, "context_length_exceeded");
  EXPECT_EQ(e.message.find("messages"), std::string::npos) << e.message;
  auto input_too = parse_responses_request(
      R"({"input":")" + long_input + R"(","max_output_tokens":4})", tok, chatml, small);
  EXPECT_EQ(http_error_from_status(input_too.status()).param, "input");
  auto output =
      parse_responses_request(R"({"input":"hi","max_output_tokens":30})", tok, chatml, small);
  ASSERT_FALSE(output.is_ok());
  e = http_error_from_status(output.status());
  EXPECT_EQ(e.param, "max_output_tokens");
  EXPECT_EQ(e.code, "context_length_exceeded");
  EXPECT_NE(e.message.find("in the input"), std::string::npos) << e.message;
  // Chat keeps OpenAI's chat wording.
  auto c = parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":30})",
                              tok, chatml, small);
  EXPECT_EQ(http_error_from_status(c.status()).param, "messages");
}

// --- 21: spec-required fields ---

StepOutput step(const std::string& text, FinishReason f) {
  StepOutput o;
  o.text = text;
  o.token_ids = {1};
  o.finish = f;
  TokenLogprob lp{};
  lp.token_id = 1;
  lp.logprob = -0.5f;
  o.logprobs = {lp};
  o.usage.prompt_tokens = 5;
  o.usage.completion_tokens = 1;
  return o;
}

TEST(SpecRequiredFields, ChatMessageAndLogprobsCarryRefusalNull) {
  ResponseContext ctx;
  ctx.kind = ApiKind::kChat;
  ctx.id = "req-1";
  ctx.model = "m";
  ctx.logprobs = 0;
  ResponseBuilder b(ctx);
  b.accumulate(0, step("hi", FinishReason::kStop));
  const json body = b.final_response();
  const json& choice = body["choices"][0];
  ASSERT_TRUE(choice["message"].contains("refusal"));
  EXPECT_TRUE(choice["message"]["refusal"].is_null());
  ASSERT_TRUE(choice["logprobs"].contains("refusal"));
  EXPECT_TRUE(choice["logprobs"]["refusal"].is_null());
  // Streamed chunks' logprobs objects too.
  ResponseBuilder s(ctx);
  bool saw = false;
  for (const json& chunk : s.chunks_for(0, step("hi", FinishReason::kStop))) {
    const json& lp = chunk["choices"][0]["logprobs"];
    if (lp.is_object()) {
      saw = true;
      EXPECT_TRUE(lp.contains("refusal") && lp["refusal"].is_null()) << chunk.dump();
    }
  }
  EXPECT_TRUE(saw);
}

TEST(SpecRequiredFields, ResponsesUsageAndEchoedFunctionTools) {
  auto t = translate_responses_request(R"({"input":"x","tools":[
      {"type":"function","name":"a","parameters":{"type":"object"}},
      {"type":"function","name":"b","strict":false}]})");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  const auto& tools = t->echo["tools"];
  EXPECT_EQ(tools[0]["strict"], true);  // what is done: arguments follow the schema
  EXPECT_EQ(tools[1]["strict"], false);
  EXPECT_TRUE(tools[1].contains("parameters") && tools[1]["parameters"].is_null());
  ResponsesContext ctx;
  ctx.id = responses_id("r");
  ctx.echo = t->echo;
  ResponseContext chat_ctx;
  chat_ctx.kind = ApiKind::kChat;
  chat_ctx.id = "r";
  ResponseBuilder b(chat_ctx);
  b.accumulate(0, step("hi", FinishReason::kStop));
  const auto r = response_from_chat(ctx, b.final_response(), b.total_usage());
  EXPECT_EQ(r["usage"]["input_tokens_details"]["cache_write_tokens"], 0);
  EXPECT_EQ(r["tools"][0]["strict"], true);
}

// --- 15: SSE charset ---

TEST(SseConformance, ContentTypeNamesUtf8) {
  EXPECT_STREQ(sse::kContentType, "text/event-stream; charset=utf-8");
}

}  // namespace
}  // namespace llmserve
