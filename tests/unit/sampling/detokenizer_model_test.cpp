// The detokenizer and stop checker on the default model's real tokenizer
// (LLMSERVE_TEST_MODEL; skipped when unset).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "engine/runner/detokenizer.h"
#include "engine/runner/stop_checker.h"
#include "engine/tokenizer/load_tokenizer.h"
#include "engine/tokenizer/utf8.h"

namespace llmserve {
namespace {

const Tokenizer* model_tokenizer() {
  static std::unique_ptr<Tokenizer> tok = [] {
    const char* path = std::getenv("LLMSERVE_TEST_MODEL");
    if (path == nullptr || *path == '\0') return std::unique_ptr<Tokenizer>();
    auto loaded = load_tokenizer(path);
    EXPECT_TRUE(loaded.is_ok()) << loaded.status().to_string();
    return loaded.is_ok() ? std::move(loaded).value() : std::unique_ptr<Tokenizer>();
  }();
  return tok.get();
}

#define REQUIRE_MODEL_TOKENIZER(tok)        \
  const Tokenizer* tok = model_tokenizer(); \
  if (tok == nullptr) GTEST_SKIP() << "LLMSERVE_TEST_MODEL not set"

std::string stream_all(Detokenizer& d, const std::vector<int32_t>& ids, bool* all_valid) {
  std::string out;
  for (int32_t id : ids) {
    std::string delta = d.append(id);
    *all_valid = *all_valid && utf8_is_valid(delta);
    out += delta;
  }
  std::string rest = d.flush();
  *all_valid = *all_valid && utf8_is_valid(rest);
  return out + rest;
}

TEST(DetokenizerModel, RandomIdSequencesMatchFullDecode) {
  REQUIRE_MODEL_TOKENIZER(tok);
  std::mt19937 gen(123);
  const int32_t vocab = tok->vocab_size();
  // Ids whose bytes are not valid UTF-8 on their own (byte-level pieces of split characters).
  std::vector<int32_t> partial;
  for (int32_t id = 0; id < vocab; ++id) {
    if (!utf8_is_valid(tok->token_bytes(id))) partial.push_back(id);
  }
  ASSERT_FALSE(partial.empty());
  for (int iter = 0; iter < 2000; ++iter) {
    std::vector<int32_t> ids;
    const int n = gen() % 40;
    for (int i = 0; i < n; ++i) {
      const uint32_t r = gen() % 10;
      ids.push_back(r < 4   ? partial[gen() % partial.size()]
                    : r < 5 ? static_cast<int32_t>(gen() % 20)
                            : static_cast<int32_t>(gen() % vocab));
    }
    for (bool skip : {true, false}) {
      Detokenizer d(*tok, skip);
      bool valid = true;
      const std::string streamed = stream_all(d, ids, &valid);
      ASSERT_TRUE(valid) << "iteration " << iter;
      ASSERT_EQ(streamed, utf8_sanitize(tok->decode(ids, skip))) << "iteration " << iter;
    }
  }
}

TEST(DetokenizerModel, EncodedTextRoundTripsExactly) {
  REQUIRE_MODEL_TOKENIZER(tok);
  const std::vector<std::string> texts = {
      "Hello, world! The quick brown fox jumps over 13 lazy dogs.",
      "Ünïcödé — naïve café, 日本語のテキスト, 한국어, emoji 😀🎉👩‍👩‍👧 and "
      "math "
      "∑∫√.",
      "  leading spaces\n\ttabs\nand 1234567890 digits",
  };
  for (const std::string& text : texts) {
    const auto ids = tok->encode(text, false, false);
    Detokenizer d(*tok, true);
    bool valid = true;
    EXPECT_EQ(stream_all(d, ids, &valid), text);
    EXPECT_TRUE(valid);
  }
}

TEST(DetokenizerModel, StopStringOnRealTokens) {
  REQUIRE_MODEL_TOKENIZER(tok);
  const std::string text = "The answer is 42. Next question: what is 😀? The end.";
  const auto ids = tok->encode(text, false, false);
  for (const std::string& stop :
       {std::string("question"), std::string("😀?"), std::string("42. N")}) {
    SamplingParams p;
    p.stop = {stop};
    StopChecker sc(*tok, p, tok->spec().stop_ids, 1000);
    std::string joined;
    for (int32_t id : ids) {
      if (sc.finished()) break;
      joined += sc.append(id).text;
    }
    ASSERT_TRUE(sc.finished()) << stop;
    EXPECT_EQ(joined, text.substr(0, text.find(stop)));
    EXPECT_EQ(sc.text(), joined);
  }
}

}  // namespace
}  // namespace llmserve
