// The producer's lease table: unguessable tokens, each lease found only while live, released
// once, swept when released or expired, and a pinned-block budget past which no lease is made.
#include "engine/kv_transfer/kv_lease_table.h"

#include <set>

#include <gtest/gtest.h>

namespace llmserve {
namespace {

using Clock = KvLeaseTable::Clock;

KvLeaseTable::Lease lease(std::vector<int32_t> blocks, uint64_t hash = 1) {
  return {std::move(blocks), 10, hash};
}

TEST(KvLeaseTable, ReleaseEndsALeaseOnceAndSweepReturnsItsBlocks) {
  KvLeaseTable t;
  const auto now = Clock::now();
  const std::string a = *t.add(lease({3, 4, 5}), now + std::chrono::seconds(30));
  const std::string b = *t.add(lease({7}), now + std::chrono::seconds(30));
  EXPECT_NE(a, b);
  EXPECT_EQ(t.num_pinned_blocks(), 4);
  EXPECT_TRUE(t.release(a));
  EXPECT_FALSE(t.release(a));                                   // already released
  EXPECT_FALSE(t.release("0123456789abcdef0123456789abcdef"));  // unknown
  EXPECT_FALSE(t.find(a, now).has_value());                     // released: not served
  auto ended = t.take_ended(now);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].blocks, (std::vector<int32_t>{3, 4, 5}));
  EXPECT_FALSE(ended[0].expired);
  EXPECT_EQ(t.num_pinned_blocks(), 1);
  EXPECT_EQ(t.num_leases(), 1);
}

TEST(KvLeaseTable, ExpiredLeaseCannotBeFoundOrReleased) {
  KvLeaseTable t;
  const auto now = Clock::now();
  const std::string a = *t.add(lease({9, 10}, 77), now + std::chrono::milliseconds(5));
  ASSERT_TRUE(t.find(a, now).has_value());
  EXPECT_EQ(t.find(a, now)->prompt_hash, 77u);
  EXPECT_EQ(t.find(a, now)->blocks, (std::vector<int32_t>{9, 10}));
  EXPECT_FALSE(t.find(a, now + std::chrono::milliseconds(6)).has_value());
  EXPECT_EQ(t.next_expiry(), now + std::chrono::milliseconds(5));
  EXPECT_TRUE(t.take_ended(now).empty());
  auto ended = t.take_ended(now + std::chrono::milliseconds(6));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_TRUE(ended[0].expired);
  EXPECT_FALSE(t.release(a));  // the consumer is told its copy may be stale
  EXPECT_EQ(t.num_pinned_blocks(), 0);
  EXPECT_FALSE(t.next_expiry().has_value());
}

// Issue 51: lease ids were "<engine_id>-<n+1>", so one user could release another's lease.
TEST(KvLeaseTable, TokensAre128RandomBitsNotASequence) {
  KvLeaseTable t;
  std::set<std::string> seen;
  const auto later = Clock::now() + std::chrono::seconds(30);
  for (int i = 0; i < 200; ++i) {
    const std::string tok = *t.add(lease({i}), later);
    ASSERT_EQ(tok.size(), 32u);
    EXPECT_EQ(tok.find_first_not_of("0123456789abcdef"), std::string::npos) << tok;
    seen.insert(tok);
  }
  EXPECT_EQ(seen.size(), 200u);
  // No two consecutive tokens share a prefix longer than chance allows (a counter would).
  int long_prefixes = 0;
  std::string prev;
  for (int i = 0; i < 50; ++i) {
    const std::string tok = *t.add(lease({1000 + i}), later);
    size_t k = 0;
    while (k < tok.size() && k < prev.size() && tok[k] == prev[k]) ++k;
    long_prefixes += k >= 6;
    prev = tok;
  }
  EXPECT_EQ(long_prefixes, 0);
}

// Issue 51: a producer pinned every prefill with no cap, starving everyone else's requests.
TEST(KvLeaseTable, BudgetRefusesLeasesPastItAndFreesRoomOnRelease) {
  KvLeaseTable t(5);
  const auto later = Clock::now() + std::chrono::seconds(30);
  EXPECT_TRUE(t.has_room(5));
  EXPECT_FALSE(t.has_room(6));
  const auto a = t.add(lease({1, 2, 3}), later);
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(t.has_room(3));
  EXPECT_FALSE(t.add(lease({4, 5, 6}), later).has_value());  // 6 > 5
  EXPECT_EQ(t.num_pinned_blocks(), 3);
  ASSERT_TRUE(t.add(lease({7, 8}), later).has_value());  // exactly 5
  EXPECT_TRUE(t.release(*a));
  (void)t.take_ended(Clock::now());
  EXPECT_TRUE(t.has_room(3));
  EXPECT_TRUE(t.add(lease({4, 5, 6}), later).has_value());
}

}  // namespace
}  // namespace llmserve
