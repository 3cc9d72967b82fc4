// How many calls a tool reply may make, and replies cut short (issue 41 item 5): a named
// tool_choice means exactly one call whatever parallel_tool_calls says; `required` and `auto`
// are bounded; a reply cut by max_tokens gives the calls complete before the cut and never the
// internal {"tool_calls": [...]} wrapper or an unclosed <tool_call> block as content, streamed
// or not.
#include <gtest/gtest.h>

#include "engine/grammar/grammar_compiler.h"
#include "server/common/cut_json.h"
#include "server/common/tool_calls.h"
#include "server/http/openai_response.h"
#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve::testing {
namespace {

using ojson = nlohmann::ordered_json;
using nlohmann::json;
constexpr int32_t kCountVocab = 300;

ToolRequest request_with(const std::string& extra) {
  ojson body = ojson::parse(R"({"tools": [{"type": "function", "function": {"name": "add",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"},
    "b": {"type": "integer"}}, "required": ["a", "b"]}}}]})");
  body.update(ojson::parse(extra));
  auto r = parse_tool_request(body);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : ToolRequest{};
}

const char* kNamed = R"({"tool_choice": {"type": "function", "function": {"name": "add"}}})";
const char* kRequired = R"({"tool_choice": "required"})";
const std::string kCall = R"({"name": "add", "arguments": {"a": 1, "b": 2}})";

std::string generic_reply(int calls) {
  std::string text = R"({"tool_calls": [)";
  for (int i = 0; i < calls; ++i) text += (i ? ", " : "") + kCall;
  return text + "]}";
}

std::string hermes_reply(int calls) {
  std::string text;
  for (int i = 0; i < calls; ++i)
    text += (i ? "\n" : "") + ("<tool_call>\n" + kCall) + "\n</tool_call>";
  return text;
}

class ToolCallCount : public ::testing::Test {
 protected:
  // Whether the request's reply grammar accepts `text` whole, as a complete reply.
  bool grammar_accepts(const ToolRequest& req, ToolFormat format, const std::string& text) {
    auto g =
        compiler_.compile_and_wait(*tool_call_grammar(req, format),
                                   std::chrono::steady_clock::now() + std::chrono::seconds(60));
    EXPECT_TRUE(g.is_ok()) << g.status().to_string();
    if (!g.is_ok()) return false;
    TokenMatcher m = (*g)->make_matcher();
    for (int32_t t : tok_.bytes_of(text)) {
      if (!m.accept(t)) return false;
    }
    return m.is_completed();
  }

  FakeTokenizer tok_;
  GrammarCompiler compiler_{tok_, kCountVocab, GrammarCompilerOptions{}};
};

TEST_F(ToolCallCount, ANamedChoiceAllowsExactlyOneCallWithParallelCallsOn) {
  const ToolRequest named = request_with(kNamed);
  ASSERT_TRUE(named.parallel_tool_calls);  // the default
  for (ToolFormat f : {ToolFormat::kGeneric, ToolFormat::kHermes}) {
    const auto reply = f == ToolFormat::kGeneric ? generic_reply : hermes_reply;
    EXPECT_TRUE(grammar_accepts(named, f, reply(1))) << reply(1);
    EXPECT_FALSE(grammar_accepts(named, f, reply(2))) << reply(2);
  }
}

TEST_F(ToolCallCount, RequiredAndAutoAreBounded) {
  for (const char* choice : {kRequired, "{}"}) {
    const ToolRequest req = request_with(choice);
    EXPECT_TRUE(grammar_accepts(req, ToolFormat::kGeneric, generic_reply(2)));  // parallel
    EXPECT_TRUE(grammar_accepts(req, ToolFormat::kGeneric, generic_reply(kMaxParallelToolCalls)));
    EXPECT_FALSE(
        grammar_accepts(req, ToolFormat::kGeneric, generic_reply(kMaxParallelToolCalls + 1)));
  }
  const ToolRequest req = request_with(kRequired);
  EXPECT_TRUE(grammar_accepts(req, ToolFormat::kHermes, hermes_reply(2)));
  EXPECT_FALSE(
      grammar_accepts(req, ToolFormat::kHermes, hermes_reply(kMaxParallelToolCallsHermes + 1)));
}

