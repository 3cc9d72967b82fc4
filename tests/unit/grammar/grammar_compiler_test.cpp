// GrammarCompiler: every kind compiles, errors name the problem (and the field through
// compile_and_wait), the cache compiles a spec once, and compiles run off the caller's thread.
#include <gtest/gtest.h>

#include "engine/grammar/grammar_compiler.h"
#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve::testing {
namespace {

constexpr int32_t kVocab = 300;  // the logits row is wider than the tokenizer's vocab

using Clock = std::chrono::steady_clock;

GrammarSpec spec(GrammarKind kind, std::string text, std::string field = "response_format") {
  GrammarSpec s;
  s.kind = kind;
  s.text = std::move(text);
  s.field = std::move(field);
  return s;
}

Result<CompiledGrammarPtr> compile_now(GrammarCompiler& c, const GrammarSpec& s) {
  return c.compile_and_wait(s, Clock::now() + std::chrono::seconds(60));
}

TEST(GrammarCompiler, EveryKindCompiles) {
  FakeTokenizer tok;
  GrammarCompiler c(tok, kVocab, {});
  GrammarSpec choice = spec(GrammarKind::kChoice, "");
  choice.choices = {"yes", "no", "say \"maybe\"\n"};
  for (const GrammarSpec& s : {spec(GrammarKind::kJsonObject, ""),
                               spec(GrammarKind::kJsonSchema,
                                    R"({"type":"object","properties":{"a":{"type":"integer"}}})"),
                               spec(GrammarKind::kRegex, "[a-z]{2,4}-[0-9]+"), choice,
                               spec(GrammarKind::kEbnf, R"(root ::= "a" b*
b ::= [0-9])")}) {
    auto r = compile_now(c, s);
    ASSERT_TRUE(r.is_ok()) << grammar_kind_name(s.kind) << ": " << r.status().to_string();
    EXPECT_EQ((*r)->vocab_size(), kVocab);
    EXPECT_GT((*r)->memory_bytes(), 0u);
  }
}

TEST(GrammarCompiler, ErrorsNameTheFieldAndTheProblem) {
  FakeTokenizer tok;
  GrammarCompiler c(tok, kVocab, {});
  struct Case {
    GrammarSpec spec;
    const char* field;
  } cases[] = {
      {spec(GrammarKind::kJsonSchema, "{not json", "response_format"), "response_format"},
      {spec(GrammarKind::kJsonSchema, R"({"type":"no-such-type"})", "structured_outputs"),
       "structured_outputs"},
      {spec(GrammarKind::kRegex, "(unclosed", "structured_outputs"), "structured_outputs"},
      {spec(GrammarKind::kEbnf, "root ::= undefined_rule", "guided_grammar"), "guided_grammar"},
      {spec(GrammarKind::kChoice, "", "structured_outputs"), "structured_outputs"},
  };
  for (const Case& k : cases) {
    auto r = compile_now(c, k.spec);
    ASSERT_FALSE(r.is_ok()) << k.spec.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(r.status().message().starts_with(std::string(k.field) + ": "))
        << r.status().message();
    EXPECT_NE(r.status().message().find(grammar_kind_name(k.spec.kind)), std::string::npos)
        << r.status().message();
  }
  EXPECT_EQ(c.stats().failed, 5);
}

TEST(GrammarCompiler, CacheCompilesASpecOnceAndSharesItsError) {
  FakeTokenizer tok;
  GrammarCompiler c(tok, kVocab, {});
  const GrammarSpec a = spec(GrammarKind::kRegex, "ab+c");
  auto first = compile_now(c, a);
  auto second = compile_now(c, a);
  ASSERT_TRUE(first.is_ok() && second.is_ok());
  EXPECT_EQ(first->get(), second->get());  // the same compiled object
  GrammarSpec other_field = a;
  other_field.field = "structured_outputs";
  EXPECT_TRUE(compile_now(c, other_field).is_ok());
  EXPECT_EQ(c.stats().compiled, 1);
  EXPECT_EQ(c.stats().cache_hits, 2);

  const GrammarSpec bad = spec(GrammarKind::kRegex, "(", "guided_regex");
  GrammarSpec bad2 = bad;
  bad2.field = "structured_outputs";
  auto e1 = compile_now(c, bad);
  auto e2 = compile_now(c, bad2);
  ASSERT_FALSE(e1.is_ok() || e2.is_ok());
  EXPECT_TRUE(e1.status().message().starts_with("guided_regex: "));
  EXPECT_TRUE(e2.status().message().starts_with("structured_outputs: "));
  EXPECT_EQ(c.stats().compiled, 2);
}

TEST(GrammarCompiler, LeastRecentlyUsedEntriesLeave) {
  FakeTokenizer tok;
  GrammarCompiler c(tok, kVocab, GrammarCompilerOptions{1, 2});
  for (const char* re : {"a", "b", "c", "a"}) {
    ASSERT_TRUE(compile_now(c, spec(GrammarKind::kRegex, re)).is_ok());
  }
  EXPECT_EQ(c.stats().compiled, 4);  // "a" had left when "c" came
  EXPECT_EQ(c.stats().cached, 2);
}

TEST(GrammarCompiler, ACallerPastItsDeadlineDoesNotWaitAndItsCompileIsDropped) {
  FakeTokenizer tok;
  GrammarCompiler c(tok, kVocab, {});
  // A cold compile (milliseconds, in a child process) is never done the instant it is asked.
  auto late = c.compile_and_wait(spec(GrammarKind::kJsonSchema, R"({"type":"string"})"),
                                 Clock::now() - std::chrono::seconds(1));
  ASSERT_FALSE(late.is_ok());
  EXPECT_EQ(late.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(late.status().message().starts_with("response_format: "));
  // Nobody waited for it any more: it left the cache, and the next caller compiles it afresh.
  EXPECT_EQ(c.stats().abandoned, 1);
  EXPECT_EQ(c.stats().cached, 0);
  EXPECT_TRUE(compile_now(c, spec(GrammarKind::kJsonSchema, R"({"type":"string"})")).is_ok());
  EXPECT_EQ(c.stats().cached, 1);
}

TEST(GrammarCompiler, ChoiceEbnfEscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(choice_grammar_ebnf({"a\"b", "c\\d", "e\nf"}),
            R"(root ::= "a\"b" | "c\\d" | "e\x0af")");
}

}  // namespace
}  // namespace llmserve::testing
