// BlockPool: the KV cache's blocks as ids 0..num_blocks-1, their ref counts, the LRU free queue
// and the prefix map hash -> block. Block 0 is the null block: never handed out (padding target).
// Free queue: blocks with ref count 0, cached or not. Allocation takes from the head (evicting a
// cached block); a freed cached block goes to the tail, a freed uncached one to the head (it holds
// nothing worth keeping). A prefix-cache hit on a free block unlinks it in O(1).
// With events enabled, every change of the prefix map is recorded as a KV event (kv_event.h):
// BlockStored when cache_block registers a block, BlockRemoved when allocate evicts one or a
// reset drops some, AllBlocksCleared when a reset drops them all.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/core/status.h"
#include "engine/kv_cache/block_hash.h"
#include "engine/kv_events/kv_event_log.h"

namespace llmserve {

inline constexpr int32_t kNullBlockId = 0;

class BlockPool {
 public:
  // num_blocks >= 2 (one is the null block), block_size >= 1 tokens.
  BlockPool(int32_t num_blocks, int32_t block_size);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  int32_t num_usable_blocks() const { return num_blocks_ - 1; }
  int32_t num_free_blocks() const { return num_free_; }  // ref count 0, cached or not
  int32_t num_cached_blocks() const { return static_cast<int32_t>(prefix_map_.size()); }

  // Appends n blocks from the head of the free queue to out (ref count 1), evicting cached ones.
  // Precondition: n <= num_free_blocks().
  void allocate(int32_t n, std::vector<int32_t>& out);
  // The cached block whose hash, parent hash and tokens all match, or -1.
  int32_t lookup(const BlockHash& hash, const BlockHash& parent,
                 std::span<const int32_t> tokens) const;
  // Adds a reference (unlinking the block from the free queue when it was free).
  void touch(int32_t block_id);
  // Drops a reference; at zero the block joins the free queue. Release a request's blocks in the
  // order they should be evicted (first released = evicted first among cached blocks).
  void release(int32_t block_id);
  // Registers a full, referenced, uncached block under hash. Returns false, leaving it uncached,
  // when another block already holds that hash. tokens.size() == block_size().
  bool cache_block(int32_t block_id, const BlockHash& hash, const BlockHash& parent,
                   std::span<const int32_t> tokens);
  // Forgets every cached hash of free blocks (the blocks stay free). Used blocks keep theirs.
  // Returns true when no cached hash is left (events: AllBlocksCleared, else BlockRemoved).
  bool reset_prefix_cache();

  // KV events (off by default): enable, then take() each step's records.
  void enable_events(bool enabled) { events_.set_enabled(enabled); }
  bool events_enabled() const { return events_.enabled(); }
  std::vector<KvEvent> take_events() { return events_.take(); }
  // A tier below the pool (engine/kv_offload) stored or dropped a page: its KV event, with the
  // tier as medium.
  void record_tier_stored(const BlockHash& hash, const BlockHash& parent,
                          std::span<const int32_t> tokens, const std::string& medium) {
    events_.stored(
        external_block_hash(hash),
        parent == BlockHash{} ? std::nullopt : std::optional(external_block_hash(parent)), tokens,
        block_size_, medium);
  }
  void record_tier_removed(const BlockHash& hash, const std::string& medium) {
    events_.removed(external_block_hash(hash), medium);
  }

  int32_t ref_count(int32_t block_id) const { return ref_[block_id]; }
  // The hash a cached block is registered under (meaningful only while is_cached(block_id)).
  const BlockHash& block_hash(int32_t block_id) const { return hash_[block_id]; }
  bool is_cached(int32_t block_id) const { return cached_[block_id] != 0; }
  bool is_free(int32_t block_id) const { return in_queue_[block_id] != 0; }
  // Free queue from head (next evicted) to tail; O(num_blocks), for tests and debugging.
  std::vector<int32_t> free_queue() const;
  // Every structural invariant; O(num_blocks). Returns the first violation found.
  Status check_invariants() const;

 private:
  void unlink(int32_t id);
  void push_head(int32_t id);
  void push_tail(int32_t id);
  void uncache(int32_t id, bool record = true);

  int32_t num_blocks_;
  int32_t block_size_;
  int32_t sentinel_;  // index num_blocks_ in prev_/next_: the list's head/tail anchor
  int32_t num_free_ = 0;
  std::vector<int32_t> ref_;
  std::vector<int32_t> prev_, next_;
  std::vector<uint8_t> in_queue_, cached_;
  std::vector<BlockHash> hash_, parent_;
  std::vector<int32_t> tokens_;  // block_size_ tokens per cached block, for collision checks
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> prefix_map_;
  KvEventLog events_;
};

}  // namespace llmserve