TEST_F(ToolCallCount, TheBoundedGrammarCompilesQuickly) {
  // maxItems must not unroll into a grammar that takes long to build.
  ToolRequest req = request_with(kRequired);
  const auto t0 = std::chrono::steady_clock::now();
  auto g = compiler_.compile_and_wait(*tool_call_grammar(req, ToolFormat::kGeneric),
                                      std::chrono::steady_clock::now() + std::chrono::seconds(60));
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(CutToolReplies, TheCompleteCallsComeBackAndNeverTheWrapper) {
  // Cut in the second call: the first one, no content.
  const std::string two = generic_reply(2);
  const std::string cut = two.substr(0, two.size() - 12);
  const ToolReply r = parse_tool_reply(cut, 5);
  ASSERT_EQ(r.calls.size(), 1u) << cut;
  EXPECT_EQ(r.calls[0].name, "add");
  EXPECT_EQ(json::parse(r.calls[0].arguments), json::parse(R"({"a": 1, "b": 2})"));
  EXPECT_EQ(r.content, "");
  // Every cut of a reply: calls in order, each one complete, and no wrapper text.
  const std::string three = generic_reply(3);
  for (size_t len = 0; len <= three.size(); ++len) {
    const ToolReply p = parse_tool_reply(three.substr(0, len), 5);
    EXPECT_EQ(p.content.find("tool_calls"), std::string::npos) << len;
    EXPECT_EQ(p.content.find('{'), std::string::npos) << len;
    for (const ToolCall& c : p.calls) {
      EXPECT_EQ(json::parse(c.arguments), json::parse(R"({"a": 1, "b": 2})")) << len;
    }
  }
  // The "response" branch cut short: its text so far (a half escape dropped).
  EXPECT_EQ(parse_tool_reply(R"({"response": "Hello, wor)", 1).content, "Hello, wor");
  EXPECT_EQ(parse_tool_reply(R"({"response": "caf\u00)", 1).content, "caf");
  EXPECT_EQ(parse_tool_reply(R"({"response": "caf\u00e9 ok)", 1).content, "caf\xC3\xA9 ok");
  // Text that is not the reply format stays content.
  EXPECT_EQ(parse_tool_reply("plain words", 1).content, "plain words");
}

TEST(CutToolReplies, HermesDropsTheUnclosedBlock) {
  const std::string two = hermes_reply(2);
  for (size_t len = 0; len <= two.size(); ++len) {
    const ToolReply p = parse_tool_reply(two.substr(0, len), 5, ToolFormat::kHermes);
    EXPECT_EQ(p.content, "") << two.substr(0, len);
    EXPECT_LE(p.calls.size(), 2u);
  }
  const ToolReply one = parse_tool_reply(two.substr(0, two.size() - 20), 5, ToolFormat::kHermes);
  EXPECT_EQ(one.calls.size(), 1u);
  // Free text that merely mentions the tag is content (auto: the model writes freely).
  EXPECT_EQ(parse_tool_reply("see <tool_call> here", 5, ToolFormat::kHermes).content,
            "see <tool_call> here");
}

TEST(CutJson, ArrayItemsBeforeTheCut) {
  const std::string text = R"([1, "a,]", {"b": [2, "}"]}, [3], 4)";
  const auto items = complete_array_items(text, 0);
  ASSERT_EQ(items.size(), 4u);  // the 4 at the cut may have more digits
  EXPECT_EQ(items[1], "a,]");
  EXPECT_EQ(items[2]["b"][1], "}");
  EXPECT_EQ(complete_array_items(text + "]", 0).size(), 5u);
  const std::string spaced = " { \"k\" :\n [";
  EXPECT_EQ(first_member_value(spaced, "k"), spaced.size() - 1);
  EXPECT_FALSE(first_member_value(R"({"k": )", "k").has_value());
  EXPECT_FALSE(first_member_value(R"({"x": 1})", "k").has_value());
}

// The response a client gets for a reply cut by max_tokens: the complete call as tool_calls,
// content null, finish_reason "length" (the reply was cut: calls may be missing); streamed, the
// same call in delta.tool_calls and no delta.content with the wrapper.
TEST(CutToolReplies, TheResponseCarriesTheCallsStreamedOrNot) {
  const std::string two = generic_reply(2);
  const std::string cut = two.substr(0, two.size() - 12);
  StepOutput o;
  o.text = cut;
  o.token_ids = {1};
  o.finish = FinishReason::kLength;
  o.usage.prompt_tokens = 5;
  o.usage.completion_tokens = 40;
  ResponseContext c;
  c.kind = ApiKind::kChat;
  c.id = "chatcmpl-1";
  c.model = "m";
  c.tools = true;
  ResponseBuilder whole(c);
  whole.accumulate(0, o);
  const json body = whole.final_response();
  const json& message = body["choices"][0]["message"];
  ASSERT_TRUE(message.contains("tool_calls")) << body.dump();
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "add");
  EXPECT_TRUE(message["content"].is_null()) << body.dump();
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");

  ResponseBuilder streamed(c);
  std::vector<json> calls;
  std::string content, finish;
  for (const json& chunk : streamed.chunks_for(0, o)) {
    const json& ch = chunk["choices"][0];
    if (ch["delta"].contains("content")) content += ch["delta"]["content"].get<std::string>();
    if (ch["delta"].contains("tool_calls")) calls.push_back(ch["delta"]["tool_calls"][0]);
    if (ch["finish_reason"].is_string()) finish = ch["finish_reason"];
  }
  EXPECT_EQ(content, "");
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls[0]["function"]["name"], "add");
  EXPECT_EQ(finish, "length");
}

}  // namespace
}  // namespace llmserve::testing
