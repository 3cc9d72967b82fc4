// The KV cache manager's side of the tiers: newly cached blocks are reported once, with the
// request's tokens; restored pages enter the pool as cached, free blocks that a request's own
// prefix lookup then finds, after the pool's part of its chain.
#include <gtest/gtest.h>

#include <numeric>

#include "engine/kv_cache/kv_cache_manager.h"

namespace llmserve {
namespace {

using Ids = std::vector<int32_t>;

Request make_request(uint64_t id, Ids prompt, std::string key = {}) {
  Request r;
  r.id = id;
  r.prompt_token_ids = std::move(prompt);
  r.cache_key = std::move(key);
  return r;
}

Ids range(int32_t begin, int32_t end) {
  Ids v(static_cast<size_t>(end - begin));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

TEST(KvRestoreBlocks, NewlyCachedBlocksAreReportedOnceWithTheirPrefix) {
  KvCacheManager kv(11, 4);
  kv.capture_newly_cached(true);
  Request a = make_request(1, range(0, 10), "salt");
  ASSERT_TRUE(kv.allocate(a, 10, kv.find_cached_prefix(a)));
  a.num_computed_tokens = 10;
  kv.cache_computed_blocks(a);
  auto n = kv.take_newly_cached();
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].block_index, 0);
  EXPECT_EQ(n[1].block_index, 1);
  EXPECT_EQ(n[1].parent, n[0].hash);
  EXPECT_EQ(*n[1].tokens, range(0, 8));
  EXPECT_EQ(*n[1].cache_key, "salt");
  EXPECT_TRUE(kv.take_newly_cached().empty());
  kv.cache_computed_blocks(a);
  EXPECT_TRUE(kv.take_newly_cached().empty());
  kv.free(a);
}

TEST(KvRestoreBlocks, RestoredPagesContinueThePoolsChainAndAreFoundByTheLookup) {
  KvCacheManager kv(11, 4);
  const Ids prompt = range(0, 17);  // 4 full blocks before the last token
  // The pool holds block 0 of the prompt (computed by an earlier request).
  Request a = make_request(1, range(0, 5));
  ASSERT_TRUE(kv.allocate(a, 5, kv.find_cached_prefix(a)));
  a.num_computed_tokens = 5;
  kv.cache_computed_blocks(a);
  kv.free(a);

  std::vector<BlockHash> hashes;
  EXPECT_EQ(kv.cached_prefix_blocks(prompt, "", hashes), 1);
  ASSERT_EQ(hashes.size(), 4u);
  std::vector<int32_t> written;
  const int32_t placed =
      kv.restore_blocks(prompt, "", 1, std::span(hashes).subspan(1), [&](int32_t id, size_t page) {
        EXPECT_EQ(page, written.size());
        written.push_back(id);
        return true;
      });
  EXPECT_EQ(placed, 3);
  EXPECT_EQ(written.size(), 3u);
  EXPECT_EQ(kv.cached_prefix_blocks(prompt, "", hashes), 4);
  EXPECT_EQ(kv.num_free_blocks(), kv.num_usable_blocks());  // cached, free, evictable
  EXPECT_TRUE(kv.check_invariants().is_ok());

  Request b = make_request(2, prompt);
  const CachedPrefix p = kv.find_cached_prefix(b);
  EXPECT_EQ(p.num_tokens, 16);
  EXPECT_EQ(std::vector<int32_t>(p.block_ids.begin() + 1, p.block_ids.end()), written);
  // Another salt finds nothing of it.
  EXPECT_EQ(kv.cached_prefix_blocks(prompt, "tenant", hashes), 0);
}

TEST(KvRestoreBlocks, NothingIsPlacedWhenThePoolLostTheChainsStart) {
  KvCacheManager kv(11, 4);
  const Ids prompt = range(0, 17);
  std::vector<BlockHash> hashes;
  EXPECT_EQ(kv.cached_prefix_blocks(prompt, "", hashes), 0);
  // Asked to continue after block 1, which the pool does not hold: the pages would hang from
  // nothing.
  EXPECT_EQ(kv.restore_blocks(prompt, "", 1, std::span(hashes).subspan(1),
                              [](int32_t, size_t) {
                                ADD_FAILURE();
                                return false;
                              }),
            0);
  EXPECT_TRUE(kv.check_invariants().is_ok());
}

TEST(KvRestoreBlocks, RestoresOnlyWhatFreeBlocksHold) {
  KvCacheManager kv(4, 4);  // 3 usable blocks
  const Ids prompt = range(0, 25);
  std::vector<BlockHash> hashes;
  kv.cached_prefix_blocks(prompt, "", hashes);
  ASSERT_EQ(hashes.size(), 6u);
  Request hold = make_request(9, range(100, 104));
  ASSERT_TRUE(kv.allocate(hold, 4));
  EXPECT_EQ(kv.restore_blocks(prompt, "", 0, hashes, [](int32_t, size_t) { return true; }), 2);
  kv.free(hold);
  EXPECT_TRUE(kv.check_invariants().is_ok());
}

}  // namespace
}  // namespace llmserve
