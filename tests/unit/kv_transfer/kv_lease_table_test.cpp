#include "engine/kv_transfer/kv_lease_table.h"

#include <gtest/gtest.h>

namespace llmserve {
namespace {

using Clock = KvLeaseTable::Clock;

TEST(KvLeaseTable, ReleaseEndsALeaseOnceAndSweepReturnsItsBlocks) {
  KvLeaseTable t("e1");
  const auto now = Clock::now();
  const std::string a = t.add({3, 4, 5}, now + std::chrono::seconds(30));
  const std::string b = t.add({7}, now + std::chrono::seconds(30));
  EXPECT_NE(a, b);
  EXPECT_EQ(t.num_pinned_blocks(), 4);
  EXPECT_TRUE(t.release(a));
  EXPECT_FALSE(t.release(a));        // already released
  EXPECT_FALSE(t.release("e1-99"));  // unknown
  auto ended = t.take_ended(now);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].blocks, (std::vector<int32_t>{3, 4, 5}));
  EXPECT_FALSE(ended[0].expired);
  EXPECT_EQ(t.num_pinned_blocks(), 1);
  EXPECT_EQ(t.num_leases(), 1);
}

TEST(KvLeaseTable, ExpiredLeaseCannotBeReleasedAfterTheSweep) {
  KvLeaseTable t("e2");
  const auto now = Clock::now();
  const std::string a = t.add({9, 10}, now + std::chrono::milliseconds(5));
  EXPECT_EQ(t.next_expiry(), now + std::chrono::milliseconds(5));
  EXPECT_TRUE(t.take_ended(now).empty());
  auto ended = t.take_ended(now + std::chrono::milliseconds(6));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_TRUE(ended[0].expired);
  EXPECT_FALSE(t.release(a));  // the consumer is told its copy may be stale
  EXPECT_EQ(t.num_pinned_blocks(), 0);
  EXPECT_FALSE(t.next_expiry().has_value());
}

}  // namespace
}  // namespace llmserve
