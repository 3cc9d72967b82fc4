// /v1/messages bodies translated onto the chat path: blocks, tools, tool_choice, thinking, the
// volatile system line, refusals naming the field, and chat errors renamed to Messages fields.
#include <gtest/gtest.h>

#include "server/anthropic/anthropic_error.h"
#include "server/anthropic/messages_request.h"
#include "server/anthropic/volatile_system_lines.h"
#include "server/http/http_error.h"
#include "tests/unit/server/chatml_renderer.h"
#include "tests/unit/server/fake_tokenizer.h"

namespace llmserve {
namespace {

using ordered = nlohmann::ordered_json;

MessagesTranslation translate(const std::string& body, bool count_only = false) {
  auto t = translate_messages_request(body, MessagesOptions{}, {}, count_only);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t.is_ok() ? *t : MessagesTranslation{};
}

std::string error_of(const std::string& body) {
  auto t = translate_messages_request(body, MessagesOptions{});
  return t.is_ok() ? "" : t.status().message();
}

RequestLimits limits() {
  RequestLimits l;
  l.vocab_size = testing::FakeTokenizer::kVocab;
  l.max_model_len = 8192;
  return l;
}

TEST(MessagesRequest, SystemBlocksAndStringContent) {
  auto t = translate(R"({"model":"m","max_tokens":9,"stream":true,
      "system":[{"type":"text","text":"A."},{"type":"text","text":"B.","cache_control":{"type":"ephemeral"}}],
      "messages":[{"role":"user","content":"hi"}],"temperature":0.5,"top_p":0.9,"top_k":4,
      "stop_sequences":["X"],"metadata":{"user_id":"u"},"service_tier":"auto",
      "context_management":{"edits":[]},"output_config":{"effort":"high"},"future":1})");
  EXPECT_EQ(t.chat_body["messages"], ordered::parse(R"([{"role":"system","content":"A.\nB."},
      {"role":"user","content":"hi"}])"));
  EXPECT_EQ(t.chat_body["max_tokens"], 9);
  EXPECT_EQ(t.chat_body["temperature"], 0.5);
  EXPECT_EQ(t.chat_body["top_k"], 4);
  EXPECT_EQ(t.chat_body["stop"], ordered::parse(R"(["X"])"));
  EXPECT_TRUE(t.stream);
  EXPECT_EQ(t.stop_sequences, std::vector<std::string>{"X"});
  EXPECT_FALSE(t.chat_body.contains("future"));
  EXPECT_FALSE(t.chat_body.contains("metadata"));
}

TEST(MessagesRequest, BillingLineIsStrippedFromSystemText) {
  auto t = translate(R"({"model":"m","max_tokens":9,
      "system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.337.ef8; cc_entrypoint=sdk-cli;"},
                {"type":"text","text":"You are an agent."}],
      "messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(t.chat_body["messages"][0]["content"], "You are an agent.");
  EXPECT_EQ(strip_volatile_lines("a\nx-anthropic-billing-header: 1\nb\n",
                                 {"x-anthropic-billing-header:"}),
            "a\nb\n");
  EXPECT_EQ(strip_volatile_lines("keep\n", {}), "keep\n");
  EXPECT_EQ(strip_volatile_lines("keep", {""}), "keep");
  // Configured off: the line stays.
  MessagesOptions keep;
  keep.strip_system_lines.clear();
  auto kept = translate_messages_request(
      R"({"model":"m","max_tokens":9,"system":"x-anthropic-billing-header: v\nS","messages":[{"role":"user","content":"hi"}]})",
      keep);
  ASSERT_TRUE(kept.is_ok());
  EXPECT_EQ(kept->chat_body["messages"][0]["content"], "x-anthropic-billing-header: v\nS");
}

