// Mistral's [TOOL_CALLS] format: the oracle for what a call looks like is Mistral-Nemo's own
// template as jinja2 rendered an assistant turn with a call (tests/fixtures/chat/chat_cases.json);
// the ids made here must pass that template's own check when a conversation sends them back; the
// forced-call grammar accepts the template's form and nothing off it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"
#include "engine/grammar/grammar_compiler.h"
#include "server/common/mistral_tool_calls.h"
#include "server/common/tool_calls.h"
#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve::testing {
namespace {

using ojson = nlohmann::ordered_json;
const std::string kDir = std::string(LLMSERVE_FIXTURES_DIR) + "/chat/";

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The assistant turn jinja2 rendered from {"name": "get_weather", "arguments": {"city":
// "Paris"}} with id abcDEF123: "[TOOL_CALLS][{...}]".
std::string rendered_call() {
  const nlohmann::json fixture = nlohmann::json::parse(read(kDir + "chat_cases.json"));
  for (const auto& c : fixture["cases"]) {
    if (c["template"] == "mistral_nemo.jinja" && c["conversation"] == "mistral_tool_ids") {
      const std::string text = c["expected"];
      const size_t open = text.find("[TOOL_CALLS]");
      return text.substr(open, text.find("</s>", open) - open);
    }
  }
  ADD_FAILURE() << "no mistral_nemo x mistral_tool_ids case";
  return "";
}

ToolRequest weather_request(const std::string& choice) {
  ojson body = ojson::parse(R"({"tools": [{"type": "function", "function": {
      "name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object",
      "properties": {"q": {"type": "string"}}, "required": ["q"]}}}]})");
  body["tool_choice"] = ojson::parse(choice);
  auto r = parse_tool_request(body);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : ToolRequest{};
}

TEST(MistralTools, DetectedFromTheTemplates) {
  EXPECT_EQ(detect_tool_format(read(kDir + "templates/mistral_nemo.jinja")), ToolFormat::kMistral);
  EXPECT_EQ(detect_tool_format(read(kDir + "templates/mixtral_instruct.jinja")),
            ToolFormat::kGeneric);
  EXPECT_EQ(detect_tool_format(read(kDir + "templates/qwen3.jinja")), ToolFormat::kHermes);
  EXPECT_TRUE(is_mistral_args_template("{% if tools %}[TOOL_CALLS]{{ name }}[ARGS]{% endif %}"));
}

TEST(MistralTools, TheTemplatesOwnCallParses) {
  const std::string call = rendered_call();
  ASSERT_EQ(call.rfind("[TOOL_CALLS][", 0), 0u) << call;
  const ToolReply r = parse_tool_reply("Let me look.\n" + call, 7, ToolFormat::kMistral);
  EXPECT_EQ(r.content, "Let me look.");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(r.calls[0].arguments), (nlohmann::json{{"city", "Paris"}}));
  const std::string& id = r.calls[0].id;
  EXPECT_TRUE(id.size() == 9 && std::all_of(id.begin(), id.end(),
                                            [](unsigned char c) { return std::isalnum(c) != 0; }))
      << id;
}

TEST(MistralTools, ArgsFormCutRepliesAndPlainText) {
  const ToolReply args = parse_tool_reply(
      "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Rome\"}[TOOL_CALLS]search[ARGS]{\"q\": \"x\"}", 1,
      ToolFormat::kMistralArgs);
  ASSERT_EQ(args.calls.size(), 2u);
  EXPECT_EQ(args.calls[1].name, "search");
  EXPECT_EQ(args.calls[1].arguments, R"({"q":"x"})");
  EXPECT_NE(args.calls[0].id, args.calls[1].id);
  const ToolReply cut = parse_tool_reply(
      R"([TOOL_CALLS][{"name": "search", "arguments": {"q": "a"}}, {"name": "get_we)", 1,
      ToolFormat::kMistral);
  ASSERT_EQ(cut.calls.size(), 1u);
  EXPECT_EQ(cut.content, "");
  const ToolReply cut_args =
      parse_tool_reply("[TOOL_CALLS]get_weather[ARGS]{\"ci", 1, ToolFormat::kMistralArgs);
  EXPECT_TRUE(cut_args.calls.empty());
  const ToolReply text = parse_tool_reply("  It is sunny.\n", 1, ToolFormat::kMistral);
  EXPECT_FALSE(text.is_call());
  EXPECT_EQ(text.content, "It is sunny.");
}

