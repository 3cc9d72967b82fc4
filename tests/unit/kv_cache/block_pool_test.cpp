#include "engine/kv_cache/block_pool.h"

#include <vector>

#include <gtest/gtest.h>

namespace llmserve {
namespace {

using Ids = std::vector<int32_t>;

BlockHash hash_of(int32_t i) {
  return hash_block_tokens({}, Ids{i, i, i, i});
}
Ids tokens_of(int32_t i) {
  return {i, i, i, i};
}

TEST(BlockPool, StartsWithEveryUsableBlockFreeInIdOrder) {
  BlockPool pool(6, 4);
  EXPECT_EQ(pool.num_usable_blocks(), 5);
  EXPECT_EQ(pool.num_free_blocks(), 5);
  EXPECT_EQ(pool.free_queue(), (Ids{1, 2, 3, 4, 5}));
  Ids got;
  pool.allocate(5, got);
  EXPECT_EQ(got, (Ids{1, 2, 3, 4, 5}));  // never the null block
  EXPECT_EQ(pool.num_free_blocks(), 0);
  for (int32_t id : got) EXPECT_EQ(pool.ref_count(id), 1);
  EXPECT_TRUE(pool.check_invariants().is_ok());
}

TEST(BlockPool, CachedBlocksGoToTailUncachedToHeadAndEvictInLruOrder) {
  BlockPool pool(8, 4);
  Ids blocks;
  pool.allocate(4, blocks);  // 1 2 3 4
  ASSERT_EQ(blocks, (Ids{1, 2, 3, 4}));
  for (int32_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(pool.cache_block(blocks[i], hash_of(i), {}, tokens_of(i)));
  }
  // Release in eviction order: 3 (cached), 4 (uncached), 2, 1.
  pool.release(3);
  pool.release(4);
  pool.release(2);
  pool.release(1);
  EXPECT_EQ(pool.free_queue(), (Ids{4, 5, 6, 7, 3, 2, 1}));
  EXPECT_EQ(pool.num_cached_blocks(), 3);
  EXPECT_TRUE(pool.check_invariants().is_ok());

  Ids more;
  pool.allocate(5, more);  // 4 5 6 7 then evicts 3
  EXPECT_EQ(more, (Ids{4, 5, 6, 7, 3}));
  EXPECT_FALSE(pool.is_cached(3));
  EXPECT_EQ(pool.lookup(hash_of(2), {}, tokens_of(2)), -1);
  EXPECT_EQ(pool.lookup(hash_of(1), {}, tokens_of(1)), 2);
  EXPECT_EQ(pool.free_queue(), (Ids{2, 1}));
  EXPECT_TRUE(pool.check_invariants().is_ok());
}

TEST(BlockPool, HitOnFreeCachedBlockUnlinksItFromTheMiddle) {
  BlockPool pool(5, 4);
  Ids b;
  pool.allocate(3, b);
  for (int32_t i = 0; i < 3; ++i) ASSERT_TRUE(pool.cache_block(b[i], hash_of(i), {}, tokens_of(i)));
  pool.release(1);
  pool.release(2);
  pool.release(3);
  EXPECT_EQ(pool.free_queue(), (Ids{4, 1, 2, 3}));
  const int32_t hit = pool.lookup(hash_of(1), {}, tokens_of(1));
  ASSERT_EQ(hit, 2);
  pool.touch(hit);
  EXPECT_EQ(pool.ref_count(2), 1);
  EXPECT_EQ(pool.free_queue(), (Ids{4, 1, 3}));
  pool.touch(hit);  // second holder: no queue change
  EXPECT_EQ(pool.ref_count(2), 2);
  pool.release(2);
  EXPECT_FALSE(pool.is_free(2));
  pool.release(2);
  EXPECT_EQ(pool.free_queue(), (Ids{4, 1, 3, 2}));
  EXPECT_TRUE(pool.check_invariants().is_ok());
}

TEST(BlockPool, LookupComparesTokensAndParentNotOnlyTheHash) {
  BlockPool pool(4, 4);
  Ids b;
  pool.allocate(1, b);
  const BlockHash parent = hash_of(7);
  ASSERT_TRUE(pool.cache_block(b[0], hash_of(0), parent, tokens_of(0)));
  EXPECT_EQ(pool.lookup(hash_of(0), parent, tokens_of(0)), b[0]);
  // Same hash but other tokens (a simulated collision) or other parent: no hit.
  EXPECT_EQ(pool.lookup(hash_of(0), parent, Ids{0, 0, 0, 1}), -1);
  EXPECT_EQ(pool.lookup(hash_of(0), {}, tokens_of(0)), -1);
  EXPECT_EQ(pool.lookup(hash_of(1), parent, tokens_of(0)), -1);
}

TEST(BlockPool, DuplicateHashLeavesSecondBlockUncached) {
  BlockPool pool(4, 4);
  Ids b;
  pool.allocate(2, b);
  EXPECT_TRUE(pool.cache_block(b[0], hash_of(0), {}, tokens_of(0)));
  EXPECT_FALSE(pool.cache_block(b[1], hash_of(0), {}, tokens_of(0)));
  EXPECT_TRUE(pool.is_cached(b[0]));
  EXPECT_FALSE(pool.is_cached(b[1]));
  pool.release(b[0]);
  pool.release(b[1]);
  EXPECT_EQ(pool.free_queue(), (Ids{2, 3, 1}));  // uncached duplicate goes first
  EXPECT_TRUE(pool.check_invariants().is_ok());
}

TEST(BlockPool, ResetPrefixCacheForgetsOnlyFreeBlocks) {
  BlockPool pool(4, 4);
  Ids b;
  pool.allocate(2, b);
  ASSERT_TRUE(pool.cache_block(b[0], hash_of(0), {}, tokens_of(0)));
  ASSERT_TRUE(pool.cache_block(b[1], hash_of(1), {}, tokens_of(1)));
  pool.release(b[0]);
  pool.reset_prefix_cache();
  EXPECT_FALSE(pool.is_cached(b[0]));
  EXPECT_TRUE(pool.is_cached(b[1]));
  EXPECT_TRUE(pool.check_invariants().is_ok());
}

}  // namespace
}  // namespace llmserve
