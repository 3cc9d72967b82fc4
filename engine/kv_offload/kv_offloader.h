// KvOffloader: moves KV pages between the page pool and the tiers below it (host memory, then
// disk; either may be off), on a worker thread of its own, so that the step loop never waits on
// a tier (DESIGN §13).
//
// Write-behind: when a full block enters the prefix cache the step loop pins it and hands it
// over (store); the worker copies its bytes out (into the host tier's memory when it is on, else
// into a buffer written to disk afterwards) and posts the block id back (take_copied: the loop
// unpins it, so it is pinned for one copy only). A block evicted from the pool later is then
// already on a tier. Pages the host tier evicts are demoted to disk (written unless already
// there); at shutdown the host tier's pages are written to disk too, so a restart finds them.
// Read-ahead: before a request is admitted the loop asks for the pages of its prompt past what
// the pool holds (restore); the worker finds each page on the host tier or else on disk, checks
// it (kv_restore_check.h) and posts the result (take_restored); the loop copies the pages into
// free blocks, registers them in the prefix cache, where the request's own prefix lookup finds
// them, and hands the result back (release: host pages stay in use until then).
// Every call except the worker's own runs on the engine thread; wake() is called (from the
// worker) whenever there is something to take.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "engine/kv_offload/kv_block_io.h"
#include "engine/kv_offload/kv_disk_tier.h"
#include "engine/kv_offload/kv_fingerprint.h"
#include "engine/kv_offload/kv_host_tier.h"
#include "engine/kv_offload/kv_offload_options.h"

namespace llmserve {

struct KvStoreJob {
  int32_t block_id = 0;  // pinned by the caller until take_copied() returns it
  BlockHash hash, parent, salt;
  std::shared_ptr<const std::vector<int32_t>> tokens;  // the request's tokens, at least the prefix
  int32_t block_index = 0;                             // prefix = (block_index + 1) blocks
};

struct KvRestoreJob {
  uint64_t key = 0;               // the caller's id for the request
  std::vector<BlockHash> hashes;  // the request's block hashes [first_block, first_block + n)
  BlockHash parent;               // hash of block first_block - 1 (0 when first_block is 0)
  int32_t first_block = 0;
  std::vector<int32_t> tokens;  // the request's prompt
  BlockHash salt;
};

struct KvRestoreResult {
  uint64_t key = 0;
  int32_t first_block = 0;
  std::vector<BlockHash> hashes;  // of the restored blocks, in order
  // One block's bytes each, checked: in `owned` (read from disk) or in the host tier's memory
  // (in use until KvOffloader::release).
  std::vector<std::span<const std::byte>> pages;
  std::vector<std::vector<std::byte>> owned;
  std::vector<BlockHash> host_in_use;
  int32_t from_host = 0;  // how many of pages came from the host tier
  double seconds = 0;     // the worker's read and check
};

// A page entering or leaving a tier, for KV events (medium = the tier, vLLM's names).
struct KvTierEvent {
  bool stored = true;  // false: removed
  BlockHash hash, parent;
  std::vector<int32_t> tokens;  // the block's own tokens (stored only)
  const char* medium = "DISK";  // "CPU" (host tier) or "DISK"
};

struct KvOffloadStats {
  KvHostTierStats host;
  KvDiskTierStats disk;
  int64_t host_hits = 0;    // pages restored from host memory
  int64_t host_misses = 0;  // lookups past the pool that the host tier could not serve
  int64_t host_bytes_written = 0, host_bytes_read = 0;
  int64_t demoted_pages = 0;   // host -> disk
  int64_t disk_hits = 0;       // pages restored from disk
  int64_t disk_misses = 0;     // restore lookups that found no usable page on disk
  int64_t rejected_pages = 0;  // candidates refused by kv_restore_mismatch (collision, salt, ...)
  int64_t bytes_written = 0;   // to disk
  int64_t bytes_read = 0;      // from disk
  int64_t dropped_pages = 0;   // not written: the write queue was full
  int64_t restores = 0;
};

class KvOffloader {
 public:
  // host or disk may be null (that tier is off), not both.
  KvOffloader(const KvOffloadOptions& options, std::unique_ptr<KvBlockIo> io,
              KvFingerprint fingerprint, uint32_t block_size, std::unique_ptr<KvHostTier> host,
              std::unique_ptr<KvDiskTier> disk, std::function<void()> wake);
  // Finishes queued work, then writes the host tier's pages to disk (when both are on).
  ~KvOffloader();
  KvOffloader(const KvOffloader&) = delete;
  KvOffloader& operator=(const KvOffloader&) = delete;

  // A candidate only (the worker checks the page before it serves).
  bool on_tier(const BlockHash& hash) const;
  // False (nothing pinned needed) when the page is on a tier already or the write queue is full.
  bool wants(const BlockHash& hash);
  void store(KvStoreJob job);
  void restore(KvRestoreJob job);
  void count_miss();
  std::vector<int32_t> take_copied();
  std::vector<KvRestoreResult> take_restored();
  // The loop has copied a restored result's pages into the pool (or dropped it).
  void release(KvRestoreResult& result);
  std::vector<KvTierEvent> take_events();
  // Blocks the calling thread until every queued job is done (tests; shutdown).
  void flush();

  KvOffloadStats stats() const;
  const KvBlockIo& io() const { return *io_; }
  const KvFingerprint& fingerprint() const { return fingerprint_; }
  const KvDiskTier* disk() const { return disk_.get(); }
  const KvHostTier* host() const { return host_.get(); }
  const KvOffloadOptions& options() const { return options_; }

 private:
  // A page to write to disk: its header (hash, parent, salt), its prefix's token ids and bytes.
  struct PendingWrite {
    KvPageHeader header;
    std::shared_ptr<const std::vector<int32_t>> tokens;
    size_t num_tokens = 0;  // the prefix: tokens[0, num_tokens)
    std::vector<std::byte> payload;
  };
  void run();
  // Copies stored blocks out (into the host tier or a write buffer); returns the block ids.
  std::vector<int32_t> do_copy(std::deque<KvStoreJob>& jobs, std::deque<PendingWrite>& writes,
                               std::vector<KvTierEvent>& events);
  void do_restore(KvRestoreJob& job);
  void do_write(PendingWrite& w);
  void persist_host_pages();
  KvPageHeader header_of(const KvStoreJob& j) const;

  const KvOffloadOptions options_;
  const std::unique_ptr<KvBlockIo> io_;
  const KvFingerprint fingerprint_;
  const uint32_t block_size_;
  std::unique_ptr<KvHostTier> host_;
  std::unique_ptr<KvDiskTier> disk_;
  std::function<void()> wake_;

  mutable std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  bool stop_ = false;
  int busy_ = 0;
  std::deque<KvStoreJob> stores_;
  std::deque<KvRestoreJob> restores_;
  std::deque<PendingWrite> writes_;
  std::vector<int32_t> copied_;
  std::vector<KvRestoreResult> restored_;
  std::vector<KvTierEvent> events_;
  KvOffloadStats stats_;
  std::thread worker_;
};

}  // namespace llmserve
