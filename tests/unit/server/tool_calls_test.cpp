// Tool calling, the generic format: request fields and their errors, the reply grammar (random
// logits at temperature 1 always give calls that parse, name a tool and fit its parameters),
// reading replies back, and the streamed deltas.
#include <gtest/gtest.h>

#include <random>

#include "engine/grammar/grammar_compiler.h"
#include "engine/runner/sampler.h"
#include "engine/runner/stop_checker.h"
#include "server/common/tool_calls.h"
#include "server/http/http_error.h"
#include "server/http/tool_call_response.h"
#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve::testing {
namespace {

using ojson = nlohmann::ordered_json;
constexpr int32_t kVocab = 300;

const char* kTools = R"({"tools": [
  {"type": "function", "function": {"name": "get_weather", "description": "Weather.",
   "parameters": {"type": "object", "properties": {
     "city": {"type": "string", "maxLength": 8}, "unit": {"enum": ["c", "f"]}},
     "required": ["city", "unit"]}}},
  {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
   "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 99},
                  "b": {"type": "integer", "minimum": 0, "maximum": 99}},
   "required": ["a", "b"]}}}]})";

ToolRequest tools_with(const std::string& extra) {
  ojson body = ojson::parse(kTools);
  if (!extra.empty()) body.update(ojson::parse(extra));
  auto r = parse_tool_request(body);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : ToolRequest{};
}

TEST(ToolRequest, ChoicesAndDefaults) {
  EXPECT_EQ(tools_with("").choice, ToolChoice::kAuto);
  EXPECT_TRUE(tools_with("").parallel_tool_calls);
  EXPECT_EQ(tools_with(R"({"tool_choice": "required"})").choice, ToolChoice::kRequired);
  EXPECT_FALSE(tools_with(R"({"tool_choice": "none"})").active());
  const ToolRequest named =
      tools_with(R"({"tool_choice": {"type": "function", "function": {"name": "add"}}})");
  EXPECT_EQ(named.choice, ToolChoice::kNamed);
  EXPECT_EQ(named.named, "add");
  EXPECT_FALSE(tools_with(R"({"parallel_tool_calls": false})").parallel_tool_calls);
  EXPECT_FALSE(parse_tool_request(ojson::parse("{}"))->active());
  // The parameters keep the caller's property order (the grammar emits them in it).
  EXPECT_EQ(tools_with("").tools[0].parameters["properties"].begin().key(), "city");
}

TEST(ToolRequest, BadFieldsAreNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"tools": {}})", "tools"},
      {R"({"tools": [{"type": "code_interpreter"}]})", "tools[0].type"},
      {R"({"tools": [{"type": "function"}]})", "tools[0].function"},
      {R"({"tools": [{"type": "function", "function": {"name": ""}}]})", "tools[0].function.name"},
      {R"({"tools": [{"type": "function", "function": {"name": "a b"}}]})",
       "tools[0].function.name"},
      {R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]})",
       "tools[0].function.parameters"},
      {R"({"tools": [{"type": "function", "function": {"name": "f"}},
                     {"type": "function", "function": {"name": "f"}}]})",
       "tools[1].function.name"},
      {R"({"tool_choice": "required"})", "tool_choice"},
      {R"({"tool_choice": "always"})", "tool_choice"},
      {R"({"tools": [{"type": "function", "function": {"name": "f"}}],
           "tool_choice": {"type": "function", "function": {"name": "g"}}})",
       "tool_choice"},
      {R"({"tool_choice": 3})", "tool_choice"},
      {R"({"parallel_tool_calls": 1})", "parallel_tool_calls"},
  };
  for (const auto& [body, field] : cases) {
    auto r = parse_tool_request(ojson::parse(body));
    ASSERT_FALSE(r.is_ok()) << body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(param_from_message(r.status().message()), field) << r.status().message();
  }
}

