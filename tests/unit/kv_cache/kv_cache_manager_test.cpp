#include "engine/kv_cache/kv_cache_manager.h"

#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace llmserve {
namespace {

using Ids = std::vector<int32_t>;

Request make_request(uint64_t id, Ids prompt) {
  Request r;
  r.id = id;
  r.prompt_token_ids = std::move(prompt);
  return r;
}

Ids range(int32_t begin, int32_t end) {
  Ids v(end - begin);
  std::iota(v.begin(), v.end(), begin);
  return v;
}

Ids concat(Ids a, const Ids& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Ids table(const KvCacheManager& kv, const Request& r) {
  auto t = kv.block_table(r);
  return Ids(t.begin(), t.end());
}

// Admits a request: prefix lookup, allocation for the rest of its tokens, compute, cache.
void admit_and_compute(KvCacheManager& kv, Request& r) {
  const CachedPrefix p = kv.find_cached_prefix(r);
  ASSERT_TRUE(kv.allocate(r, r.num_tokens() - p.num_tokens, p));
  r.num_computed_tokens = r.num_tokens();
  kv.cache_computed_blocks(r);
}

// Block size 4, 10 usable blocks (ids 1..10), scripted like vLLM's test_prefix_caching.
TEST(KvCacheManager, ScriptedPrefixSharingRefCountsAndEviction) {
  KvCacheManager kv(11, 4);
  Request a = make_request(1, range(0, 10));  // blocks: [0..3] [4..7] [8 9]
  const CachedPrefix pa = kv.find_cached_prefix(a);
  EXPECT_EQ(pa.num_tokens, 0);
  ASSERT_TRUE(kv.allocate(a, 10, pa));
  EXPECT_EQ(table(kv, a), (Ids{1, 2, 3}));
  a.num_computed_tokens = 10;
  kv.cache_computed_blocks(a);
  EXPECT_TRUE(kv.pool().is_cached(1));
  EXPECT_TRUE(kv.pool().is_cached(2));
  EXPECT_FALSE(kv.pool().is_cached(3));  // partial block is never cached

  Request b = make_request(2, concat(range(0, 8), {100, 101, 102}));
  const CachedPrefix pb = kv.find_cached_prefix(b);
  EXPECT_EQ(pb.num_tokens, 8);
  EXPECT_EQ(Ids(pb.block_ids.begin(), pb.block_ids.end()), (Ids{1, 2}));
  ASSERT_TRUE(kv.allocate(b, 3, pb));
  b.num_computed_tokens = 8;
  EXPECT_EQ(table(kv, b), (Ids{1, 2, 4}));
  EXPECT_EQ(kv.pool().ref_count(1), 2);
  EXPECT_EQ(kv.pool().ref_count(2), 2);
  EXPECT_EQ(kv.pool().ref_count(3), 1);
  EXPECT_EQ(kv.pool().ref_count(4), 1);
  EXPECT_EQ(kv.prefix_cache_queries(), 10 + 11);
  EXPECT_EQ(kv.prefix_cache_hits(), 8);
  const Request* both[] = {&a, &b};
  EXPECT_TRUE(kv.check_invariants(both).is_ok());

  // A prompt that is exactly two cached blocks still computes its last token: one block hit.
  Request c = make_request(3, range(0, 8));
  EXPECT_EQ(kv.find_cached_prefix(c).num_tokens, 4);

  kv.free(a);  // released 3, 2, 1: only 3 reaches ref 0 and is uncached -> head
  EXPECT_EQ(kv.pool().free_queue(), (Ids{3, 5, 6, 7, 8, 9, 10}));
  b.num_computed_tokens = 11;
  kv.cache_computed_blocks(b);
  kv.free(b);  // released 4 (uncached -> head), 2, 1 (cached -> tail)
  EXPECT_EQ(kv.pool().free_queue(), (Ids{4, 3, 5, 6, 7, 8, 9, 10, 2, 1}));
  EXPECT_EQ(kv.usage(), 0.0);
  EXPECT_TRUE(kv.check_invariants().is_ok());

  // 9 new blocks: the 8 uncached ones, then the LRU cached block 2 is evicted.
  Request d = make_request(4, range(1000, 1036));
  admit_and_compute(kv, d);
  EXPECT_EQ(table(kv, d), (Ids{4, 3, 5, 6, 7, 8, 9, 10, 2}));
  EXPECT_EQ(kv.pool().free_queue(), (Ids{1}));
  Request a2 = make_request(5, range(0, 10));
  const CachedPrefix pa2 = kv.find_cached_prefix(a2);
  EXPECT_EQ(pa2.num_tokens, 4);  // block 1 survives; the chain breaks at evicted block 2
  EXPECT_EQ(Ids(pa2.block_ids.begin(), pa2.block_ids.end()), (Ids{1}));
}

TEST(KvCacheManager, FailedAllocationChangesNothing) {
  KvCacheManager kv(5, 4);  // 4 usable blocks
  Request a = make_request(1, range(0, 8));
  admit_and_compute(kv, a);                    // blocks 1 2 (both cached, held)
  Request b = make_request(2, range(50, 62));  // needs 3 blocks, 2 free
  const CachedPrefix pb = kv.find_cached_prefix(b);
  EXPECT_FALSE(kv.allocate(b, 12, pb));
  EXPECT_TRUE(b.kv.block_ids.empty());
  EXPECT_EQ(kv.num_free_blocks(), 2);
  EXPECT_EQ(kv.prefix_cache_queries(), 8);  // the failed admission is not counted
  const Request* held[] = {&a};
  EXPECT_TRUE(kv.check_invariants(held).is_ok());
  // Growing a running request one token at a time only allocates at block boundaries.
  ASSERT_TRUE(kv.allocate(a, 1));
  EXPECT_EQ(table(kv, a), (Ids{1, 2, 3}));
  a.num_computed_tokens = 9;
  a.output_token_ids = {9};
  ASSERT_TRUE(kv.allocate(a, 3));
  EXPECT_EQ(table(kv, a).size(), 3u);
  EXPECT_FALSE(kv.allocate(a, 8));  // 17 positions = 5 blocks > 4 usable
  EXPECT_EQ(table(kv, a).size(), 3u);
}

TEST(KvCacheManager, HitsOnFreeBlocksCountAgainstFreeSpace) {
  KvCacheManager kv(4, 4);  // 3 usable
  Request a = make_request(1, range(0, 9));
  admit_and_compute(kv, a);  // 1 2 cached, 3 partial
  kv.free(a);
  // b hits 2 free cached blocks and needs 2 more: 4 > 3 usable must fail.
  Request b = make_request(2, range(0, 16));
  const CachedPrefix pb = kv.find_cached_prefix(b);
  ASSERT_EQ(pb.num_tokens, 8);
  EXPECT_FALSE(kv.allocate(b, 8, pb));
  EXPECT_EQ(kv.num_free_blocks(), 3);
  // c hits 2 and needs 1 more: fits exactly, and the hit blocks are not evicted for it.
  Request c = make_request(3, range(0, 12));
  const CachedPrefix pc = kv.find_cached_prefix(c);
  ASSERT_TRUE(kv.allocate(c, 4, pc));
  EXPECT_EQ(table(kv, c), (Ids{1, 2, 3}));
  const Request* held[] = {&c};
  EXPECT_TRUE(kv.check_invariants(held).is_ok());
}

TEST(KvCacheManager, GeneratedTokensAreCachedToo) {
  KvCacheManager kv(11, 4);
  Request a = make_request(1, range(0, 6));
  admit_and_compute(kv, a);  // positions 0..5
  EXPECT_EQ(kv.pool().num_cached_blocks(), 1);
  for (int32_t t : {6, 7, 8}) {  // decode: sampled tokens 6 7 8 get computed one by one
    a.output_token_ids.push_back(t);
    ASSERT_TRUE(kv.allocate(a, 1));
    a.num_computed_tokens++;
    kv.cache_computed_blocks(a);
  }
  EXPECT_EQ(kv.pool().num_cached_blocks(), 2);
  Request b = make_request(2, range(0, 12));
  EXPECT_EQ(kv.find_cached_prefix(b).num_tokens, 8);
}

TEST(KvCacheManager, CacheKeySeparatesOtherwiseEqualPrompts) {
  KvCacheManager kv(11, 4);
  Request a = make_request(1, range(0, 9));
  admit_and_compute(kv, a);
  Request b = make_request(2, range(0, 9));
  b.cache_key = "lora-1";
  EXPECT_EQ(kv.find_cached_prefix(b).num_tokens, 0);
  Request c = make_request(3, range(0, 9));
  EXPECT_EQ(kv.find_cached_prefix(c).num_tokens, 8);
}

TEST(KvCacheManager, DisabledPrefixCachingNeverHits) {
  KvCacheManager kv(11, 4, /*enable_prefix_caching=*/false);
  Request a = make_request(1, range(0, 9));
  admit_and_compute(kv, a);
  EXPECT_EQ(kv.pool().num_cached_blocks(), 0);
  Request b = make_request(2, range(0, 9));
  EXPECT_EQ(kv.find_cached_prefix(b).num_tokens, 0);
  EXPECT_EQ(kv.prefix_cache_queries(), 0);
}

TEST(KvCacheManager, UsageAndBudgetArithmetic) {
  KvCacheManager kv(9, 16);  // 8 usable
  Request a = make_request(1, range(0, 40));
  ASSERT_TRUE(kv.allocate(a, 40));
  EXPECT_DOUBLE_EQ(kv.usage(), 3.0 / 8.0);
  EXPECT_EQ(kv.num_free_blocks(), 5);
  EXPECT_EQ(KvCacheManager::num_blocks_for_budget(1000, 100), 10);
  EXPECT_EQ(KvCacheManager::num_blocks_for_budget(999, 100), 9);
  EXPECT_EQ(KvCacheManager::num_blocks_for_budget(0, 100), 0);
  EXPECT_EQ(KvCacheManager::num_blocks_for_budget(100, 0), 0);
  EXPECT_EQ(KvCacheManager::num_blocks_for_budget(int64_t{1} << 62, 1), INT32_MAX);
}

// Sliding window 6, block size 4: after 20 computed tokens the next query (position 20) attends
// keys 15..20, so blocks 0-2 (positions 0..11) go back to the pool, still cached; block 3
// (12..15) follows once position 21 is computed, and never block 4 or later.
TEST(KvCacheManager, SlidingWindowReleasesOnlyBlocksNoLaterQueryReads) {
  KvCacheManager kv(11, 4, /*enable_prefix_caching=*/true, /*sliding_window=*/6);
  Request a = make_request(1, range(0, 20));
  admit_and_compute(kv, a);
  const Ids before = table(kv, a);
  ASSERT_EQ(before.size(), 5u);
  EXPECT_EQ(kv.num_free_blocks(), 5);
  EXPECT_EQ(kv.free_outside_window(a), 3);
  EXPECT_EQ(table(kv, a), (Ids{kNullBlockId, kNullBlockId, kNullBlockId, before[3], before[4]}));
  EXPECT_EQ(kv.num_free_blocks(), 8);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(kv.pool().is_free(before[i]));
    EXPECT_TRUE(kv.pool().is_cached(before[i]));  // a later request with this prefix may hit
  }
  const Request* holders[] = {&a};
  EXPECT_TRUE(kv.check_invariants(holders).is_ok());
  EXPECT_EQ(kv.free_outside_window(a), 0);  // nothing new left the window

  a.output_token_ids = {500};  // position 20 computed, 21 next: keys 16..21
  ASSERT_TRUE(kv.allocate(a, 1));
  a.num_computed_tokens = 21;
  kv.cache_computed_blocks(a);
  EXPECT_EQ(kv.free_outside_window(a), 1);
  EXPECT_EQ(table(kv, a)[3], kNullBlockId);
  EXPECT_EQ(table(kv, a)[4], before[4]);
  EXPECT_TRUE(kv.check_invariants(holders).is_ok());

  kv.free(a);  // the null entries are skipped, every real block returns once
  EXPECT_EQ(kv.num_free_blocks(), kv.num_usable_blocks());
  EXPECT_TRUE(kv.check_invariants().is_ok());

  KvCacheManager full(11, 4);  // no window: nothing is ever released early
  Request b = make_request(2, range(0, 20));
  admit_and_compute(full, b);
  EXPECT_EQ(full.free_outside_window(b), 0);
  EXPECT_EQ(full.num_free_blocks(), 5);
}

}  // namespace
}  // namespace llmserve
