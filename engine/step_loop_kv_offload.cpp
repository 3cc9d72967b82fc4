// The step loop's part of the tiers below the page pool (engine/kv_offload, DESIGN §13):
// write-behind of newly cached blocks, read-ahead of a request's pages before its admission (and
// of a preempted request's before its readmission), and the tiers' KV events.
#include <algorithm>

#include "engine/kv_offload/kv_page_file.h"
#include "engine/step_loop.h"

namespace llmserve {
namespace {

// Restore keys of preempted requests (by the scheduler's id) differ from held submissions'.
constexpr uint64_t kPreemptedKey = 1ull << 63;

std::vector<int32_t> all_tokens(const Request& r) {
  std::vector<int32_t> t(r.prompt_token_ids);
  t.insert(t.end(), r.output_token_ids.begin(), r.output_token_ids.end());
  return t;
}

}  // namespace

void StepLoop::set_kv_offloader(std::unique_ptr<KvOffloader> offloader) {
  offloader_ = std::move(offloader);
  scheduler_->kv_cache_for_offload().capture_newly_cached(offloader_ != nullptr);
  if (offloader_ != nullptr) {
    scheduler_->set_readmit_hook([this](const Request& r) { return restore_preempted(r); });
  }
}

// A preempted request comes up for admission: its computed blocks were cached (and written
// behind to a tier) when they filled; what the pool has evicted since is read back before it is
// admitted, instead of recomputed.
bool StepLoop::restore_preempted(const Request& r) {
  if (r.score_prompt || r.pool || r.remote_kv) return false;
  if (!start_restore(all_tokens(r), r.cache_key, r.id | kPreemptedKey)) return false;
  preempted_held_[r.id] = Clock::now();
  return true;
}

bool StepLoop::start_restore(std::vector<int32_t> tokens, const std::string& cache_key,
                             uint64_t key) {
  KvRestoreJob job;
  const int32_t cached =
      scheduler_->kv_cache_for_offload().cached_prefix_blocks(tokens, cache_key, job.hashes);
  if (cached >= static_cast<int32_t>(job.hashes.size())) return false;
  if (!offloader_->on_tier(job.hashes[static_cast<size_t>(cached)])) {
    offloader_->count_miss();
    return false;
  }
  job.parent = cached == 0 ? BlockHash{} : job.hashes[static_cast<size_t>(cached) - 1];
  job.hashes.erase(job.hashes.begin(), job.hashes.begin() + cached);
  job.key = key;
  job.first_block = cached;
  job.tokens = std::move(tokens);
  job.salt = kv_salt_digest(cache_key);
  offloader_->restore(std::move(job));
  return true;
}

int32_t StepLoop::place_restored(std::span<const int32_t> tokens, const std::string& cache_key,
                                 const KvRestoreResult& r) {
  if (r.pages.empty()) return 0;
  const KvBlockIo& io = offloader_->io();
  const int32_t placed = scheduler_->kv_cache_for_offload().restore_blocks(
      tokens, cache_key, r.first_block, r.hashes,
      [&](int32_t block_id, size_t page) { return io.copy_in(block_id, r.pages[page]).is_ok(); });
  blocks_restored_ += static_cast<uint64_t>(placed);
  return placed;
}

void StepLoop::place_preempted(KvRestoreResult& r) {
  const uint64_t id = r.key & ~kPreemptedKey;
  auto held = preempted_held_.find(id);
  const Request* req = scheduler_->find(id);
  if (held != preempted_held_.end() && req != nullptr && req->tier_hold) {
    preempted_restores_ += place_restored(all_tokens(*req), req->cache_key, r) > 0 ? 1 : 0;
    metrics_.kv_restore_seconds.observe(
        std::chrono::duration<double>(Clock::now() - held->second).count());
    (void)scheduler_->release_tier_hold(id);
  }
  if (held != preempted_held_.end()) preempted_held_.erase(held);
  offloader_->release(r);
}

bool StepLoop::hold_for_restore(PendingSubmit& p) {
  if (offloader_ == nullptr) return false;
  const GenerateRequest& g = p.request;
  // A consumer's prompt comes from its producer; scored prompts skip the prefix cache.
  // A prompt with images: its blocks' hashes carry the images' (a read-ahead by tokens alone
  // would look for other pages).
  if (g.kv_transfer.consume || g.params.prompt_logprobs >= 0 || !g.images.empty()) return false;
  if (!start_restore(g.prompt_token_ids, g.cache_salt, p.id)) return false;
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
      kv.record_tier_stored(e.hash, e.parent, e.tokens, e.medium);
    } else {
      kv.record_tier_removed(e.hash, e.medium);
    }
  }
  for (KvRestoreResult& r : offloader_->take_restored()) {
    if (r.key & kPreemptedKey) {
      place_preempted(r);
      continue;
    }
    auto it = held_.find(r.key);
    if (it == held_.end()) {
      offloader_->release(r);
      continue;
    }
    PendingSubmit p = std::move(it->second.submit);
    const Clock::time_point since = it->second.since;
    held_.erase(it);
    place_restored(p.request.prompt_token_ids, p.request.cache_salt, r);
    offloader_->release(r);
    metrics_.kv_restore_seconds.observe(
        std::chrono::duration<double>(Clock::now() - since).count());
    admit(std::move(p));
  }
}

void StepLoop::offload_new_blocks() {
  if (offloader_ == nullptr) return;
  KvCacheManager& kv = scheduler_->kv_cache_for_offload();
  std::vector<KvCacheManager::NewlyCached> fresh = kv.take_newly_cached();
  if (fresh.empty()) return;
  if (const Status st = offloader_->io().settle(); !st.is_ok()) return;  // the step failed
  for (KvCacheManager::NewlyCached& n : fresh) {
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