TEST(MessagesRequest, ToolUseAndToolResultBecomeChatToolTurns) {
  auto t = translate(R"({"model":"m","max_tokens":9,
      "tools":[{"name":"get_weather","description":"d","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}},
               {"name":"Later","input_schema":{"type":"object"},"defer_loading":true}],
      "tool_choice":{"type":"any","disable_parallel_tool_use":true},
      "messages":[{"role":"user","content":"weather?"},
        {"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},
          {"type":"redacted_thinking","data":"x"},
          {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
        {"role":"user","content":[
          {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"}]},
          {"type":"tool_result","tool_use_id":"toolu_2","content":"boom","is_error":true},
          {"type":"text","text":"thanks"}]}]})");
  const ordered& m = t.chat_body["messages"];
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[1]["role"], "assistant");
  EXPECT_EQ(m[1]["reasoning_content"], "hmm");
  EXPECT_EQ(m[1]["tool_calls"][0]["id"], "toolu_1");
  EXPECT_EQ(ordered::parse(m[1]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            ordered::parse(R"({"city":"Paris"})"));
  EXPECT_EQ(m[2], ordered::parse(R"({"role":"tool","tool_call_id":"toolu_1","content":"sunny"})"));
  EXPECT_EQ(m[3]["content"], "Error: boom");
  EXPECT_EQ(m[4], ordered::parse(R"({"role":"user","content":"thanks"})"));
  ASSERT_EQ(t.chat_body["tools"].size(), 1u);  // the deferred tool is left out
  EXPECT_EQ(t.chat_body["tools"][0]["function"]["parameters"]["properties"]["city"]["type"],
            "string");
  EXPECT_EQ(t.chat_body["tool_choice"], "required");
  EXPECT_EQ(t.chat_body["parallel_tool_calls"], false);
  EXPECT_EQ(t.message_source[3], "messages[2].content[1]");
}

TEST(MessagesRequest, ToolChoiceAndThinkingMapping) {
  const std::string head =
      R"({"model":"m","max_tokens":2048,"messages":[{"role":"user","content":"q"}],
          "tools":[{"name":"f","input_schema":{"type":"object"}}],)";
  EXPECT_EQ(translate(head + R"("tool_choice":{"type":"auto"}})").chat_body["tool_choice"], "auto");
  EXPECT_EQ(translate(head + R"("tool_choice":{"type":"none"}})").chat_body["tool_choice"], "none");
  EXPECT_EQ(
      translate(head + R"("tool_choice":{"type":"tool","name":"f"}})").chat_body["tool_choice"],
      ordered::parse(R"({"type":"function","function":{"name":"f"}})"));
  EXPECT_EQ(translate(head + R"("thinking":{"type":"enabled","budget_tokens":1024}})")
                .chat_body["chat_template_kwargs"],
            ordered::parse(R"({"enable_thinking":true})"));
  EXPECT_EQ(
      translate(head + R"("thinking":{"type":"disabled"}})").chat_body["chat_template_kwargs"],
      ordered::parse(R"({"enable_thinking":false})"));
  EXPECT_FALSE(translate(head + R"("thinking":{"type":"adaptive","display":"omitted"}})")
                   .chat_body.contains("chat_template_kwargs"));
  EXPECT_EQ(error_of(head + R"("thinking":{"type":"enabled"}})"),
            "thinking.budget_tokens: is required when thinking is enabled");
  // The budget is enforced (the chat path's thinking_token_budget), and checked as Anthropic
  // checks it: at least 1024, and below max_tokens (Anthropic's messages).
  EXPECT_EQ(translate(head + R"("thinking":{"type":"enabled","budget_tokens":1500}})")
                .chat_body["thinking_token_budget"],
            1500);
  EXPECT_FALSE(translate(head + R"("thinking":{"type":"disabled"}})")
                   .chat_body.contains("thinking_token_budget"));
  EXPECT_EQ(error_of(head + R"("thinking":{"type":"enabled","budget_tokens":1023}})"),
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024");
  EXPECT_EQ(error_of(head + R"("thinking":{"type":"enabled","budget_tokens":2048}})"),
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
            "documentation at https://docs.claude.com/en/docs/build-with-claude/"
            "extended-thinking#max-tokens-and-context-window-size");
  EXPECT_EQ(error_of(head + R"("tool_choice":{"type":"sometimes"}})"),
            "tool_choice.type: 'sometimes' is not one of auto, any, tool, none");
}

TEST(MessagesRequest, RefusalsNameTheField) {
  EXPECT_EQ(error_of(R"({"model":"m","messages":[{"role":"user","content":"q"}]})"),
            "max_tokens: is required");
  EXPECT_EQ(error_of(R"({"model":"m","max_tokens":0,"messages":[{"role":"user","content":"q"}]})"),
            "max_tokens: must be at least 1");
  EXPECT_EQ(error_of(R"({"model":"m","max_tokens":3,"messages":[{"role":"user","content":[
                {"type":"text","text":"see"},{"type":"image","source":{"type":"base64"}}]}]})")
                .rfind("messages[0].content[1].source.media_type: is required", 0),
            0u);
  EXPECT_EQ(error_of(R"({"model":"m","max_tokens":3,"messages":[{"role":"user","content":[
                {"type":"tool_result","tool_use_id":"t","content":[{"type":"document"}]}]}]})")
                .rfind("messages[0].content[0].content[0]: document blocks", 0),
            0u);
  EXPECT_EQ(error_of(R"({"model":"m","max_tokens":3,"messages":[{"role":"user","content":[
                {"type":"hologram"}]}]})"),
            "messages[0].content[0].type: content block type 'hologram' is not supported in a "
            "user message");
  EXPECT_EQ(error_of(R"({"model":"m","max_tokens":3,"messages":[{"role":"robot","content":"q"}]})"),
            "messages[0].role: unknown role 'robot' (expected user or assistant)");
  EXPECT_EQ(error_of(R"({"model":"m","max_tokens":3,"messages":[{"role":"user","content":"q"}],
                "tools":[{"type":"bash_20250124","name":"bash"}]})")
                .rfind("tools[0].type: tool type 'bash_20250124' is a server tool", 0),
            0u);
  EXPECT_EQ(error_of(R"({"model":"m","max_tokens":3,"messages":[]})"),
            "messages: must contain at least one message");
}

