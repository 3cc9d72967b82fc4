// Tool history that OpenAI refuses is refused here too, with a 400 naming the field (issue 41
// item 9): a tool message without tool_call_id or with an id no earlier call has, an assistant
// tool call without an id or a function, a call to a function the request's tools lack.
#include <gtest/gtest.h>

#include "server/http/chat_request.h"
#include "server/http/http_error.h"
#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve::testing {
namespace {

using nlohmann::json;

const char* kHistoryTools = R"([{"type": "function", "function": {"name": "add", "parameters":
  {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}}])";

const char* kUser = R"({"role": "user", "content": "Add 1 and 2."})";
const char* kHistoryCall = R"({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
  "type": "function", "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]})";
const char* kAnswer = R"({"role": "tool", "tool_call_id": "call_1", "content": "3"})";

// The HTTP error a chat body gets (status 200 when it is accepted).
HttpError answer(const std::vector<std::string>& messages, bool with_tools = true) {
  json body = {{"messages", json::array()}};
  for (const std::string& m : messages) body["messages"].push_back(json::parse(m));
  if (with_tools) body["tools"] = json::parse(kHistoryTools);
  auto render = [](const json& ms, bool) -> Result<std::string> { return ms.dump(); };
  FakeTokenizer tok;
  RequestLimits limits;
  limits.vocab_size = tok.vocab_size();
  limits.max_model_len = 8192;
  auto r = parse_chat_request(body.dump(), tok, ChatRenderer(render), limits);
  if (r.is_ok()) return HttpError{200, "", "", "", "", 0};
  return http_error_from_status(r.status());
}

TEST(ToolHistory, AWellFormedHistoryIsAccepted) {
  EXPECT_EQ(answer({kUser, kHistoryCall, kAnswer}).status, 200)
      << answer({kUser, kHistoryCall, kAnswer}).message;
  // Without tools in the request, a call's name is not checked against them.
  EXPECT_EQ(answer({kUser, kHistoryCall, kAnswer}, /*with_tools=*/false).status, 200);
}

TEST(ToolHistory, BreachesAre400sNamingTheField) {
  const std::string no_id = R"({"role": "tool", "content": "3"})";
  const std::string unknown_id = R"({"role": "tool", "tool_call_id": "call_9", "content": "3"})";
  const std::string no_function =
      R"({"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function"}]})";
  const std::string no_call_id = R"({"role": "assistant", "tool_calls": [{"type": "function",
    "function": {"name": "add", "arguments": "{}"}}]})";
  const std::string not_offered = R"({"role": "assistant", "tool_calls": [{"id": "call_1",
    "type": "function", "function": {"name": "multiply", "arguments": "{}"}}]})";
  const std::pair<std::vector<std::string>, const char*> cases[] = {
      {{kUser, kHistoryCall, no_id}, "messages[2].tool_call_id"},
      {{kUser, kHistoryCall, unknown_id}, "messages[2].tool_call_id"},
      {{kUser, kAnswer}, "messages[1].tool_call_id"},  // answers a call never made
      {{kUser, no_function, kAnswer}, "messages[1].tool_calls[0].function"},
      {{kUser, no_call_id}, "messages[1].tool_calls[0].id"},
      {{kUser, not_offered, kAnswer}, "messages[1].tool_calls[0].function.name"},
  };
  for (const auto& [messages, field] : cases) {
    const HttpError e = answer(messages);
    EXPECT_EQ(e.status, 400) << field;
    EXPECT_EQ(e.type, "invalid_request_error") << field;
    EXPECT_EQ(e.param, field) << e.message;
  }
}

}  // namespace
}  // namespace llmserve::testing
