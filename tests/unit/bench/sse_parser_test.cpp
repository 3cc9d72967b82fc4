#include "bench/serve/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace llmserve::bench {
namespace {

// A stream as a server might send it: a comment, LF and CRLF line ends, a multi-line event,
// an "event:" field, id/retry fields, a data line with no space after the colon, and [DONE].
const std::string kStream =
    ": keep-alive\n\n"
    "data: {\"choices\":[{\"text\":\"Hel\"}]}\n\n"
    "data: {\"choices\":[{\"text\":\"lo\"}]}\r\n\r\n"
    "id: 7\r\nretry: 100\r\ndata: line one\r\ndata:line two\r\n\r\n"
    "event: usage\ndata: {\"usage\":{\"completion_tokens\":2}}\n\n"
    "data\n\n"
    ": trailing comment\r\r"
    "data: [DONE]\n\n";

const std::vector<SseEvent> kExpected = {
    {"", "{\"choices\":[{\"text\":\"Hel\"}]}"},
    {"", "{\"choices\":[{\"text\":\"lo\"}]}"},
    {"", "line one\nline two"},
    {"usage", "{\"usage\":{\"completion_tokens\":2}}"},
    {"", ""},
    {"", "[DONE]"},
};

std::vector<SseEvent> parse_pieces(const std::vector<std::string_view>& pieces) {
  std::vector<SseEvent> got;
  SseParser p([&](const SseEvent& e) { got.push_back(e); });
  for (auto piece : pieces) p.feed(piece);
  return got;
}

void expect_events(const std::vector<SseEvent>& got, const std::string& where) {
  ASSERT_EQ(got.size(), kExpected.size()) << where;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].event, kExpected[i].event) << where << " event " << i;
    EXPECT_EQ(got[i].data, kExpected[i].data) << where << " event " << i;
  }
}

TEST(SseParser, WholeStream) {
  expect_events(parse_pieces({kStream}), "whole");
}

TEST(SseParser, EverySingleSplitPoint) {
  const std::string_view s(kStream);
  for (size_t i = 0; i <= s.size(); ++i) {
    expect_events(parse_pieces({s.substr(0, i), s.substr(i)}), "split at " + std::to_string(i));
  }
}

TEST(SseParser, EveryPairOfSplitPoints) {
  const std::string_view s(kStream);
  for (size_t i = 0; i <= s.size(); ++i) {
    for (size_t j = i; j <= s.size(); ++j) {
      auto got = parse_pieces({s.substr(0, i), s.substr(i, j - i), s.substr(j)});
      if (got.size() != kExpected.size()) {
        FAIL() << "split at " << i << "," << j;
      }
      for (size_t k = 0; k < got.size(); ++k) {
        if (got[k].data != kExpected[k].data) FAIL() << "split at " << i << "," << j;
      }
    }
  }
}

TEST(SseParser, ByteAtATime) {
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < kStream.size(); ++i)
    bytes.push_back(std::string_view(kStream).substr(i, 1));
  expect_events(parse_pieces(bytes), "bytewise");
}

TEST(SseParser, UnterminatedEventIsHeldNotDispatched) {
  std::vector<SseEvent> got;
  SseParser p([&](const SseEvent& e) { got.push_back(e); });
  p.feed("data: {\"a\":1}\n");
  EXPECT_TRUE(got.empty());
  p.feed("data: partial");
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(p.pending_bytes(), 13u);
  p.feed("\n\n");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].data, "{\"a\":1}\npartial");
}

TEST(SseParser, LeadingBomIsSkipped) {
  auto got = parse_pieces({"\xEF\xBB",
                           "\xBF"
                           "data: x\n\n"});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].data, "x");
}

TEST(SseParser, CommentOnlyBlocksDispatchNothing) {
  auto got = parse_pieces({": a\n\n: b\r\n\r\n\n\n"});
  EXPECT_TRUE(got.empty());
}

}  // namespace
}  // namespace llmserve::bench
