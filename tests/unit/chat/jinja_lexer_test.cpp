#include "engine/chat/jinja_lexer.h"

#include <gtest/gtest.h>

namespace llmserve::jinja {
namespace {

std::vector<std::string> texts(std::string_view src) {
  auto toks = tokenize(src);
  EXPECT_TRUE(toks.is_ok()) << toks.status().to_string();
  std::vector<std::string> out;
  if (!toks.is_ok()) return out;
  for (const auto& t : *toks) {
    if (t.type == TokenType::kText) out.push_back(t.value);
  }
  return out;
}

TEST(JinjaLexer, SplitsTagsAndExpressionTokens) {
  auto toks = tokenize("a{{ x.y + 1.5 }}b{% if n != 'q\\n' %}c");
  ASSERT_TRUE(toks.is_ok());
  std::vector<TokenType> types;
  for (const auto& t : *toks) types.push_back(t.type);
  std::vector<TokenType> want = {TokenType::kText,       TokenType::kVarBegin, TokenType::kName,
                                 TokenType::kOp,         TokenType::kName,     TokenType::kOp,
                                 TokenType::kFloat,      TokenType::kVarEnd,   TokenType::kText,
                                 TokenType::kBlockBegin, TokenType::kName,     TokenType::kName,
                                 TokenType::kOp,         TokenType::kString,   TokenType::kBlockEnd,
                                 TokenType::kText,       TokenType::kEof};
  EXPECT_EQ(types, want);
  EXPECT_EQ((*toks)[13].value, "q\n");
}

TEST(JinjaLexer, WhitespaceControl) {
  EXPECT_EQ(texts("a  {{- 1 -}}  b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(texts("a\n  {%- if x %}\n  b"), (std::vector<std::string>{"a", "  b"}));
  // trim_blocks removes the first newline after a block tag, lstrip_blocks the indentation before.
  EXPECT_EQ(texts("x\n    {% if y %}\nz"), (std::vector<std::string>{"x\n", "z"}));
  // '+' opts out of lstrip_blocks.
  EXPECT_EQ(texts("x\n    {%+ if y %}z"), (std::vector<std::string>{"x\n    ", "z"}));
  // Variables are not lstripped; one trailing newline of the template is dropped.
  EXPECT_EQ(texts("  {{ v }}\n"), (std::vector<std::string>{"  "}));
  EXPECT_EQ(texts("a{# note #}\nb"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(texts("a\r\nb"), (std::vector<std::string>{"a\nb"}));
}

TEST(JinjaLexer, RawBlock) {
  EXPECT_EQ(texts("{% raw %}{{ not parsed }}{% endraw %}"),
            (std::vector<std::string>{"{{ not parsed }}"}));
}

TEST(JinjaLexer, BracesInsideExpressionsBalance) {
  auto toks = tokenize("{{ {'a': {'b': 1}} }}");
  ASSERT_TRUE(toks.is_ok()) << toks.status().to_string();
}

TEST(JinjaLexer, ErrorsNameLineAndColumn) {
  auto r = tokenize("ok\n  {{ a $ b }}");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("line 2, column 8"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(tokenize("{{ 'unterminated }}").is_ok());
  EXPECT_FALSE(tokenize("{# never closed").is_ok());
  EXPECT_FALSE(tokenize("{{ a").is_ok());
  EXPECT_FALSE(tokenize("{{ a ) }}").is_ok());
}

}  // namespace
}  // namespace llmserve::jinja
