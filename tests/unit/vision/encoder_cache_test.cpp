// EncoderCache: features by content hash within a byte budget, least recently used first out.
#include <gtest/gtest.h>

#include "engine/vision/encoder_cache.h"

namespace llmserve::vision {
namespace {

ImageFeatures floats(size_t n, float v) {
  return std::make_shared<const std::vector<float>>(n, v);
}

TEST(EncoderCache, KeepsWithinTheBudgetEvictingTheLeastRecentlyUsed) {
  EncoderCache c(3 * 100 * sizeof(float));  // room for three entries of 100 floats
  c.put(1, floats(100, 1));
  c.put(2, floats(100, 2));
  c.put(3, floats(100, 3));
  ASSERT_NE(c.get(1), nullptr);  // 1 is now the most recent; 2 the least
  c.put(4, floats(100, 4));
  EXPECT_EQ(c.get(2), nullptr);
  ASSERT_NE(c.get(1), nullptr);
  EXPECT_EQ((*c.get(3))[0], 3.0f);
  EXPECT_EQ((*c.get(4))[0], 4.0f);
  const EncoderCacheStats s = c.stats();
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.bytes, 300 * sizeof(float));
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 4u);  // get(1) twice, get(3), get(4); get(2) missed
}

TEST(EncoderCache, ReplacesAndRefusesWhatNeverFits) {
  EncoderCache c(100 * sizeof(float));
  c.put(1, floats(60, 1));
  c.put(1, floats(80, 2));  // same hash: replaced, not doubled
  EXPECT_EQ(c.stats().bytes, 80 * sizeof(float));
  EXPECT_EQ((*c.get(1))[0], 2.0f);
  c.put(2, floats(101, 3));  // larger than the whole budget: not kept, nothing evicted
  EXPECT_EQ(c.get(2), nullptr);
  EXPECT_NE(c.get(1), nullptr);
  EncoderCache none(0);
  none.put(1, floats(1, 1));
  EXPECT_EQ(none.get(1), nullptr);
  EXPECT_EQ(none.stats().entries, 0u);
}

}  // namespace
}  // namespace llmserve::vision
