#include "engine/runner/graph_buckets.h"

#include <gtest/gtest.h>

namespace llmserve {
namespace {

TEST(GraphBuckets, PowersThenStepsEndingAtTheLimit) {
  EXPECT_EQ(decode_graph_buckets(256, 2048, 256),
            (std::vector<int>{1,  2,   4,   8,   16,  24,  32,  40,  48,  56,  64, 80,
                              96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256}));
  EXPECT_EQ(decode_graph_buckets(20, 2048, 256), (std::vector<int>{1, 2, 4, 8, 16, 20}));
  EXPECT_EQ(decode_graph_buckets(1, 2048, 256), (std::vector<int>{1}));
  EXPECT_TRUE(decode_graph_buckets(0, 2048, 256).empty());
}

TEST(GraphBuckets, CappedByTheActivationLimits) {
  // A bucket larger than max_tokens or max_samples would overrun the activation buffers.
  EXPECT_EQ(decode_graph_buckets(256, 12, 256).back(), 12);
  EXPECT_EQ(decode_graph_buckets(256, 2048, 40).back(), 40);
  for (int b : decode_graph_buckets(512, 100, 300)) EXPECT_LE(b, 100);
}

TEST(GraphBuckets, SmallestBucketThatHoldsTheBatch) {
  const std::vector<int> b = decode_graph_buckets(256, 2048, 256);
  EXPECT_EQ(decode_graph_bucket(b, 1), 1);
  EXPECT_EQ(decode_graph_bucket(b, 3), 4);
  EXPECT_EQ(decode_graph_bucket(b, 9), 16);
  EXPECT_EQ(decode_graph_bucket(b, 65), 80);
  EXPECT_EQ(decode_graph_bucket(b, 256), 256);
  EXPECT_EQ(decode_graph_bucket(b, 257), 0);
  EXPECT_EQ(decode_graph_bucket(b, 0), 0);
}

}  // namespace
}  // namespace llmserve
