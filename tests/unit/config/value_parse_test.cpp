#include "config/value_parse.h"

#include <gtest/gtest.h>

namespace llmserve {
namespace {

TEST(ParseSize, PlainBytesAndUnits) {
  EXPECT_EQ(*parse_size("1048576"), 1048576u);
  EXPECT_EQ(*parse_size("0"), 0u);
  EXPECT_EQ(*parse_size("512MiB"), 512ull << 20);
  EXPECT_EQ(*parse_size("2GiB"), 2ull << 30);
  EXPECT_EQ(*parse_size("8MB"), 8000000u);
  EXPECT_EQ(*parse_size("1KB"), 1000u);
  EXPECT_EQ(*parse_size("1kB"), 1000u);
  EXPECT_EQ(*parse_size("3KiB"), 3072u);
  EXPECT_EQ(*parse_size("1kib"), 1024u);
  EXPECT_EQ(*parse_size("7B"), 7u);
  EXPECT_EQ(*parse_size("1TiB"), 1ull << 40);
  EXPECT_EQ(*parse_size("2TB"), 2000000000000ull);
  EXPECT_EQ(*parse_size(" 4 KiB "), 4096u);
  EXPECT_EQ(*parse_size("1.5GiB"), 3ull << 29);
  EXPECT_EQ(*parse_size("0.5KB"), 500u);
}

TEST(ParseSize, RejectsBadText) {
  for (const char* bad : {"", "MiB", "12XB", "12 M", "-1", "1.5", "1.5B", "1e3", "0x10", "1..5GiB",
                          "5 GiB extra", "GiB5", "99999999999TiB", "18446744073709551616"}) {
    const Result<uint64_t> r = parse_size(bad);
    EXPECT_FALSE(r.is_ok()) << bad;
  }
  const Result<uint64_t> r = parse_size("12XB");
  EXPECT_NE(r.status().message().find("\"12XB\""), std::string::npos) << r.status().message();
}

TEST(FormatSize, LargestExactBinaryUnitAndRoundTrip) {
  EXPECT_EQ(format_size(8ull << 20), "8MiB");
  EXPECT_EQ(format_size(1ull << 30), "1GiB");
  EXPECT_EQ(format_size(1536), "1536");
  EXPECT_EQ(format_size(1000), "1000");
  EXPECT_EQ(format_size(0), "0");
  for (uint64_t v : {0ull, 1ull, 1000ull, 4096ull, 3ull << 29, 64ull << 40, 123456789ull}) {
    EXPECT_EQ(*parse_size(format_size(v)), v) << v;
  }
}

TEST(ParseBool, AcceptsCommonSpellings) {
  for (const char* t : {"true", "TRUE", "yes", "on", "1", " True "})
    EXPECT_TRUE(*parse_bool(t)) << t;
  for (const char* f : {"false", "No", "off", "0"}) EXPECT_FALSE(*parse_bool(f)) << f;
  for (const char* bad : {"", "maybe", "2", "tru"}) EXPECT_FALSE(parse_bool(bad).is_ok()) << bad;
}

TEST(ParseInt, WholeDecimalOnly) {
  EXPECT_EQ(*parse_int("42"), 42);
  EXPECT_EQ(*parse_int("+7"), 7);
  EXPECT_EQ(*parse_int("-3"), -3);
  EXPECT_EQ(*parse_int(" 9 "), 9);
  for (const char* bad : {"", "12abc", "1.5", "0x10", "1e3", "--1", "99999999999999999999"}) {
    EXPECT_FALSE(parse_int(bad).is_ok()) << bad;
  }
}

TEST(ParseDouble, FiniteNumbers) {
  EXPECT_DOUBLE_EQ(*parse_double("0.9"), 0.9);
  EXPECT_DOUBLE_EQ(*parse_double("30"), 30.0);
  EXPECT_DOUBLE_EQ(*parse_double("1e-3"), 1e-3);
  for (const char* bad : {"", "nan", "inf", "0.9x", "fast"}) {
    EXPECT_FALSE(parse_double(bad).is_ok()) << bad;
  }
}

TEST(SplitList, TrimsAndDropsEmptyItems) {
  EXPECT_EQ(split_list("a, b ,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split_list(""), std::vector<std::string>{});
  EXPECT_EQ(split_list(" , ,"), std::vector<std::string>{});
  EXPECT_EQ(split_list("https://x.org"), std::vector<std::string>{"https://x.org"});
}

}  // namespace
}  // namespace llmserve