class ToolGrammar : public ::testing::Test {
 protected:
  // Samples one reply under the request's grammar with random logits.
  std::string sample_reply(const ToolRequest& req, uint32_t seed,
                           ToolFormat format = ToolFormat::kGeneric) {
    GrammarSpec spec = *tool_call_grammar(req, format);
    auto g = compiler_.compile_and_wait(
        spec, std::chrono::steady_clock::now() + std::chrono::seconds(60));
    EXPECT_TRUE(g.is_ok()) << g.status().to_string();
    if (!g.is_ok()) return {};
    SamplingParams p;
    p.temperature = 1.0f;
    SamplingState state(p, {}, seed);
    state.set_matcher((*g)->make_matcher());
    StopChecker stop(tok_, p, tok_.spec().stop_ids, 600, {}, /*constrained=*/true);
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 3.0f);
    std::vector<float> logits(kVocab);
    std::string text;
    while (!stop.finished()) {
      for (float& x : logits) x = dist(rng);
      // Favour the bytes that close a string or an object, so unbounded strings end.
      for (char ch : std::string("\"}]")) logits[tok_.bytes_of(std::string(1, ch))[0]] += 5.0f;
      const int32_t t = sampler_.sample(logits, p, state).token_id;
      text += stop.append(t).text;
    }
    EXPECT_TRUE(state.grammar_ended()) << text;
    return text;
  }

  static void expect_fits(const ToolCall& c) {
    const nlohmann::json args = nlohmann::json::parse(c.arguments);
    if (c.name == "get_weather") {
      ASSERT_EQ(args.size(), 2u) << c.arguments;
      size_t chars = 0;  // maxLength counts characters, not bytes
      for (unsigned char ch : args["city"].get<std::string>()) chars += (ch & 0xC0) != 0x80;
      EXPECT_LE(chars, 8u) << c.arguments;
      EXPECT_TRUE(args["unit"] == "c" || args["unit"] == "f");
    } else {
      ASSERT_EQ(c.name, "add");
      ASSERT_EQ(args.size(), 2u) << c.arguments;
      EXPECT_TRUE(args["a"].is_number_integer() && args["a"] >= 0 && args["a"] <= 99);
      EXPECT_TRUE(args["b"].is_number_integer() && args["b"] >= 0 && args["b"] <= 99);
    }
  }

  FakeTokenizer tok_;
  GrammarCompiler compiler_{tok_, kVocab, GrammarCompilerOptions{}};
  Sampler sampler_{kVocab, {FakeTokenizer::kEos, FakeTokenizer::kImEnd}};
};

TEST_F(ToolGrammar, RequiredAlwaysGivesCallsThatFitTheirTool) {
  const ToolRequest req = tools_with(R"({"tool_choice": "required"})");
  std::set<std::string> names;
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    const ToolReply reply = parse_tool_reply(sample_reply(req, seed), seed);
    ASSERT_TRUE(reply.is_call()) << seed;
    for (const ToolCall& c : reply.calls) {
      expect_fits(c);
      names.insert(c.name);
    }
  }
  EXPECT_EQ(names.size(), 2u);  // random logits reach both tools
}

TEST_F(ToolGrammar, NamedAndSingleCallAreEnforced) {
  const ToolRequest named = tools_with(
      R"({"tool_choice": {"type": "function", "function": {"name": "add"}},
          "parallel_tool_calls": false})");
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const ToolReply reply = parse_tool_reply(sample_reply(named, seed), seed);
    ASSERT_EQ(reply.calls.size(), 1u);
    EXPECT_EQ(reply.calls[0].name, "add");
    expect_fits(reply.calls[0]);
  }
}

TEST_F(ToolGrammar, AutoGivesACallOrAResponse) {
  const ToolRequest req = tools_with("");
  int calls = 0, texts = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const std::string text = sample_reply(req, seed);
    const ToolReply reply = parse_tool_reply(text, seed);
    if (reply.is_call()) {
      ++calls;
      for (const ToolCall& c : reply.calls) expect_fits(c);
    } else {
      ++texts;
      const nlohmann::json j = nlohmann::json::parse(text);
      EXPECT_EQ(j["response"].get<std::string>(), reply.content);
    }
  }
  EXPECT_GT(calls, 0);
  EXPECT_GT(texts, 0);
}

TEST(ToolReplies, ReadBackAndRoundTripThroughTheTemplateText) {
  const ToolReply plain = parse_tool_reply("not json at all", 1);
  EXPECT_FALSE(plain.is_call());
  EXPECT_EQ(plain.content, "not json at all");
  const ToolReply reply = parse_tool_reply(
      R"({"tool_calls": [{"name": "add", "arguments": {"b": 2, "a": 1}}, {"name": "get_weather", "arguments": {"city": "Oslo", "unit": "c"}}]})",
      7);
  ASSERT_EQ(reply.calls.size(), 2u);
  EXPECT_NE(reply.calls[0].id, reply.calls[1].id);
  EXPECT_TRUE(reply.calls[0].id.starts_with("call_"));
  EXPECT_EQ(reply.calls[0].arguments, R"({"b":2,"a":1})");  // the model's order kept
  const nlohmann::json as_api = tool_calls_json(reply.calls);
  const ToolReply again = parse_tool_reply(tool_calls_as_reply_text(as_api), 7);
  ASSERT_EQ(again.calls.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(again.calls[i].name, reply.calls[i].name);
    EXPECT_EQ(nlohmann::json::parse(again.calls[i].arguments),
              nlohmann::json::parse(reply.calls[i].arguments));
  }
}

