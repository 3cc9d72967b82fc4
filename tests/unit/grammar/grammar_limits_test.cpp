// What a grammar may cost, and grammars that cannot be honoured (issue 41): JSON Schema keywords
// xgrammar would ignore are refused by name, schema size is bounded before compiling, compiles
// have a time budget, the cache is bounded in bytes, a compile nobody waits for is dropped,
// shutdown fails what is queued or running, and a grammar no output can match is refused.
#include <gtest/gtest.h>

#include <thread>

#include "engine/grammar/compile_process.h"
#include "engine/grammar/grammar_compiler.h"
#include "engine/grammar/json_schema_check.h"
#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve::testing {
namespace {

constexpr int32_t kLimitsVocab = 300;
using Clock = std::chrono::steady_clock;

GrammarSpec limit_spec(GrammarKind kind, std::string text) {
  GrammarSpec s;
  s.kind = kind;
  s.text = std::move(text);
  return s;
}

Result<CompiledGrammarPtr> compile_limited(GrammarCompiler& c, const GrammarSpec& s) {
  return c.compile_and_wait(s, Clock::now() + std::chrono::seconds(120));
}

// {"type": "array", "items": {"type": "array", "items": ... {"type": "integer"}}}, `depth` deep.
std::string nested_arrays(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += R"({"type":"array","items":)";
  s += R"({"type":"integer"})";
  s += std::string(static_cast<size_t>(depth), '}');
  return s;
}

// A compile that takes seconds: a schema far deeper than the default limit allows.
GrammarCompilerOptions slow_compile_options() {
  GrammarCompilerOptions o;
  o.threads = 1;
  o.schema.max_depth = 1 << 20;
  o.schema.max_nodes = 1 << 20;
  return o;
}
// Killing a compile needs the compile child processes, which sanitizer builds do without.
#define REQUIRE_COMPILE_PROCESSES()                                                          \
  if (!child_processes_available()) {                                                        \
    GTEST_SKIP() << "compiles run in-process in sanitizer builds (their allocators are not " \
                    "fork-safe); the normal build runs this test";                           \
  }

const std::string& slow_schema() {
  static const std::string s = nested_arrays(3000);
  return s;
}

TEST(JsonSchemaCheck, RefusesEveryKeywordStructuredOutputsWouldIgnore) {
  struct Case {
    const char* schema;
    const char* keyword;
  } cases[] = {
      {R"({"type":"array","items":{"type":"integer"},"uniqueItems":true})", "uniqueItems"},
      {R"({"type":"array","contains":{"const":3}})", "contains"},
      {R"({"type":"array","contains":{"const":3},"maxContains":2})", "contains"},
      {R"({"not":{"type":"string"}})", "not"},
      {R"({"if":{"type":"string"},"then":{"minLength":2}})", "if"},
      {R"({"type":"object","dependentRequired":{"a":["b"]}})", "dependentRequired"},
      {R"({"type":"object","properties":{"s":{"type":"string","pattern":"^a+$","maxLength":3}}})",
       "pattern"},
      {R"({"type":"string","format":"email","minLength":5})", "format"},
      {R"({"type":"string","format":"credit-card"})", "format"},
      {R"({"$ref":"https://example.com/schemas/person.json"})", "$ref"},
      {R"({"allOf":[{"type":"integer","minimum":5},{"type":"integer","maximum":3}]})", "allOf"},
      {R"({"type":"object","properties":{"deep":{"type":"object","properties":{"x":)"
       R"({"type":"array","uniqueItems":true}}}}})",
       "uniqueItems"},
  };
  for (const Case& k : cases) {
    const Status s = check_json_schema(k.schema, {});
    ASSERT_FALSE(s.is_ok()) << k.schema;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(s.message().starts_with(k.keyword)) << s.message();
    EXPECT_NE(s.message().find("not supported"), std::string::npos) << s.message();
  }
  // The nested one names where the keyword is, as a JSON pointer.
  EXPECT_NE(check_json_schema(cases[11].schema, {}).message().find("/properties/deep/properties/x"),
            std::string::npos);
}

TEST(JsonSchemaCheck, AcceptsWhatStructuredOutputsEnforce) {
  // Pydantic's shape: $defs and local $ref, a one-schema allOf, formats xgrammar turns into
  // patterns, a pattern alone, lengths alone, uniqueItems false (no constraint).
  const char* schema = R"({
    "$defs": {"Item": {"type": "object", "properties": {"sku": {"type": "string",
      "pattern": "^[A-Z]{3}-[0-9]{4}$"}, "qty": {"type": "integer", "minimum": 1}},
      "required": ["sku", "qty"]}},
    "type": "object",
    "properties": {
      "when": {"type": "string", "format": "date-time"},
      "who": {"type": "string", "format": "email"},
      "note": {"type": "string", "minLength": 1, "maxLength": 40},
      "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}, "uniqueItems": false},
      "main": {"allOf": [{"$ref": "#/$defs/Item"}]}
    },
    "required": ["when", "items"]
  })";
  EXPECT_TRUE(check_json_schema(schema, {}).is_ok()) << check_json_schema(schema, {}).message();
  FakeTokenizer tok;
  GrammarCompiler c(tok, kLimitsVocab, {});
  auto r = compile_limited(c, limit_spec(GrammarKind::kJsonSchema, schema));
  EXPECT_TRUE(r.is_ok()) << r.status().message();
}

