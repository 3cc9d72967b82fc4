#include "engine/tokenizer/utf8.h"

#include <gtest/gtest.h>

#include <random>

namespace llmserve {
namespace {

TEST(Utf8, IncompleteTail) {
  EXPECT_EQ(utf8_incomplete_tail(""), 0u);
  EXPECT_EQ(utf8_incomplete_tail("abc"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE2"), 1u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE2\x82"), 2u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE2\x82\xAC"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8_incomplete_tail("\xE0\x80"), 0u);  // E0 80 can never complete
  EXPECT_EQ(utf8_incomplete_tail("\x80"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("\xC0"), 0u);
}

TEST(Utf8, SanitizeReplacesMaximalSubparts) {
  EXPECT_EQ(utf8_sanitize("h\xC3\xA9llo"), "h\xC3\xA9llo");
  EXPECT_EQ(utf8_sanitize("a\xE2\x82z"), "a\xEF\xBF\xBDz");          // one U+FFFD for E2 82
  EXPECT_EQ(utf8_sanitize("\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // each stray byte
  EXPECT_EQ(utf8_sanitize("\xF4\x90"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // F4 90 is out of range
  EXPECT_EQ(utf8_sanitize("\xF0\x9F\x98"), "\xEF\xBF\xBD");
}

TEST(Utf8, SanitizeSplitsAtCompleteBoundaries) {
  std::mt19937 gen(1);
  const std::vector<std::string> pieces = {"a",    "\xC3", "\xA9", "\xE2", "\x82", "\xAC", "\xF0",
                                           "\x9F", "\x98", "\x80", "\xFF", "\xED", "\xA0", "z"};
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s;
    const int n = 1 + gen() % 12;
    for (int i = 0; i < n; ++i) s += pieces[gen() % pieces.size()];
    const std::string whole = utf8_sanitize(s);
    EXPECT_TRUE(utf8_is_valid(whole));
    for (size_t cut = 0; cut <= s.size(); ++cut) {
      const std::string_view head = std::string_view(s).substr(0, cut);
      if (utf8_incomplete_tail(head) != 0) continue;
      EXPECT_EQ(utf8_sanitize(head) + utf8_sanitize(s.substr(cut)), whole);
    }
  }
}

}  // namespace
}  // namespace llmserve