TEST(ToolReplies, StreamedDeltasRebuildTheCalls) {
  ToolReply reply;
  reply.calls = {{"call_a", "f", R"({"text": "h\u00e9llo \u20ac w\u00f6rld, a long one"})"},
                 {"call_b", "g", "{}"}};
  reply.calls[0].arguments = "{\"text\": \"h\xC3\xA9llo \xE2\x82\xAC w\xC3\xB6rld, long\"}";
  const auto deltas = tool_reply_deltas(reply, 5);
  std::map<int, std::string> args, ids, names;
  for (const auto& d : deltas) {
    for (const auto& tc : d["tool_calls"]) {
      const int i = tc["index"];
      if (tc.contains("id")) {
        EXPECT_TRUE(args[i].empty());  // the header comes first
        ids[i] = tc["id"];
        names[i] = tc["function"]["name"];
      }
      const std::string piece = tc["function"]["arguments"];
      EXPECT_NO_THROW((void)nlohmann::json(piece).dump());  // valid UTF-8 on its own
      args[i] += piece;
    }
  }
  EXPECT_EQ(args[0], reply.calls[0].arguments);
  EXPECT_EQ(args[1], "{}");
  EXPECT_EQ(ids[1], "call_b");
  EXPECT_EQ(names[0], "f");
  ToolReply text;
  text.content = "hi";
  ASSERT_EQ(tool_reply_deltas(text).size(), 1u);
  EXPECT_EQ(tool_reply_deltas(text)[0]["content"], "hi");
}

}  // namespace
}  // namespace llmserve::testing

namespace llmserve::testing {
namespace {

// A Qwen 2.5-style template: tools in the system turn, calls as <tool_call> blocks.
constexpr const char* kHermesTemplate =
    "{%- if tools %}<|im_start|>system\n# Tools\n<tools>\n{%- for tool in tools %}\n"
    "{{ tool | tojson }}{%- endfor %}\n</tools>\nReturn <tool_call>\n{\"name\": <name>, "
    "\"arguments\": <args>}\n</tool_call><|im_end|>\n{%- endif %}"
    "{%- for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}"
    "{%- if message.tool_calls %}{%- for tc in message.tool_calls %}\n<tool_call>\n"
    "{\"name\": \"{{ tc.function.name }}\", \"arguments\": {{ tc.function.arguments | tojson }}}"
    "\n</tool_call>{%- endfor %}{%- endif %}<|im_end|>\n{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}";

TEST(HermesTools, TheTemplateFormatIsDetected) {
  EXPECT_EQ(detect_tool_format(kHermesTemplate), ToolFormat::kHermes);
  EXPECT_EQ(detect_tool_format("{% for m in messages %}{{ m.content }}{% endfor %}"),
            ToolFormat::kGeneric);
}

TEST(HermesTools, RepliesParseWithTheirContent) {
  const ToolReply r = parse_tool_reply(
      "Let me check.\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", "
      "\"unit\": \"c\"}}\n</tool_call>",
      3, ToolFormat::kHermes);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "add");
  EXPECT_EQ(r.calls[0].arguments, R"({"a":1,"b":2})");
  EXPECT_EQ(r.calls[1].name, "get_weather");
  EXPECT_EQ(r.content, "Let me check.");
  const ToolReply text = parse_tool_reply("Just text <tool_call> broken", 3, ToolFormat::kHermes);
  EXPECT_FALSE(text.is_call());
  EXPECT_EQ(text.content, "Just text <tool_call> broken");
  EXPECT_FALSE(tool_call_grammar(tools_with(""), ToolFormat::kHermes).has_value());  // auto
}

TEST_F(ToolGrammar, HermesRequiredGivesTaggedCallsThatFit) {
  const ToolRequest req = tools_with(R"({"tool_choice": "required"})");
  size_t most = 0;
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    const std::string text = sample_reply(req, seed, ToolFormat::kHermes);
    EXPECT_TRUE(text.starts_with("<tool_call>\n{")) << text;
    const ToolReply reply = parse_tool_reply(text, seed, ToolFormat::kHermes);
    ASSERT_TRUE(reply.is_call()) << text;
    EXPECT_TRUE(reply.content.empty()) << text;
    EXPECT_LE(reply.calls.size(), 4u);
    most = std::max(most, reply.calls.size());
    for (const ToolCall& c : reply.calls) expect_fits(c);
  }
  EXPECT_GT(most, 1u);  // parallel calls happen
  const ToolRequest one =
      tools_with(R"({"tool_choice": "required", "parallel_tool_calls": false})");
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    EXPECT_EQ(
        parse_tool_reply(sample_reply(one, seed, ToolFormat::kHermes), seed, ToolFormat::kHermes)
            .calls.size(),
        1u);
  }
}

}  // namespace
}  // namespace llmserve::testing

