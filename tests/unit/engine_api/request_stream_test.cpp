#include "engine/request_stream.h"

#include <gtest/gtest.h>

#include <thread>

namespace llmserve {
namespace {

StepOutput msg(int32_t i) {
  StepOutput out;
  out.token_ids = {i};
  return out;
}

TEST(RequestStream, DeliversInOrderThenEnds) {
  RequestStream s(7, 1, 8);
  EXPECT_EQ(s.request_id(), 7u);
  EXPECT_TRUE(s.push(msg(1)));
  EXPECT_TRUE(s.push(msg(2)));
  s.close();
  EXPECT_FALSE(s.finished());
  EXPECT_EQ(s.next()->token_ids[0], 1);
  EXPECT_EQ(s.next()->token_ids[0], 2);
  EXPECT_FALSE(s.next().has_value());
  EXPECT_FALSE(s.timed_out());
  EXPECT_TRUE(s.finished());
  EXPECT_FALSE(s.push(msg(3)));  // closed
}

TEST(RequestStream, OverflowIsReportedButKept) {
  RequestStream s(1, 1, 2);
  EXPECT_TRUE(s.push(msg(1)));
  EXPECT_TRUE(s.push(msg(2)));
  EXPECT_FALSE(s.push(msg(3)));  // full: the engine should abort, the message still queued
  EXPECT_EQ(s.next()->token_ids[0], 1);
  EXPECT_EQ(s.next()->token_ids[0], 2);
  EXPECT_EQ(s.next()->token_ids[0], 3);
}

TEST(RequestStream, TimeoutAndCancel) {
  RequestStream s(1, 1, 4);
  EXPECT_FALSE(s.next(std::chrono::milliseconds(5)).has_value());
  EXPECT_TRUE(s.timed_out());
  EXPECT_FALSE(s.finished());
  s.push(msg(1));
  EXPECT_TRUE(s.next(std::chrono::milliseconds(5)).has_value());
  EXPECT_FALSE(s.timed_out());
  s.cancel();
  EXPECT_TRUE(s.cancelled());
  EXPECT_FALSE(s.push(msg(2)));
  EXPECT_FALSE(s.next(std::chrono::milliseconds(5)).has_value());
  EXPECT_FALSE(s.timed_out());
}

TEST(RequestStream, ProducerConsumerThreads) {
  RequestStream s(1, 1, 100000);
  const int kCount = 20000;
  std::thread producer([&] {
    for (int i = 0; i < kCount; ++i) s.push(msg(i));
    s.close();
  });
  int expect = 0;
  while (auto m = s.next()) {
    ASSERT_EQ(m->token_ids[0], expect);
    ++expect;
  }
  producer.join();
  EXPECT_EQ(expect, kCount);
  EXPECT_TRUE(s.finished());
}

TEST(RequestStream, CancelWakesABlockedReader) {
  RequestStream s(1, 1, 4);
  std::thread reader([&] { EXPECT_FALSE(s.next().has_value()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  s.cancel();
  reader.join();
}

}  // namespace
}  // namespace llmserve
