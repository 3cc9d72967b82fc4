// encode_limited (issue 23 item 3): the same ids as encode() while they fit, a prefix of them and
// over_limit once they do not, and a long piece that cannot fit is judged without merging it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/tokenizer/load_tokenizer.h"
#include "tests/unit/tokenizer/tokenizer_fixtures.h"

namespace llmserve {
namespace {

std::vector<std::unique_ptr<Tokenizer>> all_tokenizers() {
  std::vector<std::unique_ptr<Tokenizer>> out;
  std::vector<std::string> paths = {testing::fixture_path("bytelevel"),
                                    testing::fixture_path("spm"),
                                    testing::fixture_path("spm/tokenizer.gguf")};
  if (testing::test_model() != nullptr) paths.emplace_back(testing::test_model());
  for (const auto& p : paths) {
    auto tok = load_tokenizer(p);
    EXPECT_TRUE(tok.is_ok()) << p << ": " << tok.status().to_string();
    if (tok.is_ok()) out.push_back(std::move(tok).value());
  }
  return out;
}

bool is_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& of) {
  return a.size() <= of.size() && std::equal(a.begin(), a.end(), of.begin());
}

void expect_consistent(const Tokenizer& tok, const std::string& text, bool parse_special) {
  const std::vector<int32_t> full = tok.encode(text, true, parse_special);
  for (size_t limit : {size_t{0}, size_t{1}, size_t{3}, full.size() / 2, full.size() - 1,
                       full.size(), full.size() + 1, full.size() * 2 + 5}) {
    const LimitedEncoding e = tok.encode_limited(text, limit, true, parse_special);
    if (full.size() <= limit) {
      EXPECT_FALSE(e.over_limit) << limit;
      EXPECT_EQ(e.ids, full) << limit;
    } else {
      EXPECT_TRUE(e.over_limit) << "limit " << limit << " of " << full.size();
      EXPECT_LE(e.ids.size(), limit + 1);
      EXPECT_TRUE(is_prefix(e.ids, full)) << "limit " << limit;
    }
  }
}

TEST(EncodeLimit, SameIdsWhileTheyFitAndAPrefixOnceTheyDoNot) {
  std::string corpus;
  for (const auto& c : testing::load_corpus()) corpus += c.input + " ";
  const std::string long_word = "Hello world, " + std::string(20000, 'a') + " and more words";
  for (const auto& tok : all_tokenizers()) {
    for (bool parse_special : {true, false}) {
      expect_consistent(*tok, corpus, parse_special);
      expect_consistent(*tok, long_word, parse_special);
      expect_consistent(*tok, "<|im_start|>user\nhi<|im_end|>", parse_special);
      expect_consistent(*tok, "", parse_special);
    }
  }
}

TEST(EncodeLimit, LongWordGivesTheSameFirstTokensAsTheUnlimitedEncode) {
  // The first ids of a text that starts with a long word: a limit inside the word.
  const std::string text = std::string(50000, 'a') + " tail";
  for (const auto& tok : all_tokenizers()) {
    const std::vector<int32_t> full = tok->encode(text);
    ASSERT_GT(full.size(), 100u);
    const LimitedEncoding whole = tok->encode_limited(text, full.size());
    EXPECT_FALSE(whole.over_limit);
    EXPECT_EQ(whole.ids, full);
    const LimitedEncoding cut = tok->encode_limited(text, full.size() - 1);
    EXPECT_TRUE(cut.over_limit);
    EXPECT_TRUE(is_prefix(cut.ids, full));
  }
}

TEST(EncodeLimit, AWordThatCannotFitIsNotMerged) {
  // 4 MiB of one letter and a context-sized limit: the word's lower bound (bytes / the longest
  // token) is past the limit, so encoding stops before it with the ids of the words before.
  const std::string head = "Hello world,";
  const std::string text = head + " " + std::string(4 << 20, 'a');
  for (const auto& tok : all_tokenizers()) {
    const std::vector<int32_t> before = tok->encode(head);
    const LimitedEncoding e = tok->encode_limited(text, 8192);
    EXPECT_TRUE(e.over_limit);
    EXPECT_TRUE(is_prefix(e.ids, before)) << "merged the long word before judging it";
  }
}

}  // namespace
}  // namespace llmserve
