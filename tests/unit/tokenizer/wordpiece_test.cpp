// WordPiece (BERT) ids against HF tokenizers (tests/reference/make_bert_fixtures.py's
// expected.json: tokenizers' ids of a corpus with punctuation, accents, CJK, Greek, unknown
// words, special tokens in the text, control whitespace and a word over 100 characters), from
// the HF tokenizer.json, from the GGUF llama.cpp's converter writes, and from a bare vocab.txt.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/tokenizer/load_tokenizer.h"

namespace llmserve {
namespace {

using json = nlohmann::json;

std::string fixture(const std::string& rel) {
  return std::string(LLMSERVE_FIXTURES_DIR) + "/" + rel;
}

json expected() {
  std::ifstream in(fixture("tiny_bert/expected.json"));
  return json::parse(in);
}

void expect_ids(const std::string& path) {
  auto tok = load_tokenizer(path);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  const json ex = expected();
  ASSERT_GE(ex["texts"].size(), 10u);
  for (size_t i = 0; i < ex["texts"].size(); ++i) {
    const auto text = ex["texts"][i].get<std::string>();
    EXPECT_EQ((*tok)->encode(text), ex["ids"][i].get<std::vector<int32_t>>())
        << path << ": " << text;
  }
}

TEST(WordPiece, HfTokenizerJsonMatchesTokenizers) {
  expect_ids(fixture("tiny_bert"));
}

TEST(WordPiece, GgufMatchesTokenizers) {
  expect_ids(fixture("tiny_bert/model.gguf"));
}

TEST(WordPiece, VocabTxtMatchesTokenizers) {
  const auto dir = std::filesystem::temp_directory_path() / "llmserve_wordpiece_vocab_txt";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(fixture("../reference/bert_vocab.txt"), dir / "vocab.txt",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "tokenizer_config.json") << R"({"do_lower_case": true})";
  expect_ids(dir.string());
  std::filesystem::remove_all(dir);
}

TEST(WordPiece, SpecialTokensAndDecode) {
  auto tok = load_tokenizer(fixture("tiny_bert"));
  ASSERT_TRUE(tok.is_ok());
  const Tokenizer& t = **tok;
  const auto plain = t.encode("hello [MASK]", /*add_special=*/false, /*parse_special=*/false);
  const auto parsed = t.encode("hello [MASK]", /*add_special=*/false, /*parse_special=*/true);
  EXPECT_EQ(parsed.size(), 2u);
  EXPECT_GT(plain.size(), parsed.size());  // "[", "mask", "]" as text
  EXPECT_TRUE(t.is_special(parsed[1]));
  EXPECT_EQ(t.decode(t.encode("Hello, world. The lazy dog!"), /*skip_special=*/true),
            "hello, world. the lazy dog!");
  EXPECT_EQ(t.spec().kind, TokenizerKind::kWordPiece);
}

TEST(WordPiece, RefusesWhatItDoesNotImplement) {
  const auto dir = std::filesystem::temp_directory_path() / "llmserve_wordpiece_bad";
  std::filesystem::create_directories(dir);
  std::ifstream in(fixture("tiny_bert/tokenizer.json"));
  json tok = json::parse(in);
  tok["normalizer"] = {{"type", "NFKC"}};
  std::ofstream(dir / "tokenizer.json") << tok.dump();
  auto bad = load_tokenizer(dir.string());
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("NFKC"), std::string::npos) << bad.status().to_string();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace llmserve
