// response_format / structured_outputs / guided_* on /v1/completions and /v1/chat/completions:
// every accepted form reads to the right GrammarSpec, every bad shape names its field.
#include <gtest/gtest.h>

#include "server/http/chat_request.h"
#include "server/http/completion_request.h"
#include "server/http/http_error.h"
#include "tests/unit/server/fake_tokenizer.h"

namespace llmserve {
namespace {

RequestLimits structured_limits() {
  RequestLimits l;
  l.vocab_size = testing::FakeTokenizer::kVocab;
  l.max_model_len = 128;
  l.max_grammar_bytes = 200;
  l.max_grammar_choices = 3;
  l.max_grammar_choice_bytes = 8;
  return l;
}

Result<std::string> plain_chat(const nlohmann::json& messages, bool) {
  std::string out;
  for (const auto& m : messages) out += m["content"].get<std::string>();
  return out;
}

// Parses `fields` (JSON members, no braces) on both endpoints; both must agree.
Result<GenerationRequest> parse_both(const std::string& fields, std::string* chat_error) {
  static testing::FakeTokenizer tok;
  auto c = parse_completion_request(R"({"prompt":"hi",)" + fields + "}", tok, structured_limits());
  auto h = parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],)" + fields + "}",
                              tok, plain_chat, structured_limits());
  *chat_error = h.is_ok() ? "" : h.status().message();
  if (c.is_ok() != h.is_ok()) return internal_error("the endpoints disagree: " + *chat_error);
  if (c.is_ok() && c->grammar != h->grammar) return internal_error("the grammars differ");
  return c;
}

struct Good {
  std::string fields;
  std::optional<GrammarSpec> want;
};

GrammarSpec spec(GrammarKind kind, std::string field, std::string text = "",
                 std::vector<std::string> choices = {}) {
  GrammarSpec s;
  s.kind = kind;
  s.field = std::move(field);
  s.text = std::move(text);
  s.choices = std::move(choices);
  return s;
}

TEST(StructuredOutput, EveryFormReadsToItsSpecOnBothEndpoints) {
  const std::string schema = R"({"properties":{"a":{"type":"integer"}},"type":"object"})";
  const std::vector<Good> cases = {
      {R"("max_tokens":2)", std::nullopt},
      {R"("response_format":{"type":"text"})", std::nullopt},
      {R"("response_format":{"type":"json_object"})",
       spec(GrammarKind::kJsonObject, "response_format")},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"n","schema":)" + schema +
           R"(,"strict":true,"description":"d"}})",
       spec(GrammarKind::kJsonSchema, "response_format", schema)},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"n"}})",
       spec(GrammarKind::kJsonObject, "response_format")},
      {R"("structured_outputs":{"json":)" + schema + "}",
       spec(GrammarKind::kJsonSchema, "structured_outputs", schema)},
      {R"("structured_outputs":{"json":"{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}}"})",
       spec(GrammarKind::kJsonSchema, "structured_outputs",
            R"({"type":"object","properties":{"a":{"type":"integer"}}})")},
      // The caller's key order is kept (the output lists properties in it).
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"n","schema":)"
       R"({"type":"object","properties":{"zeta":{"type":"integer"},"alpha":{}}}}})",
       spec(GrammarKind::kJsonSchema, "response_format",
            R"({"type":"object","properties":{"zeta":{"type":"integer"},"alpha":{}}})")},
      {R"("structured_outputs":{"regex":"[a-z]+"})",
       spec(GrammarKind::kRegex, "structured_outputs", "[a-z]+")},
      {R"("structured_outputs":{"choice":["yes","no"]})",
       spec(GrammarKind::kChoice, "structured_outputs", "", {"yes", "no"})},
      {R"("structured_outputs":{"grammar":"root ::= \"a\""})",
       spec(GrammarKind::kEbnf, "structured_outputs", "root ::= \"a\"")},
      {R"("structured_outputs":{"json_object":true})",
       spec(GrammarKind::kJsonObject, "structured_outputs")},
      {R"("structured_outputs":{"regex":"x","choice":null})",
       spec(GrammarKind::kRegex, "structured_outputs", "x")},
      {R"("guided_json":)" + schema, spec(GrammarKind::kJsonSchema, "guided_json", schema)},
      {R"("guided_json":")" + std::string("{\\\"type\\\":\\\"object\\\"}") + "\"",
       spec(GrammarKind::kJsonSchema, "guided_json", R"({"type":"object"})")},
      {R"("guided_regex":"\\d+")", spec(GrammarKind::kRegex, "guided_regex", "\\d+")},
      {R"("guided_choice":["a"])", spec(GrammarKind::kChoice, "guided_choice", "", {"a"})},
      {R"("guided_grammar":"root ::= \"b\"")",
       spec(GrammarKind::kEbnf, "guided_grammar", "root ::= \"b\"")},
      {R"("response_format":{"type":"text"},"guided_choice":["a"])",
       spec(GrammarKind::kChoice, "guided_choice", "", {"a"})},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.fields);
    std::string chat_error;
    auto r = parse_both(c.fields, &chat_error);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    ASSERT_EQ(r->grammar.has_value(), c.want.has_value());
    if (!c.want) continue;
    EXPECT_EQ(r->grammar->kind, c.want->kind);
    EXPECT_EQ(r->grammar->field, c.want->field);
    EXPECT_EQ(r->grammar->text, c.want->text);
    EXPECT_EQ(r->grammar->choices, c.want->choices);
  }
}

