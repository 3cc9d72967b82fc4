// The disk tier: KV pages as files (kv_page_file.h) in one directory, under a byte budget, with
// LRU eviction by prefix (a page is never older than its descendants, so a chain is cut from its
// end). Survives restarts: open() indexes the directory, checking every page's header, token
// checksum and size; a torn or corrupted page is deleted and counted, a page written under
// another fingerprint (model, dtype, layout) is skipped and counted, and neither is ever served.
// A read checks the payload's checksum too. Thread-safe (one mutex; file I/O happens outside it
// only in read/store's file work, which touch one file each).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/core/status.h"
#include "engine/kv_cache/block_hash.h"
#include "engine/kv_offload/kv_page_file.h"

namespace llmserve {

struct KvDiskTierStats {
  int64_t bytes = 0;          // page files indexed, total size
  int64_t pages = 0;          // page files indexed
  int64_t loaded_pages = 0;   // indexed at open (from an earlier run)
  int64_t corrupt_pages = 0;  // torn or corrupted: deleted, never served
  int64_t foreign_pages = 0;  // another fingerprint or block size: skipped
  int64_t stored_pages = 0;
  int64_t evicted_pages = 0;
  int64_t write_errors = 0;
};

class KvDiskTier {
 public:
  // Creates the directory when missing. budget_bytes > 0.
  static Result<std::unique_ptr<KvDiskTier>> open(const std::string& dir, int64_t budget_bytes,
                                                  const BlockHash& fingerprint,
                                                  uint32_t block_size);

  bool contains(const BlockHash& hash) const;
  // Writes a page (to a temporary name, then renamed) and evicts least-recently-used pages
  // until the budget holds; evicted receives their hashes. A page whose hash is already held
  // is not written (ALREADY_EXISTS). A page larger than the budget is refused.
  Status store(const KvPageHeader& header, std::span<const int32_t> tokens,
               std::span<const std::byte> payload, std::vector<BlockHash>& evicted);
  // The page file's bytes, checked (parse_kv_page) and of this tier's fingerprint. A page that
  // fails is deleted and counted (corrupt_pages), and the error returned.
  Result<KvPageView> read(const BlockHash& hash, std::vector<std::byte>& file_bytes,
                          std::vector<int32_t>& token_storage);
  // Marks a chain used (most recent), its first block last so it stays longest.
  void touch_chain(std::span<const BlockHash> chain);
  void remove(const BlockHash& hash);

  KvDiskTierStats stats() const;
  int64_t budget_bytes() const { return budget_; }
  const std::string& dir() const { return dir_; }
  // The file a page lives in.
  std::string path_of(const BlockHash& hash) const;

 private:
  KvDiskTier(std::string dir, int64_t budget, const BlockHash& fingerprint, uint32_t block_size);
  struct Entry {
    int64_t bytes = 0;
    std::list<BlockHash>::iterator lru;  // front = next evicted
  };
  void index_existing();
  void erase_locked(const BlockHash& hash, bool delete_file);
  void evict_locked(std::vector<BlockHash>& evicted);

  const std::string dir_;
  const int64_t budget_;
  const BlockHash fingerprint_;
  const uint32_t block_size_;
  mutable std::mutex mu_;
  std::list<BlockHash> lru_;
  std::unordered_map<BlockHash, Entry, BlockHashHasher> index_;
  KvDiskTierStats stats_;
};

}  // namespace llmserve
