#include "server/http/sse.h"

#include <gtest/gtest.h>

namespace llmserve {
namespace {

TEST(Sse, FramesEventsAndDone) {
  EXPECT_EQ(sse::event(nlohmann::json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse::done(), "data: [DONE]\n\n");
  EXPECT_EQ(sse::comment("keep-alive"), ": keep-alive\n\n");
}

TEST(Sse, InvalidUtf8IsReplacedNotThrown) {
  const std::string bad =
      "x\xff"
      "y";
  std::string e;
  EXPECT_NO_THROW(e = sse::event(nlohmann::json{{"t", bad}}));
  EXPECT_NE(e.find("\xEF\xBF\xBD"), std::string::npos);
}

TEST(Sse, TakeEventsKeepsPartialTail) {
  std::string buf = "data: {\"a\":1}\n\n: comment\n\ndata: [DONE]\n\ndata: {\"b\"";
  auto ev = sse::take_events(buf);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0], "{\"a\":1}");
  EXPECT_EQ(ev[1], "[DONE]");
  EXPECT_EQ(buf, "data: {\"b\"");
  buf += ":2}\n\n";
  ev = sse::take_events(buf);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], "{\"b\":2}");
  EXPECT_TRUE(buf.empty());
}

}  // namespace
}  // namespace llmserve
