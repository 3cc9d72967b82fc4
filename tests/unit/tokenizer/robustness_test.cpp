// Random bytes and random id lists never crash; encode output is always in range and decodes back.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "engine/tokenizer/load_tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/unit/tokenizer/tokenizer_fixtures.h"

namespace llmserve {
namespace {

void fuzz(const Tokenizer& tok, int cases, bool lossless) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> len(0, 64), byte(0, 255), coin(0, 3);
  const std::string specials[] = {"<|im_start|>", "<s>", "</s>", "<|eot_id|>",
                                  "\xF0\x9F",     " ",   "\n"};
  for (int i = 0; i < cases; ++i) {
    std::string text;
    const int n = len(rng);
    for (int k = 0; k < n; ++k) {
      if (coin(rng) == 0) {
        text += specials[byte(rng) % std::size(specials)];
      } else {
        text.push_back(static_cast<char>(coin(rng) == 1 ? byte(rng) : 'a' + byte(rng) % 26));
      }
    }
    const auto ids = tok.encode(text, true, i % 2 == 0);
    for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok.vocab_size()) << id;
    if (lossless) {
      const auto plain = tok.encode(text, false, false);
      ASSERT_EQ(tok.decode(plain), utf8_sanitize(text)) << "case " << i;
    }
    std::vector<int32_t> random_ids(len(rng));
    std::uniform_int_distribution<int32_t> id(-5, tok.vocab_size() + 5);
    for (auto& x : random_ids) x = id(rng);
    (void)tok.decode(random_ids, i % 3 == 0);
    for (int32_t x : random_ids)
      (void)tok.token_bytes(x), (void)tok.token_text(x), (void)tok.is_special(x);
  }
}

TEST(TokenizerRobustness, SentencePieceRandomInput) {
  auto tok = load_tokenizer(testing::fixture_path("spm"));
  ASSERT_TRUE(tok.is_ok());
  fuzz(**tok, 3000, /*lossless=*/false);  // SentencePiece decode drops the leading space
}

TEST(TokenizerRobustness, ByteLevelRandomInput) {
  auto tok = load_tokenizer(testing::fixture_path("bytelevel"));
  ASSERT_TRUE(tok.is_ok());
  fuzz(**tok, 3000, /*lossless=*/true);
}

TEST(TokenizerRobustness, SmolLM2RandomInput) {
  if (testing::test_model() == nullptr) GTEST_SKIP() << "LLMSERVE_TEST_MODEL is not set";
  auto tok = load_tokenizer(testing::test_model());
  ASSERT_TRUE(tok.is_ok());
  fuzz(**tok, 2000, /*lossless=*/false);  // 21 control bytes are not in SmolLM2's vocab
}

TEST(TokenizerRobustness, CorruptTokenizerJsonIsAnError) {
  // Truncations of a real tokenizer.json must give errors, not crashes.
  const std::string dir = ::testing::TempDir() + "/tok_corrupt";
  std::filesystem::create_directories(dir);
  std::ifstream in(testing::fixture_path("bytelevel/tokenizer.json"));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string full = ss.str();
  for (size_t cut : {size_t{0}, size_t{1}, full.size() / 3, full.size() / 2, full.size() - 2}) {
    std::ofstream(dir + "/tokenizer.json") << full.substr(0, cut);
    EXPECT_FALSE(tokenizer_spec_from_hf_dir(dir).is_ok()) << cut;
  }
  std::ofstream(dir + "/tokenizer.json") << R"({"model": {"type": "BPE", "vocab": {"a": -1}}})";
  EXPECT_FALSE(tokenizer_spec_from_hf_dir(dir).is_ok());
  std::ofstream(dir + "/tokenizer.json")
      << R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [3]}})";
  EXPECT_FALSE(tokenizer_spec_from_hf_dir(dir).is_ok());
}

}  // namespace
}  // namespace llmserve
