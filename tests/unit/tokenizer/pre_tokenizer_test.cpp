#include "engine/tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include "engine/tokenizer/utf8.h"
#include "tests/unit/tokenizer/tokenizer_fixtures.h"

namespace llmserve {
namespace {

// Piece boundaries of each named regex sequence equal HF tokenizers' pre-tokenizers.
TEST(PreTokenizer, SplitsMatchHfOnCorpus) {
  const auto corpus = testing::load_corpus();
  const auto splits = testing::load_json("pretokenizer_splits.json");
  for (const char* name : {"gpt2", "smollm", "llama-bpe", "qwen2"}) {
    SCOPED_TRACE(name);
    auto patterns = PreTokenizer::patterns_for(name);
    ASSERT_TRUE(patterns.is_ok()) << patterns.status().to_string();
    auto pre = PreTokenizer::create(*patterns);
    ASSERT_TRUE(pre.is_ok()) << pre.status().to_string();
    const auto& rows = splits.at(name);
    ASSERT_EQ(rows.size(), corpus.size());
    for (size_t i = 0; i < corpus.size(); ++i) {
      std::vector<std::string_view> pieces;
      (*pre)->split(corpus[i].repaired, pieces);
      std::vector<size_t> lens;
      for (auto p : pieces) lens.push_back(p.size());
      EXPECT_EQ(lens, rows[i].get<std::vector<size_t>>())
          << "case " << i << ": " << corpus[i].repaired;
    }
  }
}

TEST(PreTokenizer, UnknownNameIsAnError) {
  auto r = PreTokenizer::patterns_for("no-such-pre");
  EXPECT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
}

TEST(PreTokenizer, BadRegexIsAnError) {
  auto r = PreTokenizer::create({"(unclosed"});
  EXPECT_FALSE(r.is_ok());
}

TEST(PreTokenizer, SmollmSplitsDigitsOneByOne) {
  auto pre = PreTokenizer::create(*PreTokenizer::patterns_for("smollm"));
  ASSERT_TRUE(pre.is_ok());
  std::vector<std::string_view> pieces;
  (*pre)->split("ab 1234", pieces);
  EXPECT_EQ(pieces, (std::vector<std::string_view>{"ab", " ", "1", "2", "3", "4"}));
}

}  // namespace
}  // namespace llmserve
