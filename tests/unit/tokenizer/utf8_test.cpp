#include "engine/tokenizer/utf8.h"

#include <gtest/gtest.h>

#include "engine/tokenizer/byte_unicode_map.h"
#include "tests/unit/tokenizer/tokenizer_fixtures.h"

namespace llmserve {
namespace {

TEST(Utf8, SanitizeMatchesPythonReplaceOnCorpus) {
  int invalid = 0;
  for (const auto& c : testing::load_corpus()) {
    EXPECT_EQ(utf8_sanitize(c.input), c.repaired);
    EXPECT_TRUE(utf8_is_valid(c.repaired));
    invalid += c.invalid;
  }
  EXPECT_GE(invalid, 20);
}

TEST(Utf8, MaximalSubparts) {
  EXPECT_EQ(utf8_sanitize("\xE2\x82("), "\xEF\xBF\xBD(");  // one U+FFFD for E2 82
  EXPECT_EQ(utf8_sanitize("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(utf8_sanitize("\xF0\x9F\x98"), "\xEF\xBF\xBD");
  EXPECT_EQ(utf8_sanitize("ok"), "ok");
}

TEST(Utf8, NextAndAppendRoundTrip) {
  for (uint32_t cp : {0x41u, 0xE9u, 0x20ACu, 0x1F600u, 0x10FFFFu}) {
    std::string s;
    utf8_append(s, cp);
    size_t pos = 0;
    EXPECT_EQ(utf8_next(s, pos), cp);
    EXPECT_EQ(pos, s.size());
  }
}

TEST(ByteUnicodeMap, IsABijectionWithGpt2Examples) {
  EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");   // Ġ
  EXPECT_EQ(byte_to_unicode('\n'), "\xC4\x8A");  // Ċ
  EXPECT_EQ(byte_to_unicode('a'), "a");
  for (int b = 0; b < 256; ++b) {
    const std::string& u = byte_to_unicode(static_cast<uint8_t>(b));
    size_t pos = 0;
    EXPECT_EQ(unicode_to_byte(utf8_next(u, pos)), b);
  }
}

}  // namespace
}  // namespace llmserve
