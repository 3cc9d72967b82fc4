// KvOffloader: moves KV pages between the page pool and the tiers below it, on a worker thread
// of its own, so that the step loop never waits on a tier (DESIGN §13).
//
// Write-behind: when a full block enters the prefix cache the step loop pins it and hands it
// over (store); the worker copies its bytes out, posts the block id back (take_copied: the loop
// unpins it, so it is pinned for a memcpy only) and writes the page to disk afterwards. A block
// evicted from the pool later is then already on disk.
// Read-ahead: before a request is admitted the loop asks for the pages of its prompt past what
// the pool holds (restore); the worker reads and checks them (kv_restore_check.h) and posts the
// payloads (take_restored); the loop copies them into free blocks and registers them in the
// prefix cache, where the request's own prefix lookup finds them.
// Every call except the worker's own runs on the engine thread; wake() is called (from the
// worker) whenever there is something to take.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/kv_offload/kv_block_io.h"
#include "engine/kv_offload/kv_disk_tier.h"
#include "engine/kv_offload/kv_fingerprint.h"
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
  std::vector<BlockHash> hashes;                 // of the restored blocks, in order
  std::vector<std::vector<std::byte>> payloads;  // one block's bytes each, checked
  double seconds = 0;                            // the worker's read and check
};

// A page entering or leaving a tier, for KV events (medium = the tier).
struct KvTierEvent {
  bool stored = true;  // false: removed
  BlockHash hash, parent;
  std::vector<int32_t> tokens;  // the block's own tokens (stored only)
};

struct KvOffloadStats {
  KvDiskTierStats disk;
  int64_t disk_hits = 0;       // pages restored from disk
  int64_t disk_misses = 0;     // restore lookups that found no usable page on disk
  int64_t rejected_pages = 0;  // candidates refused by kv_restore_mismatch (collision, salt, ...)
  int64_t bytes_written = 0;
  int64_t bytes_read = 0;
  int64_t dropped_pages = 0;  // not written: the write queue was full
  int64_t restores = 0;
};

class KvOffloader {
 public:
  KvOffloader(const KvOffloadOptions& options, KvBlockIo io, KvFingerprint fingerprint,
              uint32_t block_size, std::unique_ptr<KvDiskTier> disk, std::function<void()> wake);
  ~KvOffloader();
  KvOffloader(const KvOffloader&) = delete;
  KvOffloader& operator=(const KvOffloader&) = delete;

  // A candidate only (the worker checks the page before it serves).
  bool on_disk(const BlockHash& hash) const { return disk_->contains(hash); }
  // False (nothing pinned needed) when the page is on disk already or the write queue is full.
  bool wants(const BlockHash& hash);
  void store(KvStoreJob job);
  void restore(KvRestoreJob job);
  void count_miss();
  std::vector<int32_t> take_copied();
  std::vector<KvRestoreResult> take_restored();
  std::vector<KvTierEvent> take_events();
  // Blocks the calling thread until every queued job is done (tests; shutdown).
  void flush();

  KvOffloadStats stats() const;
  const KvBlockIo& io() const { return io_; }
  const KvFingerprint& fingerprint() const { return fingerprint_; }
  const KvDiskTier& disk() const { return *disk_; }
  const KvOffloadOptions& options() const { return options_; }

 private:
  struct PendingWrite {
    KvStoreJob job;
    std::vector<std::byte> payload;
  };
  void run();
  void do_restore(KvRestoreJob& job);
  void do_write(PendingWrite& w);

  const KvOffloadOptions options_;
  const KvBlockIo io_;
  const KvFingerprint fingerprint_;
  const uint32_t block_size_;
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
