// Tools beside a JSON response_format (the Agents SDK's and pydantic-ai's agents send both):
// under tool_choice "auto" the reply is a call or {"response": <a value of the schema>}, and the
// content is that value's JSON; a forced call ignores the format; the Hermes format under "auto"
// and non-JSON formats are a 400 naming `tools`. Schemas with "$defs" (Pydantic's nested models,
// as instructor and LangChain send them) compile when nested in the reply grammar.
#include <gtest/gtest.h>

#include "engine/grammar/grammar_compiler.h"
#include "server/common/tool_calls.h"
#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve::testing {
namespace {

using ojson = nlohmann::ordered_json;
constexpr int32_t kReplyVocab = 300;

ToolRequest reply_request_with(const std::string& extra) {
  ojson body = ojson::parse(R"({"tools": [{"type": "function", "function": {"name": "add",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"},
    "b": {"type": "integer"}}, "required": ["a", "b"]}}}]})");
  body.update(ojson::parse(extra));
  auto r = parse_tool_request(body);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : ToolRequest{};
}

GrammarSpec schema_format(const std::string& schema) {
  GrammarSpec spec;
  spec.kind = GrammarKind::kJsonSchema;
  spec.text = schema;
  return spec;
}

const std::string kAnswerSchema =
    R"({"type": "object", "properties": {"city": {"type": "string"},
    "n": {"type": "integer"}}, "required": ["city", "n"], "additionalProperties": false})";
const std::string kReplyCall =
    R"({"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]})";

class ToolReplyFormat : public ::testing::Test {
 protected:
  bool grammar_accepts(const ToolRequest& req, const std::string& text,
                       ToolFormat format = ToolFormat::kGeneric) {
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
  GrammarCompiler compiler_{tok_, kReplyVocab, GrammarCompilerOptions{}};
};

TEST_F(ToolReplyFormat, AutoAnswersFollowTheSchemaOrCall) {
  ToolRequest req = reply_request_with("{}");
  ASSERT_TRUE(set_reply_format(schema_format(kAnswerSchema), ToolFormat::kGeneric, &req).ok());
  ASSERT_TRUE(req.reply_schema.has_value());
  EXPECT_TRUE(grammar_accepts(req, kReplyCall));
  EXPECT_TRUE(grammar_accepts(req, R"({"response": {"city": "Paris", "n": 2}})"));
  EXPECT_FALSE(grammar_accepts(req, R"({"response": "Paris has 2 million people"})"));
  EXPECT_FALSE(grammar_accepts(req, R"({"response": {"city": 3, "n": 2}})"));
  EXPECT_FALSE(grammar_accepts(req, R"({"city": "Paris", "n": 2})"));
  EXPECT_NE(tool_system_prompt(req).find("\"city\""), std::string::npos);
}

TEST_F(ToolReplyFormat, JsonObjectFormatAllowsAnyObjectAnswer) {
  ToolRequest req = reply_request_with(R"({"tool_choice": "auto"})");
  GrammarSpec object;
  object.kind = GrammarKind::kJsonObject;
  ASSERT_TRUE(set_reply_format(object, ToolFormat::kGeneric, &req).ok());
  EXPECT_TRUE(grammar_accepts(req, R"({"response": {"anything": [1, 2]}})"));
  EXPECT_FALSE(grammar_accepts(req, R"({"response": "text"})"));
}

TEST_F(ToolReplyFormat, DefinitionsMoveToTheRoot) {
  ToolRequest req = reply_request_with("{}");
  const std::string schema = R"({"$defs": {"Pos": {"type": "object", "properties":
    {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": false}},
    "type": "object", "properties": {"at": {"$ref": "#/$defs/Pos"}}, "required": ["at"],
    "additionalProperties": false})";
  ASSERT_TRUE(set_reply_format(schema_format(schema), ToolFormat::kGeneric, &req).ok());
  EXPECT_TRUE(grammar_accepts(req, R"({"response": {"at": {"x": 1}}})"));
  EXPECT_FALSE(grammar_accepts(req, R"({"response": {"at": {"x": "1"}}})"));
}