TEST(JsonSchemaCheck, DepthAndSizeAreBoundedBeforeCompiling) {
  SchemaLimits limits;
  limits.max_depth = 64;
  limits.max_nodes = 100;
  EXPECT_TRUE(check_json_schema(nested_arrays(64), limits).is_ok());
  const Status deep = check_json_schema(nested_arrays(65), limits);
  ASSERT_FALSE(deep.is_ok());
  EXPECT_NE(deep.message().find("deeper than 64"), std::string::npos) << deep.message();
  // A document deep enough to exhaust a recursive parser's stack fails the same way.
  const Status very_deep = check_json_schema(nested_arrays(200000), limits);
  EXPECT_NE(very_deep.message().find("deeper than 64"), std::string::npos);

  std::string wide = R"({"type":"object","properties":{)";
  for (int i = 0; i < 100; ++i) wide += (i ? "," : "") + ("\"p" + std::to_string(i) + "\":{}");
  wide += "}}";
  const Status big = check_json_schema(wide, limits);
  ASSERT_FALSE(big.is_ok());
  EXPECT_NE(big.message().find("more than 100 subschemas"), std::string::npos) << big.message();

  // Through the compiler: a 400 naming the field and the kind, before any compile ran.
  FakeTokenizer tok;
  GrammarCompiler c(tok, kLimitsVocab, {});
  GrammarSpec s = limit_spec(GrammarKind::kJsonSchema, nested_arrays(2000));
  s.field = "response_format";
  auto r = compile_limited(c, s);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      r.status().message().starts_with("response_format: cannot compile the json_schema: "
                                       "the schema nests deeper than 64"))
      << r.status().message();
}

TEST(GrammarCompiler, AGrammarNoOutputCanMatchIsRefused) {
  FakeTokenizer tok;
  GrammarCompiler c(tok, kLimitsVocab, {});
  for (const GrammarSpec& s : {limit_spec(GrammarKind::kEbnf, "root ::= a\na ::= a \"x\""),
                               limit_spec(GrammarKind::kRegex, R"([^\s\S])")}) {
    auto r = compile_limited(c, s);
    ASSERT_FALSE(r.is_ok()) << s.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("allows no output"), std::string::npos)
        << r.status().message();
  }
  // A grammar whose only output is empty still has one: the stop token.
  EXPECT_TRUE(compile_limited(c, limit_spec(GrammarKind::kEbnf, "root ::= \"\"")).is_ok());
}

