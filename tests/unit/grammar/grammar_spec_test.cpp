#include "engine/grammar/grammar_spec.h"

#include <string>

#include <gtest/gtest.h>

namespace llmserve {
namespace {

GrammarSpec spec(GrammarKind kind, std::string text, std::vector<std::string> choices = {}) {
  GrammarSpec s;
  s.kind = kind;
  s.text = std::move(text);
  s.choices = std::move(choices);
  return s;
}

TEST(GrammarSpec, KindNames) {
  EXPECT_STREQ(grammar_kind_name(GrammarKind::kJsonObject), "json_object");
  EXPECT_STREQ(grammar_kind_name(GrammarKind::kJsonSchema), "json_schema");
  EXPECT_STREQ(grammar_kind_name(GrammarKind::kRegex), "regex");
  EXPECT_STREQ(grammar_kind_name(GrammarKind::kChoice), "choice");
  EXPECT_STREQ(grammar_kind_name(GrammarKind::kEbnf), "ebnf");
}

TEST(GrammarSpec, KeyIsStableAndIgnoresTheField) {
  GrammarSpec a = spec(GrammarKind::kRegex, "[a-z]+");
  GrammarSpec b = a;
  b.field = "guided_regex";
  EXPECT_EQ(a.key(), b.key());
  // Pinned: the key must not change between runs or builds (it names cached compilations).
  EXPECT_EQ(a.key(), spec(GrammarKind::kRegex, "[a-z]+").key());
  EXPECT_NE(a.key(), 0u);
}

TEST(GrammarSpec, KeySeparatesKindTextAndChoices) {
  const uint64_t regex = spec(GrammarKind::kRegex, "a").key();
  EXPECT_NE(regex, spec(GrammarKind::kEbnf, "a").key());
  EXPECT_NE(regex, spec(GrammarKind::kRegex, "b").key());
  const uint64_t ab_c = spec(GrammarKind::kChoice, "", {"ab", "c"}).key();
  EXPECT_NE(ab_c, spec(GrammarKind::kChoice, "", {"a", "bc"}).key());
  EXPECT_NE(ab_c, spec(GrammarKind::kChoice, "", {"c", "ab"}).key());
  EXPECT_NE(ab_c, spec(GrammarKind::kChoice, "", {"ab", "c", ""}).key());
  EXPECT_NE(spec(GrammarKind::kChoice, "x", {}).key(), spec(GrammarKind::kChoice, "", {"x"}).key());
}

}  // namespace
}  // namespace llmserve
