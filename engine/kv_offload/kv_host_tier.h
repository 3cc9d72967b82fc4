// The host-memory tier: KV pages in one slab of host memory (plain RAM on the CPU backend, pinned
// memory on CUDA: KvBlockIo::alloc_host), under a byte budget, with LRU eviction by prefix (a new
// child goes just before its parent in the LRU order, so a chain is cut from its end). Each page
// keeps the same header fields and whole-prefix token ids as a disk page (kv_page_file.h), so a
// restore checks it by the same rule (kv_restore_check.h). Not persistent: the offloader demotes
// what it evicts (and, at shutdown, what it holds) to the disk tier. Thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv_offload/kv_block_io.h"
#include "engine/kv_offload/kv_page_file.h"

namespace llmserve {

struct KvHostTierStats {
  int64_t bytes = 0;  // pages held: payload, token ids and header each
  int64_t pages = 0;
  int64_t stored_pages = 0;
  int64_t evicted_pages = 0;  // left for the disk tier (demoted) or dropped
  int64_t full_refusals = 0;  // not stored: every page was in use by a restore
};

// A page leaving the host tier (evicted, or drained at shutdown), its bytes copied out.
struct KvHostPage {
  KvPageHeader header;
  std::vector<int32_t> tokens;
  std::vector<std::byte> payload;
};

class KvHostTier {
 public:
  // budget_bytes must hold at least one page of page_bytes (one block's payload) and its header.
  static Result<std::unique_ptr<KvHostTier>> create(int64_t budget_bytes, uint64_t page_bytes,
                                                    const KvBlockIo& io);

  bool contains(const BlockHash& hash) const;
  // Reserves memory for a new page (header.hash must not be held), evicting least-recently-used
  // pages not in use until the budget holds it; evicted receives them, bytes copied out. Returns
  // the page's payload memory (page_bytes()), to fill and then commit() or abort(); nullptr when
  // every page is in use (nothing stored, counted in full_refusals).
  std::byte* reserve(const KvPageHeader& header, std::span<const int32_t> tokens,
                     std::vector<KvHostPage>& evicted);
  void commit(const BlockHash& hash);  // visible to contains / acquire
  void abort(const BlockHash& hash);
  // The page as a view (header, tokens, payload in the slab), in use until release(): no eviction
  // moves it. nullopt when not held.
  std::optional<KvPageView> acquire(const BlockHash& hash);
  void release(const BlockHash& hash);
  // Marks a chain used (most recent), its first block last so it stays longest.
  void touch_chain(std::span<const BlockHash> chain);
  // Every page not in use, least recently used first, removed from the tier.
  std::vector<KvHostPage> drain();

  KvHostTierStats stats() const;
  int64_t budget_bytes() const { return budget_; }
  uint64_t page_bytes() const { return page_bytes_; }
  int64_t capacity_pages() const { return static_cast<int64_t>(free_slots_cap_); }

 private:
  KvHostTier(int64_t budget, uint64_t page_bytes, size_t slots, KvHostBuffer slab);
  struct Entry {
    KvPageHeader header;
    std::vector<int32_t> tokens;
    size_t slot = 0;
    int64_t bytes = 0;
    int32_t in_use = 0;
    bool committed = false;
    std::list<BlockHash>::iterator lru;  // front = next evicted
  };
  std::byte* slot_ptr(size_t slot) const { return slab_.get() + slot * page_bytes_; }
  KvHostPage take_locked(std::unordered_map<BlockHash, Entry, BlockHashHasher>::iterator it);

  const int64_t budget_;
  const uint64_t page_bytes_;
  const size_t free_slots_cap_;
  KvHostBuffer slab_;
  mutable std::mutex mu_;
  std::vector<size_t> free_slots_;
  std::list<BlockHash> lru_;
  std::unordered_map<BlockHash, Entry, BlockHashHasher> index_;
  KvHostTierStats stats_;
};

}  // namespace llmserve