TEST(GrammarCompiler, AGrammarOverItsByteLimitIsRefusedAndTheCacheKeepsToItsBytes) {
  FakeTokenizer tok;
  GrammarCompilerOptions o;
  o.max_grammar_bytes = 64 << 10;
  o.compile_timeout_seconds = 600;  // sanitizer builds compile several times slower
  GrammarCompiler big(tok, kLimitsVocab, o);
  GrammarSpec choices = limit_spec(GrammarKind::kChoice, "");
  for (int i = 0; i < 64; ++i) {
    choices.choices.push_back(std::to_string(i) + std::string(256, 'a' + i % 26));
  }
  GrammarCompilerOptions unbounded = o;
  unbounded.max_grammar_bytes = 0;
  GrammarCompiler measure(tok, kLimitsVocab, unbounded);
  auto whole = compile_limited(measure, choices);
  ASSERT_TRUE(whole.is_ok());
  ASSERT_GT(static_cast<int64_t>((*whole)->memory_bytes()), o.max_grammar_bytes);
  auto r = compile_limited(big, choices);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("engine.grammar_max_bytes"), std::string::npos)
      << r.status().message();

  // The cache: room for about three of these grammars; twenty distinct ones pass through it.
  GrammarCompiler probe(tok, kLimitsVocab, {});
  auto one = compile_limited(probe, limit_spec(GrammarKind::kRegex, "x[a-z]{40}[0-9]{40}"));
  ASSERT_TRUE(one.is_ok());
  GrammarCompilerOptions small;
  small.cache_bytes = static_cast<int64_t>((*one)->memory_bytes() * 3);
  GrammarCompiler c(tok, kLimitsVocab, small);
  for (int i = 0; i < 20; ++i) {
    const std::string re = std::string(1, static_cast<char>('a' + i)) + "[a-z]{40}[0-9]{40}";
    ASSERT_TRUE(compile_limited(c, limit_spec(GrammarKind::kRegex, re)).is_ok());
    EXPECT_LE(c.stats().cached_bytes, small.cache_bytes) << i;
  }
  EXPECT_GE(c.stats().cached, 2);
  EXPECT_LE(c.stats().cached, 4);
}

TEST(GrammarCompiler, ACompilePastItsTimeBudgetIsKilled) {
  REQUIRE_COMPILE_PROCESSES();
  FakeTokenizer tok;
  GrammarCompilerOptions o = slow_compile_options();
  o.compile_timeout_seconds = 0.5;
  GrammarCompiler c(tok, kLimitsVocab, o);
  auto r = compile_limited(c, limit_spec(GrammarKind::kJsonSchema, slow_schema()));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("did not compile within 0.5 s"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(c.stats().timed_out, 1);
  // Its thread is free again: the next compile runs.
  EXPECT_TRUE(compile_limited(c, limit_spec(GrammarKind::kRegex, "[0-9]{3}")).is_ok());
}

TEST(GrammarCompiler, ACompileNobodyWaitsForIsKilledAndFreesItsThread) {
  REQUIRE_COMPILE_PROCESSES();
  FakeTokenizer tok;
  GrammarCompiler c(tok, kLimitsVocab, slow_compile_options());  // one thread, a 20 s budget
  std::atomic<bool> gone{false};
  std::thread client_leaves([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    gone = true;
  });
  auto r =
      c.compile_and_wait(limit_spec(GrammarKind::kJsonSchema, slow_schema()),
                         Clock::now() + std::chrono::seconds(120), [&] { return gone.load(); });
  client_leaves.join();
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(c.stats().abandoned, 1);
  // The only compile thread is free long before the abandoned compile could have ended.
  auto next = c.compile_and_wait(limit_spec(GrammarKind::kRegex, "[0-9]{3}"),
                                 Clock::now() + std::chrono::seconds(10));
  EXPECT_TRUE(next.is_ok()) << next.status().message();
  EXPECT_EQ(c.stats().timed_out, 0);
}

TEST(GrammarCompiler, TheQueueIsBoundedAndShutdownFailsWhatIsQueuedOrRunning) {
  REQUIRE_COMPILE_PROCESSES();
  FakeTokenizer tok;
  GrammarCompilerOptions o = slow_compile_options();
  o.max_queued = 1;
  GrammarCompiler c(tok, kLimitsVocab, o);
  auto wait = [&](const std::string& schema) {
    return c.compile_and_wait(limit_spec(GrammarKind::kJsonSchema, schema),
                              Clock::now() + std::chrono::seconds(120));
  };
  std::vector<Result<CompiledGrammarPtr>> results(2, Status(StatusCode::kInternal, "unset"));
  std::thread running([&] { results[0] = wait(slow_schema()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it has left the queue
  std::thread queued([&] { results[1] = wait(nested_arrays(2999)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto refused = wait(nested_arrays(2998));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().message();

  c.shutdown();
  running.join();
  queued.join();
  for (const auto& r : results) {
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().message();
  }
  auto after = compile_limited(c, limit_spec(GrammarKind::kRegex, "a"));
  EXPECT_EQ(after.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace llmserve::testing