TEST(MistralTools, IdsPassTheTemplatesCheckWhenSentBack) {
  auto tmpl = ChatTemplate::parse(read(kDir + "templates/mistral_nemo.jinja"));
  ASSERT_TRUE(tmpl.is_ok()) << tmpl.status().to_string();
  const ToolRequest req = weather_request(R"("auto")");
  const ToolReply r = parse_tool_reply(rendered_call(), 99, ToolFormat::kMistral);
  ASSERT_EQ(r.calls.size(), 1u);
  ojson messages = ojson::array();
  messages.push_back({{"role", "user"}, {"content", "Weather in Paris?"}});
  messages.push_back(
      {{"role", "assistant"},
       {"content", ""},
       {"tool_calls",
        {{{"id", r.calls[0].id},
          {"type", "function"},
          {"function",
           {{"name", r.calls[0].name}, {"arguments", ojson::parse(r.calls[0].arguments)}}}}}}});
  messages.push_back({{"role", "tool"}, {"tool_call_id", r.calls[0].id}, {"content", "21 C"}});
  auto out = apply_chat_template(*tmpl, messages, true, "<s>", "</s>",
                                 ojson{{"tools", tools_for_template(req)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_NE(out->find("\"id\": \"" + r.calls[0].id + "\""), std::string::npos) << *out;
  // The generic ids ("call_" + 24 hex digits) are what the template refuses.
  messages[1]["tool_calls"][0]["id"] = "call_0123456789abcdef01234567";
  messages[2]["tool_call_id"] = "call_0123456789abcdef01234567";
  EXPECT_FALSE(apply_chat_template(*tmpl, messages, true, "<s>", "</s>",
                                   ojson{{"tools", tools_for_template(req)}})
                   .is_ok());
}

class MistralGrammar : public ::testing::Test {
 protected:
  bool accepts(const GrammarSpec& spec, const std::string& text) {
    auto g = compiler_.compile_and_wait(
        spec, std::chrono::steady_clock::now() + std::chrono::seconds(60));
    EXPECT_TRUE(g.is_ok()) << g.status().to_string();
    if (!g.is_ok()) return false;
    TokenMatcher m = (*g)->make_matcher();
    for (int32_t t : tok_.bytes_of(text)) {
      if (!m.accept(t)) return false;
    }
    return m.is_completed();
  }
  FakeTokenizer tok_;
  GrammarCompiler compiler_{tok_, 300, GrammarCompilerOptions{}};
};

TEST_F(MistralGrammar, RequiredAndNamedChoicesForceTheTemplatesForm) {
  EXPECT_FALSE(tool_call_grammar(weather_request(R"("auto")"), ToolFormat::kMistral).has_value());
  const auto required = tool_call_grammar(weather_request(R"("required")"), ToolFormat::kMistral);
  ASSERT_TRUE(required.has_value());
  const std::string call = rendered_call();
  // The template's call carries its id; a reply is the call without it.
  const std::string bare =
      R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}])";
  EXPECT_TRUE(accepts(*required, bare));
  EXPECT_TRUE(accepts(*required, R"([TOOL_CALLS][{"name": "search", "arguments": {"q": "a"}}, )"
                                 R"({"name": "get_weather", "arguments": {"city": "b"}}])"));
  EXPECT_FALSE(accepts(*required, "Sure."));
  EXPECT_FALSE(accepts(*required, R"([TOOL_CALLS][{"name": "other", "arguments": {}}])"));
  EXPECT_FALSE(accepts(*required, "[TOOL_CALLS][]"));
  EXPECT_EQ(parse_tool_reply(bare, 1, ToolFormat::kMistral).calls.size(), 1u);
  EXPECT_EQ(call.substr(0, 13), bare.substr(0, 13));
  const auto named =
      tool_call_grammar(weather_request(R"({"type": "function", "function": {"name": "search"}})"),
                        ToolFormat::kMistralArgs);
  ASSERT_TRUE(named.has_value());
  EXPECT_TRUE(accepts(*named, R"([TOOL_CALLS]search[ARGS]{"q": "llamas"})"));
  EXPECT_FALSE(accepts(*named, R"([TOOL_CALLS]get_weather[ARGS]{"city": "x"})"));
  EXPECT_FALSE(
      accepts(*named, R"([TOOL_CALLS]search[ARGS]{"q": "a"}[TOOL_CALLS]search[ARGS]{"q": "b"})"));
}

}  // namespace
}  // namespace llmserve::testing
