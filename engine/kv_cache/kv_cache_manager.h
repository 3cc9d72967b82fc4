// KvCacheManager: the scheduler's view of the KV cache. Gives requests blocks for the tokens they
// are about to compute, finds cached prefixes, registers newly computed full blocks in the prefix
// cache and frees a request's blocks. It writes Request::kv and never Request::num_computed_tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/kv_cache/block_pool.h"
#include "engine/request.h"

namespace llmserve {

// Result of a prefix lookup: the first num_tokens tokens (a multiple of block_size) are cached in
// block_ids. block_ids points into the manager and is valid until the next find_cached_prefix.
struct CachedPrefix {
  int32_t num_tokens = 0;
  std::span<const int32_t> block_ids;
  int32_t num_query_tokens = 0;  // counted as a prefix-cache query once allocate succeeds
};

class KvCacheManager {
 public:
  // num_blocks >= 2 (block 0 is reserved), block_size >= 1 tokens. sliding_window > 0 (tokens):
  // every query attends only its last sliding_window positions (ModelConfig::sliding_window), so
  // free_outside_window can give back blocks no later query reads.
  KvCacheManager(int32_t num_blocks, int32_t block_size, bool enable_prefix_caching = true,
                 int64_t sliding_window = 0);

  // Blocks that fit in a byte budget: floor(bytes / bytes_per_block), clamped to [0, INT32_MAX].
  static int32_t num_blocks_for_budget(int64_t bytes, int64_t bytes_per_block);

  // Longest run of cached full blocks from the request's start, always leaving its last token to
  // compute. Precondition: the request holds no blocks. Fills request.kv.block_hashes lazily.
  CachedPrefix find_cached_prefix(Request& request);
  // Makes the request's blocks cover num_computed_tokens + prefix.num_tokens + num_new_tokens
  // positions, first taking prefix's blocks (prefix from find_cached_prefix on this request, just
  // before). Returns false, changing nothing, when too few blocks are free. The caller then sets
  // num_computed_tokens += prefix.num_tokens.
  [[nodiscard]] bool allocate(Request& request, int32_t num_new_tokens,
                              const CachedPrefix& prefix = {});
  // Registers the request's full blocks below num_computed_tokens in the prefix cache.
  void cache_computed_blocks(Request& request);
  // Returns the request's blocks to the free queue (cached ones stay cached until evicted).
  void free(Request& request);
  // With a sliding window W: releases the request's blocks that lie wholly before position
  // num_computed_tokens + 1 - W (the first key its next query attends; later queries start later)
  // and puts kNullBlockId in their table entries. Call after cache_computed_blocks, so those
  // blocks are registered first (they stay cached until evicted). Returns the blocks released.
  int32_t free_outside_window(Request& request);
  int64_t window_released_blocks() const { return window_released_; }  // since start
  // Pins blocks beyond their requests (a prefill kept for a remote consumer, a transfer still
  // writing into blocks whose request ended): each pin is one more reference, so the blocks are
  // neither freed nor evicted until unpin drops it. Ids must be real blocks (not kNullBlockId).
  void pin(std::span<const int32_t> block_ids);
  void unpin(std::span<const int32_t> block_ids);
  int64_t num_pinned_blocks() const { return num_pinned_; }
  // Drops cached hashes of free blocks; true when none is left (used blocks keep theirs).
  bool reset_prefix_cache() { return pool_.reset_prefix_cache(); }
  // KV events of the prefix cache (engine/kv_events), off by default: enable, then take the
  // events recorded since the last take (once per engine step).
  void enable_events(bool enabled) { pool_.enable_events(enabled); }
  std::vector<KvEvent> take_events() { return pool_.take_events(); }

  // Tiers below the pool (engine/kv_offload). With capture on, cache_computed_blocks records
  // each block it registers (its id, hash, parent, index in the request, the request's tokens
  // up to it and cache key); take_newly_cached hands them over once per step.
  struct NewlyCached {
    int32_t block_id = 0;
    int32_t block_index = 0;
    BlockHash hash, parent;
    std::shared_ptr<const std::vector<int32_t>> tokens;  // at least (block_index + 1) blocks
    std::shared_ptr<const std::string> cache_key;
  };
  void capture_newly_cached(bool on) { capture_ = on; }
  std::vector<NewlyCached> take_newly_cached() { return std::exchange(newly_cached_, {}); }
  // Puts restored pages into the pool as cached, free blocks (LRU tail, last block evicted
  // first), continuing a request's chain after its first `first_block` blocks: for page i,
  // takes a free block, has write(block_id, i) fill it (false: it could not; stop there), and
  // registers it under hashes[i] with tokens [(first_block + i) * B, +B). The chain's cached blocks
  // before first_block are held meanwhile so they are not evicted for it. Restores only while free
  // blocks remain beyond the ones it holds; returns the pages placed.
  int32_t restore_blocks(std::span<const int32_t> tokens, const std::string& cache_key,
                         int32_t first_block, std::span<const BlockHash> hashes,
                         const std::function<bool(int32_t block_id, size_t page)>& write);
  // Leading full blocks of tokens (hashed with cache_key) cached in the pool, and their hashes
  // (as many as full blocks fit before the last token: at most (tokens - 1) / B).
  int32_t cached_prefix_blocks(std::span<const int32_t> tokens, const std::string& cache_key,
                               std::vector<BlockHash>& hashes) const;
  // KV events of a tier below the pool.
  void record_tier_stored(const BlockHash& hash, const BlockHash& parent,
                          std::span<const int32_t> tokens, const std::string& medium) {
    pool_.record_tier_stored(hash, parent, tokens, medium);
  }
  void record_tier_removed(const BlockHash& hash, const std::string& medium) {
    pool_.record_tier_removed(hash, medium);
  }

  std::span<const int32_t> block_table(const Request& request) const {
    return request.kv.block_ids;
  }
  int32_t block_size() const { return pool_.block_size(); }
  int32_t num_usable_blocks() const { return pool_.num_usable_blocks(); }
  int32_t num_free_blocks() const { return pool_.num_free_blocks(); }
  // Blocks held by requests / usable blocks, in [0, 1].
  double usage() const;
  bool prefix_caching_enabled() const { return enable_prefix_caching_; }
  int64_t prefix_cache_queries() const { return prefix_queries_; }  // tokens looked up
  int64_t prefix_cache_hits() const { return prefix_hits_; }        // tokens found cached
  const BlockPool& pool() const { return pool_; }

  // Pool invariants, plus: every block's ref count equals the number of the given requests that
  // hold it plus its pins (pass every request holding blocks; none when all have ended), and each
  // request's
  // blocks cover its computed tokens.
  Status check_invariants(std::span<const Request* const> requests = {}) const;

 private:
  void ensure_block_hashes(Request& request, int32_t num_full_blocks);
  std::span<const int32_t> block_tokens(const Request& request, int32_t block_index);

  BlockPool pool_;
  bool enable_prefix_caching_;
  int64_t sliding_window_;
  int64_t window_released_ = 0;
  int64_t prefix_queries_ = 0;
  int64_t prefix_hits_ = 0;
  std::vector<int32_t> token_scratch_;
  std::string key_scratch_;  // a block's extra key when it holds image rows
  std::vector<int32_t> prefix_scratch_;
  std::vector<int32_t> pins_;  // per block
  bool capture_ = false;
  std::vector<NewlyCached> newly_cached_;
  int64_t num_pinned_ = 0;
};

}  // namespace llmserve
