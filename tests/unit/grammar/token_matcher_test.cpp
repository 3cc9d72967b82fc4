// TokenMatcher and the token bitmask: the mask allows exactly the grammar's next tokens, accept
// refuses what the grammar refuses, copies fork, rollback undoes, and a stop token terminates.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "engine/grammar/grammar_compiler.h"
#include "engine/grammar/token_bitmask.h"
#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve::testing {
namespace {

constexpr int32_t kMatcherVocab = 300;

CompiledGrammarPtr compile(const Tokenizer& tok, GrammarKind kind, std::string text) {
  static std::vector<std::unique_ptr<GrammarCompiler>> keep;
  keep.push_back(std::make_unique<GrammarCompiler>(tok, kMatcherVocab, GrammarCompilerOptions{}));
  GrammarSpec s;
  s.kind = kind;
  s.text = std::move(text);
  auto r =
      keep.back()->compile_and_wait(s, std::chrono::steady_clock::now() + std::chrono::seconds(60));
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : nullptr;
}

std::vector<int32_t> allowed(TokenMatcher& m) {
  std::vector<uint32_t> mask(token_bitmask_words(kMatcherVocab));
  m.fill_next_token_mask(mask);
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < kMatcherVocab; ++id) {
    if (token_allowed(mask, id)) ids.push_back(id);
  }
  return ids;
}

TEST(TokenBitmask, MasksExactlyTheClearedBitsAndEverythingPastTheMask) {
  std::vector<float> logits(70, 1.0f);
  std::vector<uint32_t> mask = {0xFFFFFFFFu, 0x00000005u};  // ids 0-31, 32, 34; 64.. past it
  apply_token_bitmask(logits, mask);
  for (int id = 0; id < 70; ++id) {
    const bool keep = id < 32 || id == 32 || id == 34;
    EXPECT_EQ(logits[id], keep ? 1.0f : -std::numeric_limits<float>::infinity()) << id;
  }
  EXPECT_TRUE(token_allowed(mask, 34));
  EXPECT_FALSE(token_allowed(mask, 33));
  EXPECT_FALSE(token_allowed(mask, 64));
}

TEST(TokenMatcher, MaskFollowsTheRegexAndStopEndsIt) {
  FakeTokenizer tok;
  auto g = compile(tok, GrammarKind::kRegex, "ab?c");
  ASSERT_NE(g, nullptr);
  TokenMatcher m = g->make_matcher();
  const int32_t a = tok.bytes_of("a")[0], b = tok.bytes_of("b")[0], c = tok.bytes_of("c")[0];
  EXPECT_EQ(allowed(m), std::vector<int32_t>({a}));
  EXPECT_FALSE(m.accept(b));  // refused, nothing changes
  EXPECT_TRUE(m.accept(a));
  EXPECT_EQ(allowed(m), std::vector<int32_t>({b, c}));
  EXPECT_TRUE(m.accept(c));
  EXPECT_TRUE(m.is_completed());
  EXPECT_FALSE(m.is_terminated());
  // Complete: only the stop tokens may follow.
  EXPECT_EQ(allowed(m), std::vector<int32_t>({FakeTokenizer::kEos, FakeTokenizer::kImEnd}));
  EXPECT_TRUE(m.accept(FakeTokenizer::kImEnd));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_TRUE(allowed(m).empty());
  EXPECT_FALSE(m.accept(a));
  EXPECT_EQ(m.num_accepted(), 3);
}

TEST(TokenMatcher, MultiBytePiecesAndSpecialTokens) {
  FakeTokenizer tok;
  auto g = compile(tok, GrammarKind::kRegex, "hello world");
  ASSERT_NE(g, nullptr);
  TokenMatcher m = g->make_matcher();
  const std::vector<int32_t> first = allowed(m);
  // "h" and the piece "hello" start it; no special token ever appears inside the text.
  EXPECT_NE(std::find(first.begin(), first.end(), tok.id_of("hello")), first.end());
  EXPECT_NE(std::find(first.begin(), first.end(), tok.bytes_of("h")[0]), first.end());
  EXPECT_EQ(std::find(first.begin(), first.end(), FakeTokenizer::kEos), first.end());
  EXPECT_TRUE(m.accept(tok.id_of("hello")));
  EXPECT_FALSE(m.accept(tok.id_of(" the")));
  EXPECT_TRUE(m.accept(tok.id_of(" wor")));
  EXPECT_TRUE(m.accept(tok.id_of("ld")));
  EXPECT_TRUE(m.is_completed());
}

TEST(TokenMatcher, CopiesForkAndRollbackUndoes) {
  FakeTokenizer tok;
  auto g = compile(tok, GrammarKind::kRegex, "(ab|ac)d");
  ASSERT_NE(g, nullptr);
  const int32_t a = tok.bytes_of("a")[0], b = tok.bytes_of("b")[0], c = tok.bytes_of("c")[0],
                d = tok.bytes_of("d")[0];
  TokenMatcher m = g->make_matcher();
  ASSERT_TRUE(m.accept(a));
  TokenMatcher fork = m;
  ASSERT_TRUE(fork.accept(b));
  EXPECT_EQ(allowed(fork), std::vector<int32_t>({d}));
  EXPECT_EQ(allowed(m), std::vector<int32_t>({b, c}));  // the original did not move
  fork.rollback(1);
  EXPECT_EQ(allowed(fork), std::vector<int32_t>({b, c}));
  EXPECT_TRUE(fork.accept(c));
  EXPECT_TRUE(fork.accept(d));
  EXPECT_TRUE(fork.is_completed());
  fork.rollback(10);  // clamped to what was accepted
  EXPECT_EQ(fork.num_accepted(), 0);
  EXPECT_EQ(allowed(fork), std::vector<int32_t>({a}));
}

}  // namespace
}  // namespace llmserve::testing