#include "engine/chat/chat_template.h"
#include "server/http/chat_request.h"

namespace llmserve::testing {
namespace {

// The generic format on a template without tools: the tool prompt joins the system message
// once, and an assistant's calls are its reply text.
TEST(GenericTools, ThePromptDescribesTheToolsOnceAndHistoryCallsAreReplies) {
  auto render = [](const nlohmann::json& messages, bool) -> Result<std::string> {
    std::string out;
    for (const auto& m : messages) {
      out += m["role"].get<std::string>() + ": " + m["content"].get<std::string>() + "\n";
    }
    return out;
  };
  FakeTokenizer tok;
  RequestLimits limits;
  limits.vocab_size = tok.vocab_size();
  limits.max_model_len = 8192;
  ojson body = ojson::parse(kTools);
  body["messages"] = ojson::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Add 1 and 2."},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
     "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "3"}])");
  auto r = parse_chat_request(body.dump(), tok, ChatRenderer(render), limits);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const std::string& prompt = r->prompt_texts[0];
  const size_t first = prompt.find("You can call these tools");
  ASSERT_NE(first, std::string::npos) << prompt;
  EXPECT_EQ(prompt.find("You can call these tools", first + 1), std::string::npos) << prompt;
  EXPECT_TRUE(prompt.starts_with("system: Be brief.\n\nYou can call these tools")) << prompt;
  EXPECT_NE(prompt.find(R"(assistant: {"tool_calls":[{"name":"add","arguments":{"a":1,"b":2}}]})"),
            std::string::npos)
      << prompt;
  ASSERT_TRUE(r->grammar.has_value());
  EXPECT_EQ(r->grammar->kind, GrammarKind::kJsonSchema);
  EXPECT_EQ(r->grammar->field, "tools");
}

TEST(HermesTools, ToolsAndCallsReachTheTemplate) {
  auto tmpl = ChatTemplate::parse(kHermesTemplate);
  ASSERT_TRUE(tmpl.is_ok()) << tmpl.status().to_string();
  const ChatTemplate t = *tmpl;
  ChatRenderer render(
      [t](const nlohmann::json& m, bool add, const nlohmann::ordered_json& variables) {
        return apply_chat_template(t, nlohmann::ordered_json(m), add, "", "", variables);
      },
      ToolFormat::kHermes);
  FakeTokenizer tok;
  RequestLimits limits;
  limits.vocab_size = tok.vocab_size();
  limits.max_model_len = 8192;
  ojson body = ojson::parse(kTools);
  body["messages"] = ojson::parse(R"([
    {"role": "user", "content": "Weather in Rome?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
     "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\", \"unit\": \"c\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}])");
  body["tool_choice"] = "required";
  auto r = parse_chat_request(body.dump(), tok, render, limits);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const std::string& prompt = r->prompt_texts[0];
  EXPECT_NE(prompt.find("<tools>{\"type\": \"function\", \"function\": {\"name\": \"get_weather\""),
            std::string::npos)
      << prompt;
  // The history's arguments reach the template as an object, not a JSON string.
  EXPECT_NE(prompt.find(R"("arguments": {"city": "Rome", "unit": "c"}})"), std::string::npos)
      << prompt;
  EXPECT_EQ(prompt.find("You can call these tools"), std::string::npos);  // no generic prompt
  ASSERT_TRUE(r->grammar.has_value());
  EXPECT_EQ(r->grammar->kind, GrammarKind::kTaggedJson);
  body["tool_choice"] = "auto";
  auto a = parse_chat_request(body.dump(), tok, render, limits);
  ASSERT_TRUE(a.is_ok());
  EXPECT_FALSE(a->grammar.has_value());  // the model's own format, unconstrained
  EXPECT_TRUE(a->tools.active());
}

}  // namespace
}  // namespace llmserve::testing
