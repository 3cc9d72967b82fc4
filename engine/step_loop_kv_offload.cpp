// The step loop's part of the tiers below the page pool (engine/kv_offload, DESIGN §13):
// write-behind of newly cached blocks, read-ahead of a request's pages before its admission,
// and the tier's KV events.
#include <algorithm>

#include "engine/kv_offload/kv_page_file.h"
#include "engine/step_loop.h"

namespace llmserve {

void StepLoop::set_kv_offloader(std::unique_ptr<KvOffloader> offloader) {
  offloader_ = std::move(offloader);
  scheduler_->kv_cache_for_offload().capture_newly_cached(offloader_ != nullptr);
}

bool StepLoop::hold_for_restore(PendingSubmit& p) {
  if (offloader_ == nullptr) return false;
  const GenerateRequest& g = p.request;
  // A consumer's prompt comes from its producer; scored prompts skip the prefix cache.
  if (g.kv_transfer.consume || g.params.prompt_logprobs >= 0) return false;
  KvCacheManager& kv = scheduler_->kv_cache_for_offload();
  KvRestoreJob job;
  const int32_t cached = kv.cached_prefix_blocks(g.prompt_token_ids, g.cache_salt, job.hashes);
  if (cached >= static_cast<int32_t>(job.hashes.size())) return false;
  if (!offloader_->on_disk(job.hashes[static_cast<size_t>(cached)])) {
    offloader_->count_miss();
    return false;
  }
  job.parent = cached == 0 ? BlockHash{} : job.hashes[static_cast<size_t>(cached) - 1];
  job.hashes.erase(job.hashes.begin(), job.hashes.begin() + cached);
  job.key = p.id;
  job.first_block = cached;
  job.tokens = g.prompt_token_ids;
  job.salt = kv_salt_digest(g.cache_salt);
  offloader_->restore(std::move(job));
  const uint64_t id = p.id;
  held_.emplace(id, HeldRequest{std::move(p), Clock::now()});
  return true;
}

void StepLoop::poll_kv_offload() {
  if (offloader_ == nullptr) return;
  KvCacheManager& kv = scheduler_->kv_cache_for_offload();
  // Unpinned last block first, as KvCacheManager::free releases: a chain's end is evicted before
  // its start.
  std::vector<int32_t> copied = offloader_->take_copied();
  std::reverse(copied.begin(), copied.end());
  if (!copied.empty()) kv.unpin(copied);
  for (const KvTierEvent& e : offloader_->take_events()) {
    if (e.stored) {
      kv.record_tier_stored(e.hash, e.parent, e.tokens, "DISK");
    } else {
      kv.record_tier_removed(e.hash, "DISK");
    }
  }
  for (KvRestoreResult& r : offloader_->take_restored()) {
    auto it = held_.find(r.key);
    if (it == held_.end()) continue;
    PendingSubmit p = std::move(it->second.submit);
    const Clock::time_point since = it->second.since;
    held_.erase(it);
    if (!r.payloads.empty()) {
      const KvBlockIo& io = offloader_->io();
      const int32_t placed = kv.restore_blocks(
          p.request.prompt_token_ids, p.request.cache_salt, r.first_block, r.hashes,
          [&](int32_t block_id, size_t page) { io.copy_in(block_id, r.payloads[page]); });
      blocks_restored_ += static_cast<uint64_t>(placed);
    }
    metrics_.kv_restore_seconds.observe(
        std::chrono::duration<double>(Clock::now() - since).count());
    admit(std::move(p));
  }
}

void StepLoop::offload_new_blocks() {
  if (offloader_ == nullptr) return;
  KvCacheManager& kv = scheduler_->kv_cache_for_offload();
  for (KvCacheManager::NewlyCached& n : kv.take_newly_cached()) {
    // Still cached under its hash (a later step of the same pass could not have evicted it:
    // nothing ran in between), and not on disk already.
    const BlockPool& pool = kv.pool();
    if (!pool.is_cached(n.block_id) || !(pool.block_hash(n.block_id) == n.hash)) continue;
    if (!offloader_->wants(n.hash)) continue;
    kv.pin(std::span<const int32_t>(&n.block_id, 1));  // until the worker has copied it
    offloader_->store({n.block_id, n.hash, n.parent,
                       kv_salt_digest(n.cache_key ? *n.cache_key : std::string()),
                       std::move(n.tokens), n.block_index});
  }
}

void StepLoop::settle_kv_offload() {
  if (offloader_ == nullptr) return;
  offloader_->flush();
  poll_kv_offload();
}

}  // namespace llmserve