struct Bad {
  std::string fields;
  std::string param;
};

TEST(StructuredOutput, EveryBadShapeNamesItsFieldOnBothEndpoints) {
  const std::string big(201, 'a');
  const std::vector<Bad> cases = {
      {R"("response_format":"json")", "response_format"},
      {R"("response_format":{})", "response_format"},
      {R"("response_format":{"type":5})", "response_format"},
      {R"("response_format":{"type":"xml"})", "response_format"},
      {R"("response_format":{"type":"json_schema"})", "response_format.json_schema"},
      {R"("response_format":{"type":"json_schema","json_schema":[]})",
       "response_format.json_schema"},
      {R"("response_format":{"type":"json_schema","json_schema":{"schema":{}}})",
       "response_format.json_schema.name"},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":""}})",
       "response_format.json_schema.name"},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"n","schema":"x"}})",
       "response_format.json_schema.schema"},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"n","schema":[1]}})",
       "response_format.json_schema.schema"},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"n","strict":"y"}})",
       "response_format.json_schema.strict"},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"n","description":1}})",
       "response_format.json_schema.description"},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"d":")" +
           big + R"("}}})",
       "response_format.json_schema.schema"},
      {R"("structured_outputs":"json")", "structured_outputs"},
      {R"("structured_outputs":{})", "structured_outputs"},
      {R"("structured_outputs":{"regex":"a","choice":["b"]})", "structured_outputs"},
      {R"("structured_outputs":{"json":5})", "structured_outputs.json"},
      {R"("structured_outputs":{"json":"{not json"})", "structured_outputs.json"},
      {R"("structured_outputs":{"json":"[1]"})", "structured_outputs.json"},
      {R"("structured_outputs":{"json":")" + big + R"("})", "structured_outputs.json"},
      {R"("structured_outputs":{"regex":5})", "structured_outputs.regex"},
      {R"("structured_outputs":{"regex":""})", "structured_outputs.regex"},
      {R"("structured_outputs":{"regex":")" + big + R"("})", "structured_outputs.regex"},
      {R"("structured_outputs":{"choice":[]})", "structured_outputs.choice"},
      {R"("structured_outputs":{"choice":"a"})", "structured_outputs.choice"},
      {R"("structured_outputs":{"choice":["a",1]})", "structured_outputs.choice"},
      {R"("structured_outputs":{"choice":["a","b","c","d"]})", "structured_outputs.choice"},
      {R"("structured_outputs":{"choice":["123456789"]})", "structured_outputs.choice"},
      {R"("structured_outputs":{"grammar":""})", "structured_outputs.grammar"},
      {R"("structured_outputs":{"grammar":[]})", "structured_outputs.grammar"},
      {R"("structured_outputs":{"json_object":false})", "structured_outputs.json_object"},
      {R"("guided_json":5)", "guided_json"},
      {R"("guided_json":"nope")", "guided_json"},
      {R"("guided_regex":1)", "guided_regex"},
      {R"("guided_choice":[])", "guided_choice"},
      {R"("guided_choice":["a","b","c","d"])", "guided_choice"},
      {R"("guided_grammar":")" + big + R"(")", "guided_grammar"},
      {R"("response_format":{"type":"json_object"},"structured_outputs":{"regex":"a"})",
       "structured_outputs"},
      {R"("response_format":{"type":"json_object"},"guided_regex":"a")", "guided_regex"},
      {R"("structured_outputs":{"regex":"a"},"guided_choice":["a"])", "guided_choice"},
      {R"("guided_regex":"a","guided_choice":["a"])", "guided_choice"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.fields);
    std::string chat_error;
    auto r = parse_both(c.fields, &chat_error);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
    EXPECT_EQ(param_from_message(r.status().message()), c.param) << r.status().to_string();
    EXPECT_EQ(param_from_message(chat_error), c.param) << chat_error;
  }
}

TEST(StructuredOutput, UnknownTypeNamesItAndTheValidOnes) {
  std::string chat_error;
  auto r = parse_both(R"("response_format":{"type":"xml"})", &chat_error);
  ASSERT_FALSE(r.is_ok());
  for (const char* word : {"'xml'", "text", "json_object", "json_schema"}) {
    EXPECT_NE(r.status().message().find(word), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace llmserve