TEST(MessagesRequest, ChatErrorsAreRenamedAndMapToAnthropicTypes) {
  static testing::FakeTokenizer tok;
  auto r = parse_messages_request(
      R"({"model":"m","max_tokens":3,"messages":[{"role":"user","content":"q"}],
          "tools":[{"name":"ok","input_schema":{"type":"object"}},{"name":"bad name!","input_schema":{"type":"object"}}]})",
      tok, ChatRenderer(testing::chatml), limits(), MessagesOptions{});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message().rfind("tools[1].name: ", 0), 0u) << r.status().message();
  const AnthropicError e = anthropic_error(http_error_from_status(r.status()));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.type, "invalid_request_error");
  EXPECT_EQ(
      anthropic_error_json(e),
      ordered::parse(R"({"type":"error","error":{"type":"invalid_request_error","message":")" +
                     e.message + "\"}}"));
  EXPECT_EQ(anthropic_error(unauthorized_error()).type, "authentication_error");
  EXPECT_EQ(anthropic_error(not_found_error("x")).type, "not_found_error");
  EXPECT_EQ(anthropic_error(payload_too_large_error(10)).type, "request_too_large");
  const AnthropicError busy =
      anthropic_error(http_error_from_status({StatusCode::kResourceExhausted, "queue full"}, 2));
  EXPECT_EQ(busy.status, 429);
  EXPECT_EQ(busy.type, "rate_limit_error");
  EXPECT_EQ(busy.retry_after_seconds, 2);
  const AnthropicError draining =
      anthropic_error(http_error_from_status({StatusCode::kUnavailable, "draining"}, 1));
  EXPECT_EQ(draining.status, 529);
  EXPECT_EQ(draining.type, "overloaded_error");
}

TEST(MessagesRequest, LastAssistantTurnIsContinued) {
  static testing::FakeTokenizer tok;
  auto a = parse_messages_request(
      R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"Capital of France?"},
          {"role":"assistant","content":"The capital is"}]})",
      tok, ChatRenderer(testing::chatml), limits(), MessagesOptions{});
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(
      a->prompt_texts[0],
      "<|im_start|>user\nCapital of France?<|im_end|>\n<|im_start|>assistant\nThe capital is");
  auto b = translate(R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"q"}]})");
  EXPECT_FALSE(b.chat_body.contains("continue_final_message"));
}

TEST(MessagesRequest, RendersLikeTheEquivalentChatBody) {
  static testing::FakeTokenizer tok;
  auto a = parse_messages_request(
      R"({"model":"m","max_tokens":5,"system":"S","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"assistant","content":"c"},{"role":"user","content":"d"}]})",
      tok, ChatRenderer(testing::chatml), limits(), MessagesOptions{});
  auto c = parse_chat_request(
      R"({"model":"m","max_tokens":5,"messages":[{"role":"system","content":"S"},{"role":"user","content":"ab"},{"role":"assistant","content":"c"},{"role":"user","content":"d"}]})",
      tok, ChatRenderer(testing::chatml), limits());
  ASSERT_TRUE(a.is_ok() && c.is_ok());
  EXPECT_EQ(a->prompt_texts, c->prompt_texts);
  EXPECT_EQ(a->prompt_token_ids, c->prompt_token_ids);
  EXPECT_EQ(a->params.max_tokens, c->params.max_tokens);
}

}  // namespace
}  // namespace llmserve