TEST_F(ToolReplyFormat, TheAnswerComesBackAsItsJson) {
  const ToolReply reply = parse_tool_reply(R"({"response": {"city": "Paris", "n": 2}})", 1);
  EXPECT_FALSE(reply.is_call());
  EXPECT_EQ(nlohmann::json::parse(reply.content), nlohmann::json::parse(R"({"city": "Paris",
    "n": 2})"));
  EXPECT_EQ(parse_tool_reply(R"({"response": "plain"})", 1).content, "plain");
  EXPECT_TRUE(parse_tool_reply(kReplyCall, 1).is_call());
}

TEST_F(ToolReplyFormat, AForcedCallIgnoresTheFormat) {
  for (const char* choice :
       {R"({"tool_choice": "required"})",
        R"({"tool_choice": {"type": "function", "function": {"name": "add"}}})"}) {
    ToolRequest req = reply_request_with(choice);
    const ToolRequest plain = req;
    ASSERT_TRUE(set_reply_format(schema_format(kAnswerSchema), ToolFormat::kGeneric, &req).ok());
    EXPECT_FALSE(req.reply_schema.has_value());
    EXPECT_EQ(*tool_call_grammar(req), *tool_call_grammar(plain));
    EXPECT_TRUE(set_reply_format(schema_format(kAnswerSchema), ToolFormat::kHermes, &req).ok());
  }
}

TEST_F(ToolReplyFormat, HermesAutoAndNonJsonFormatsAreRefused) {
  ToolRequest req = reply_request_with("{}");
  const Status hermes = set_reply_format(schema_format(kAnswerSchema), ToolFormat::kHermes, &req);
  EXPECT_EQ(hermes.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(hermes.message().rfind("tools: ", 0), 0u) << hermes.message();
  GrammarSpec regex;
  regex.kind = GrammarKind::kRegex;
  regex.text = "[a-z]+";
  const Status bad = set_reply_format(regex, ToolFormat::kGeneric, &req);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("regex"), std::string::npos) << bad.message();
  EXPECT_FALSE(req.reply_schema.has_value());
}

// Two tools whose parameters define "Item" differently: each call follows its own.
ToolRequest tools_with_definitions(const std::string& choice) {
  ojson body = ojson::parse(R"({"tools": [
    {"type": "function", "function": {"name": "buy", "parameters": {"type": "object",
      "$defs": {"Item": {"type": "object", "properties": {"sku": {"type": "integer"}},
        "required": ["sku"], "additionalProperties": false}},
      "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
      "required": ["items"], "additionalProperties": false}}},
    {"type": "function", "function": {"name": "tag", "parameters": {"type": "object",
      "definitions": {"Item": {"type": "object", "properties": {"label": {"type": "string"}},
        "required": ["label"], "additionalProperties": false}},
      "properties": {"item": {"$ref": "#/definitions/Item"}},
      "required": ["item"], "additionalProperties": false}}}]})");
  body.update(ojson::parse(choice));
  auto r = parse_tool_request(body);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : ToolRequest{};
}

TEST_F(ToolReplyFormat, ParametersWithDefinitionsCompileAndKeepTheirOwnDefinitions) {
  const std::string buy = R"({"name": "buy", "arguments": {"items": [{"sku": 7}]}})";
  const std::string tag = R"({"name": "tag", "arguments": {"item": {"label": "x"}}})";
  const std::string crossed = R"({"name": "tag", "arguments": {"item": {"sku": 7}}})";
  const ToolRequest req = tools_with_definitions(R"({"tool_choice": "required"})");
  EXPECT_TRUE(grammar_accepts(req, R"({"tool_calls": [)" + buy + ", " + tag + "]}"));
  EXPECT_FALSE(grammar_accepts(req, R"({"tool_calls": [)" + crossed + "]}"));
  EXPECT_TRUE(grammar_accepts(req, "<tool_call>\n" + buy + "\n</tool_call>", ToolFormat::kHermes));
  EXPECT_FALSE(
      grammar_accepts(req, "<tool_call>\n" + crossed + "\n</tool_call>", ToolFormat::kHermes));
  const ToolRequest named = tools_with_definitions(
      R"({"tool_choice": {"type": "function", "function": {"name": "tag"}}})");
  EXPECT_TRUE(grammar_accepts(named, R"({"tool_calls": [)" + tag + "]}"));
}

}  // namespace
}  // namespace llmserve::testing
