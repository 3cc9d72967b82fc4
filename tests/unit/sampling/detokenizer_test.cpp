#include "engine/runner/detokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "engine/tokenizer/utf8.h"
#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve {
namespace {

using testing::FakeTokenizer;

std::vector<std::string> stream(Detokenizer& d, const std::vector<int32_t>& ids) {
  std::vector<std::string> deltas;
  for (int32_t id : ids) deltas.push_back(d.append(id));
  deltas.push_back(d.flush());
  return deltas;
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += p;
  return s;
}

TEST(Detokenizer, HoldsSplitCharacterUntilComplete) {
  FakeTokenizer tok;
  Detokenizer d(tok, true);
  EXPECT_EQ(d.append(tok.id_of("hello")), "hello");
  EXPECT_EQ(d.append(tok.id_of("\xE2\x82")), "");
  EXPECT_EQ(d.append(tok.id_of("\xAC")), "\xE2\x82\xAC");
  EXPECT_EQ(d.append(tok.id_of("\xF0\x9F")), "");
  EXPECT_EQ(d.append(tok.id_of("\x98\x80")), "\xF0\x9F\x98\x80");
  EXPECT_EQ(d.append(tok.id_of(" world")), " world");
  EXPECT_EQ(d.flush(), "");
}

TEST(Detokenizer, BrokenAndTrailingBytesBecomeReplacement) {
  FakeTokenizer tok;
  Detokenizer d(tok, true);
  EXPECT_EQ(d.append(tok.id_of("\xE2\x82")), "");
  EXPECT_EQ(d.append(tok.id_of("ld")), "\xEF\xBF\xBDld");
  EXPECT_EQ(d.append(tok.id_of("\xC3")), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");
}

TEST(Detokenizer, SkipSpecialTokens) {
  FakeTokenizer tok;
  Detokenizer skip(tok, true);
  EXPECT_EQ(join(stream(skip, {tok.id_of("hello"), FakeTokenizer::kImEnd, tok.id_of(" the")})),
            "hello the");
  Detokenizer keep(tok, false);
  EXPECT_EQ(join(stream(keep, {tok.id_of("hello"), FakeTokenizer::kImEnd})), "hello<|im_end|>");
}

TEST(Detokenizer, SentencePieceStripsOnlyTheFirstLeadingSpace) {
  FakeTokenizer tok(true);
  Detokenizer d(tok, true);
  auto deltas =
      stream(d, {FakeTokenizer::kEos, tok.id_of(" the"), tok.id_of(" world"), tok.id_of(" ")});
  EXPECT_EQ(join(deltas), "the world ");
  EXPECT_EQ(deltas[2], " world");
  // With prompt context the first output token keeps its space and the context is not emitted.
  const std::vector<int32_t> ctx = {tok.id_of("hello")};
  Detokenizer c(tok, true, ctx);
  EXPECT_EQ(join(stream(c, {tok.id_of(" the"), tok.id_of(" world")})), " the world");
}

// Property: the deltas are valid UTF-8 and concatenate to the (sanitized) full decode.
void check_random_sequences(const FakeTokenizer& tok, bool skip, uint32_t seed) {
  std::mt19937 gen(seed);
  // Mostly multi-byte pieces and specials, some raw bytes.
  std::vector<int32_t> pool = {FakeTokenizer::kEos, FakeTokenizer::kImEnd};
  for (int32_t id = FakeTokenizer::kFirstByte + 256; id < tok.vocab_size(); ++id)
    pool.push_back(id);
  for (int b : {0x20, 0x41, 0x61, 0x80, 0xA9, 0xC3, 0xE2, 0xF0, 0xFF})
    pool.push_back(FakeTokenizer::kFirstByte + b);
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<int32_t> ids;
    const int n = gen() % 20;
    for (int i = 0; i < n; ++i) ids.push_back(pool[gen() % pool.size()]);
    Detokenizer d(tok, skip);
    auto deltas = stream(d, ids);
    for (const auto& s : deltas) ASSERT_TRUE(utf8_is_valid(s));
    ASSERT_EQ(join(deltas), utf8_sanitize(tok.decode(ids, skip))) << "iteration " << iter;
  }
}

TEST(Detokenizer, RandomSequencesMatchFullDecodeByteLevel) {
  FakeTokenizer tok;
  check_random_sequences(tok, true, 1);
  check_random_sequences(tok, false, 2);
}

TEST(Detokenizer, RandomSequencesMatchFullDecodeSentencePiece) {
  FakeTokenizer tok(true);
  check_random_sequences(tok, true, 3);
  check_random_sequences(tok, false, 4);
}

}  // namespace
}  // namespace llmserve
