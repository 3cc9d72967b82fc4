// KV events through the KvCacheManager: what a router mirroring our events would hold must equal
// the prefix cache itself, with hashes chained parent-first.
#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "engine/kv_cache/kv_cache_manager.h"

namespace llmserve {
namespace {

using Ids = std::vector<int32_t>;
using Hashes = std::vector<uint64_t>;

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

void admit_and_compute(KvCacheManager& kv, Request& r) {
  const CachedPrefix p = kv.find_cached_prefix(r);
  ASSERT_TRUE(kv.allocate(r, r.num_tokens() - p.num_tokens, p));
  r.num_computed_tokens = r.num_tokens();
  kv.cache_computed_blocks(r);
}

// The external hashes of a token sequence's full blocks, computed here from the tokens.
Hashes chain_of(const Ids& tokens, int32_t block_size) {
  Hashes out;
  BlockHash parent{};
  for (size_t b = 0; b + block_size <= tokens.size(); b += block_size) {
    parent = hash_block_tokens(parent, std::span(tokens).subspan(b, block_size));
    out.push_back(external_block_hash(parent));
  }
  return out;
}

TEST(KvCacheEvents, StoredBlocksChainThroughParentHashesWithTheirTokens) {
  KvCacheManager kv(16, 4);
  kv.enable_events(true);
  Request a = make_request(1, range(0, 10));  // full blocks [0..3] [4..7]
  admit_and_compute(kv, a);
  const Hashes ha = chain_of(range(0, 12), 4);
  std::vector<KvEvent> ev = kv.take_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(std::get<KvBlockStored>(ev[0]),
            (KvBlockStored{Hashes{ha[0], ha[1]}, std::nullopt, range(0, 8), 4, {}}));

  // Two more tokens complete block 3: stored alone, its parent the last block stored before.
  a.output_token_ids = {10, 11};
  a.num_computed_tokens = 12;
  kv.cache_computed_blocks(a);
  ev = kv.take_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(std::get<KvBlockStored>(ev[0]),
            (KvBlockStored{Hashes{ha[2]}, ha[1], range(8, 12), 4, {}}));

  // A request sharing the first two blocks stores only its own third block.
  Ids prompt_b = range(0, 8);
  for (int32_t t : {50, 51, 52, 53, 54}) prompt_b.push_back(t);
  Request b = make_request(2, prompt_b);
  admit_and_compute(kv, b);
  ev = kv.take_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(std::get<KvBlockStored>(ev[0]),
            (KvBlockStored{Hashes{chain_of(prompt_b, 4)[2]}, ha[1], Ids{50, 51, 52, 53}, 4, {}}));
  EXPECT_TRUE(kv.take_events().empty());
}

TEST(KvCacheEvents, EvictionRemovesInLruOrderAndResetClears) {
  KvCacheManager kv(7, 2);  // 6 usable blocks of 2 tokens
  kv.enable_events(true);
  Request a = make_request(1, range(0, 5));  // blocks [0 1] [2 3] cached, [4] partial
  admit_and_compute(kv, a);
  const Hashes ha = chain_of(range(0, 4), 2);
  kv.free(a);  // released last block first: [2 3] is evicted before [0 1]
  kv.take_events();

  Request b = make_request(2, range(100, 111));  // 11 tokens: 6 blocks, evicts both cached
  admit_and_compute(kv, b);
  const Hashes hb = chain_of(range(100, 111), 2);
  std::vector<KvEvent> ev = kv.take_events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(std::get<KvBlockRemoved>(ev[0]).block_hashes, (Hashes{ha[1], ha[0]}));
  EXPECT_EQ(std::get<KvBlockStored>(ev[1]).block_hashes, hb);

  // Reset while b holds its blocks: nothing is droppable, but not everything is gone.
  EXPECT_FALSE(kv.reset_prefix_cache());
  EXPECT_TRUE(kv.take_events().empty());
  kv.free(b);
  EXPECT_TRUE(kv.reset_prefix_cache());
  ev = kv.take_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<KvAllBlocksCleared>(ev[0]));
  EXPECT_EQ(kv.pool().num_cached_blocks(), 0);
}

TEST(KvCacheEvents, PartialResetRemovesOnlyTheFreeBlocks) {
  KvCacheManager kv(9, 2);
  kv.enable_events(true);
  Request a = make_request(1, range(0, 3));
  Request b = make_request(2, range(10, 13));
  admit_and_compute(kv, a);
  admit_and_compute(kv, b);
  kv.free(a);
  kv.take_events();
  EXPECT_FALSE(kv.reset_prefix_cache());
  const std::vector<KvEvent> ev = kv.take_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(std::get<KvBlockRemoved>(ev[0]).block_hashes, chain_of(range(0, 2), 2));
  EXPECT_EQ(kv.pool().num_cached_blocks(), 1);
}

TEST(KvCacheEvents, DisabledByDefault) {
  KvCacheManager kv(8, 2);
  Request a = make_request(1, range(0, 5));
  admit_and_compute(kv, a);
  EXPECT_TRUE(kv.take_events().empty());
}

// A subscriber's mirror, built from events alone, equals the prefix cache after every operation
// of a random workload with shared prefixes, eviction and resets.
TEST(KvCacheEvents, MirrorRebuiltFromEventsEqualsThePrefixCache) {
  constexpr int32_t kBs = 4;
  KvCacheManager kv(41, kBs);
  kv.enable_events(true);
  std::mt19937 rng(7);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::map<uint64_t, std::pair<std::optional<uint64_t>, Ids>> mirror;  // hash -> parent, tokens
  std::vector<std::unique_ptr<Request>> live;
  const Ids system = range(1000, 1000 + 3 * kBs);
  uint64_t next_id = 1;
  int stored = 0, removed = 0, cleared = 0;

  for (int op = 0; op < 600; ++op) {
    const int kind = uniform(0, 9);
    if (kind <= 4) {
      Ids prompt = kind <= 2 ? Ids(system.begin(), system.begin() + uniform(0, 12)) : Ids{};
      for (int i = uniform(1, 14); i > 0; --i) prompt.push_back(uniform(0, 40));
      auto r = std::make_unique<Request>(make_request(next_id++, prompt));
      const CachedPrefix p = kv.find_cached_prefix(*r);
      if (kv.allocate(*r, r->num_tokens() - p.num_tokens, p)) {
        r->num_computed_tokens = r->num_tokens();
        kv.cache_computed_blocks(*r);
        live.push_back(std::move(r));
      }
    } else if (kind <= 8 && !live.empty()) {
      const size_t i = static_cast<size_t>(uniform(0, static_cast<int>(live.size()) - 1));
      kv.free(*live[i]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      kv.reset_prefix_cache();
    }
    for (KvEvent& e : kv.take_events()) {
      if (auto* s = std::get_if<KvBlockStored>(&e)) {
        ++stored;
        ASSERT_EQ(s->token_ids.size(), s->block_hashes.size() * kBs);
        std::optional<uint64_t> parent = s->parent_block_hash;
        // Parents come first: a stored chain's parent is one we already know.
        if (parent) {
          ASSERT_TRUE(mirror.count(*parent)) << "unknown parent at op " << op;
        }
        for (size_t k = 0; k < s->block_hashes.size(); ++k) {
          const Ids tokens(s->token_ids.begin() + static_cast<std::ptrdiff_t>(k * kBs),
                           s->token_ids.begin() + static_cast<std::ptrdiff_t>((k + 1) * kBs));
          ASSERT_TRUE(mirror.emplace(s->block_hashes[k], std::make_pair(parent, tokens)).second);
          parent = s->block_hashes[k];
        }
      } else if (auto* r = std::get_if<KvBlockRemoved>(&e)) {
        ++removed;
        for (uint64_t h : r->block_hashes) ASSERT_EQ(mirror.erase(h), 1u) << "op " << op;
      } else {
        ++cleared;
        mirror.clear();
      }
    }
    std::set<uint64_t> mirrored, cached;
    for (int32_t id = 1; id < kv.pool().num_blocks(); ++id) {
      if (kv.pool().is_cached(id)) cached.insert(external_block_hash(kv.pool().block_hash(id)));
    }
    for (const auto& [h, _] : mirror) mirrored.insert(h);
    ASSERT_EQ(mirrored, cached) << "op " << op;
  }
  for (auto& r : live) kv.free(*r);
  EXPECT_GT(stored, 50);
  EXPECT_GT(removed, 5);
  EXPECT_GT(cleared, 0);
}

}  // namespace
}  // namespace llmserve
