// Ids and decoded text identical to HF tokenizers on every corpus string (fixtures from
// tests/reference/make_tokenizer_fixtures.py).
#include <gtest/gtest.h>

#include "engine/model/gguf_file.h"
#include "engine/tokenizer/load_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/unit/tokenizer/tokenizer_fixtures.h"

namespace llmserve {
namespace {

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

void expect_matches_oracle(const Tokenizer& tok, const std::string& rows_file) {
  const auto corpus = testing::load_corpus();
  const auto rows = testing::load_rows(rows_file);
  ASSERT_EQ(corpus.size(), rows.size());
  ASSERT_GE(corpus.size(), 300u);
  int encode_mismatch = 0, raw_mismatch = 0, decode_mismatch = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const auto& c = corpus[i];
    const auto ids = tok.encode(c.input, /*add_special=*/true, /*parse_special=*/true);
    if (ids != rows[i].ids) {
      if (++encode_mismatch <= 5) {
        ADD_FAILURE() << "case " << i << " '" << c.repaired << "'\n ours:   " << show(ids)
                      << "\n oracle: " << show(rows[i].ids);
      }
    }
    if (tok.encode(c.input, true, /*parse_special=*/false) != rows[i].ids_no_parse_special) {
      if (++raw_mismatch <= 5)
        ADD_FAILURE() << "parse_special=false, case " << i << " '" << c.repaired << "'";
    }
    const std::string expect = rows[i].decoded.value_or(c.repaired);
    if (tok.decode(rows[i].ids) != expect) {
      if (++decode_mismatch <= 5) {
        ADD_FAILURE() << "decode, case " << i << " '" << tok.decode(rows[i].ids) << "' vs '"
                      << expect << "'";
      }
    }
  }
  EXPECT_EQ(encode_mismatch, 0);
  EXPECT_EQ(raw_mismatch, 0);
  EXPECT_EQ(decode_mismatch, 0);
}

TEST(TokenizerOracle, SmolLM2GgufMatchesHfTokenizers) {
  if (testing::test_model() == nullptr) GTEST_SKIP() << "LLMSERVE_TEST_MODEL is not set";
  auto tok = load_tokenizer(testing::test_model());
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->spec().pre, "smollm");
  expect_matches_oracle(**tok, "smollm2_ids.json");
}

TEST(TokenizerOracle, SentencePieceTokenizerJsonMatchesHfTokenizers) {
  auto tok = load_tokenizer(testing::fixture_path("spm"));
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->spec().kind, TokenizerKind::kSentencePieceBpe);
  EXPECT_FALSE((*tok)->spec().merges.empty());
  expect_matches_oracle(**tok, "spm_ids.json");
}

TEST(TokenizerOracle, SentencePieceGgufWithScoresMatchesHfTokenizers) {
  auto tok = load_tokenizer(testing::fixture_path("spm/tokenizer.gguf"));
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->spec().kind, TokenizerKind::kSentencePieceBpe);
  EXPECT_TRUE((*tok)->spec().merges.empty());  // merges by score
  expect_matches_oracle(**tok, "spm_ids.json");
}

TEST(TokenizerOracle, ByteLevelLlama3RegexTokenizerJsonMatchesHfTokenizers) {
  auto tok = load_tokenizer(testing::fixture_path("bytelevel"));
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->spec().kind, TokenizerKind::kByteLevelBpe);
  expect_matches_oracle(**tok, "bytelevel_ids.json");
}

}  // namespace
}  // namespace llmserve
