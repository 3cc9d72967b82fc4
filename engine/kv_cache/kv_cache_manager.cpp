#include "engine/kv_cache/kv_cache_manager.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <string>

namespace llmserve {

KvCacheManager::KvCacheManager(int32_t num_blocks, int32_t block_size, bool enable_prefix_caching,
                               int64_t sliding_window)
    : pool_(num_blocks, block_size),
      enable_prefix_caching_(enable_prefix_caching),
      sliding_window_(std::max<int64_t>(sliding_window, 0)),
      token_scratch_(block_size),
      pins_(static_cast<size_t>(std::max(num_blocks, 0)), 0) {}

void KvCacheManager::pin(std::span<const int32_t> block_ids) {
  for (int32_t id : block_ids) {
    assert(id > kNullBlockId && id < pool_.num_blocks());
    pool_.touch(id);
    ++pins_[static_cast<size_t>(id)];
    ++num_pinned_;
  }
}

void KvCacheManager::unpin(std::span<const int32_t> block_ids) {
  for (int32_t id : block_ids) {
    assert(id > kNullBlockId && id < pool_.num_blocks() && pins_[static_cast<size_t>(id)] > 0);
    --pins_[static_cast<size_t>(id)];
    --num_pinned_;
    pool_.release(id);
  }
}

int32_t KvCacheManager::num_blocks_for_budget(int64_t bytes, int64_t bytes_per_block) {
  if (bytes <= 0 || bytes_per_block <= 0) return 0;
  return static_cast<int32_t>(
      std::min<int64_t>(bytes / bytes_per_block, std::numeric_limits<int32_t>::max()));
}

std::span<const int32_t> KvCacheManager::block_tokens(const Request& request, int32_t block_index) {
  const int32_t bs = pool_.block_size();
  const int32_t begin = block_index * bs;
  if (begin + bs <= request.num_prompt_tokens()) {
    return std::span<const int32_t>(request.prompt_token_ids).subspan(begin, bs);
  }
  for (int32_t i = 0; i < bs; ++i) token_scratch_[i] = request.token_at(begin + i);
  return token_scratch_;
}

void KvCacheManager::ensure_block_hashes(Request& request, int32_t num_full_blocks) {
  auto& hashes = request.kv.block_hashes;
  const auto extra = std::as_bytes(std::span<const char>(request.cache_key));
  const int32_t bs = pool_.block_size();
  while (static_cast<int32_t>(hashes.size()) < num_full_blocks) {
    const int32_t i = static_cast<int32_t>(hashes.size());
    const BlockHash parent = i == 0 ? BlockHash{} : hashes[i - 1];
    // The key of a block holding image rows: the salt, then the content hash of each image
    // with a row in [i * B, (i + 1) * B).
    bool images = false;
    for (size_t k = 0; k < request.image_spans.size() && k < request.image_hashes.size(); ++k) {
      const ImageSpan& s = request.image_spans[k];
      if (s.start >= (i + 1) * bs || s.end() <= i * bs) continue;
      if (!images) key_scratch_.assign(request.cache_key.begin(), request.cache_key.end());
      images = true;
      const uint64_t h = request.image_hashes[k];
      for (int b = 0; b < 8; ++b) key_scratch_.push_back(static_cast<char>((h >> (8 * b)) & 0xff));
    }
    hashes.push_back(
        hash_block_tokens(parent, block_tokens(request, i),
                          images ? std::as_bytes(std::span<const char>(key_scratch_)) : extra));
  }
}

CachedPrefix KvCacheManager::find_cached_prefix(Request& request) {
  assert(request.kv.block_ids.empty());
  prefix_scratch_.clear();
  if (!enable_prefix_caching_) return {};
  const int32_t max_blocks = (request.num_tokens() - 1) / pool_.block_size();
  ensure_block_hashes(request, max_blocks);
  BlockHash parent{};
  for (int32_t i = 0; i < max_blocks; ++i) {
    const BlockHash& h = request.kv.block_hashes[i];
    const int32_t id = pool_.lookup(h, parent, block_tokens(request, i));
    if (id < 0) break;
    prefix_scratch_.push_back(id);
    parent = h;
  }
  return CachedPrefix{static_cast<int32_t>(prefix_scratch_.size()) * pool_.block_size(),
                      prefix_scratch_, request.num_tokens()};
}

bool KvCacheManager::allocate(Request& request, int32_t num_new_tokens,
                              const CachedPrefix& prefix) {
  auto& blocks = request.kv.block_ids;
  assert(prefix.block_ids.empty() || blocks.empty());
  const int64_t total =
      int64_t{request.num_computed_tokens} + prefix.num_tokens + std::max(num_new_tokens, 0);
  const int64_t bs = pool_.block_size();
  const int64_t needed = (total + bs - 1) / bs;
  const int64_t have = static_cast<int64_t>(blocks.size() + prefix.block_ids.size());
  const int64_t new_blocks = std::max<int64_t>(0, needed - have);
  int64_t free_hits = 0;
  for (int32_t id : prefix.block_ids) free_hits += pool_.ref_count(id) == 0;
  if (new_blocks > pool_.num_free_blocks() - free_hits) return false;

  for (int32_t id : prefix.block_ids) {
    pool_.touch(id);
    blocks.push_back(id);
  }
  if (!prefix.block_ids.empty()) {
    request.kv.num_cached_blocks = static_cast<int32_t>(prefix.block_ids.size());
  }
  pool_.allocate(static_cast<int32_t>(new_blocks), blocks);
  if (enable_prefix_caching_ && prefix.num_query_tokens > 0) {
    prefix_queries_ += prefix.num_query_tokens;
    prefix_hits_ += prefix.num_tokens;
  }
  return true;
}

void KvCacheManager::cache_computed_blocks(Request& request) {
  if (!enable_prefix_caching_) return;
  auto& kv = request.kv;
  const int32_t full = std::min<int32_t>(request.num_computed_tokens / pool_.block_size(),
                                         static_cast<int32_t>(kv.block_ids.size()));
  if (full <= kv.num_cached_blocks) return;
  ensure_block_hashes(request, full);
  std::shared_ptr<const std::vector<int32_t>> tokens;
  std::shared_ptr<const std::string> key;
  for (int32_t i = kv.num_cached_blocks; i < full; ++i) {
    const BlockHash parent = i == 0 ? BlockHash{} : kv.block_hashes[i - 1];
    const int32_t id = kv.block_ids[i];
    if (!pool_.is_cached(id)) {
      const bool cached =
          pool_.cache_block(id, kv.block_hashes[i], parent, block_tokens(request, i));
      if (cached && capture_ && id != kNullBlockId) {
        if (tokens == nullptr) {
          auto t = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(full) *
                                                          pool_.block_size());
          for (size_t p = 0; p < t->size(); ++p)
            (*t)[p] = request.token_at(static_cast<int32_t>(p));
          tokens = std::move(t);
          key = std::make_shared<const std::string>(request.cache_key);
        }
        newly_cached_.push_back({id, i, kv.block_hashes[i], parent, tokens, key});
      }
    }
  }
  kv.num_cached_blocks = full;
}

int32_t KvCacheManager::cached_prefix_blocks(std::span<const int32_t> tokens,
                                             const std::string& cache_key,
                                             std::vector<BlockHash>& hashes) const {
  const int32_t bs = pool_.block_size();
  const int32_t max_blocks = tokens.empty() ? 0 : static_cast<int32_t>((tokens.size() - 1) / bs);
  const auto extra = std::as_bytes(std::span<const char>(cache_key));
  hashes.clear();
  int32_t cached = 0;
  bool chain = enable_prefix_caching_;
  for (int32_t i = 0; i < max_blocks; ++i) {
    const BlockHash parent = i == 0 ? BlockHash{} : hashes.back();
    const auto block = tokens.subspan(static_cast<size_t>(i) * bs, bs);
    hashes.push_back(hash_block_tokens(parent, block, extra));
    if (chain && pool_.lookup(hashes.back(), parent, block) >= 0) {
      ++cached;
    } else {
      chain = false;
    }
  }
  return cached;
}

int32_t KvCacheManager::restore_blocks(
    std::span<const int32_t> tokens, const std::string& cache_key, int32_t first_block,
    std::span<const BlockHash> hashes,
    const std::function<bool(int32_t block_id, size_t page)>& write) {
  if (!enable_prefix_caching_ || hashes.empty()) return 0;
  const int32_t bs = pool_.block_size();
  if (static_cast<size_t>(first_block + static_cast<int32_t>(hashes.size())) * bs > tokens.size()) {
    return 0;
  }
  const auto extra = std::as_bytes(std::span<const char>(cache_key));
  // Hold the chain's pool blocks before first_block so that taking free blocks does not evict
  // them; when one has gone meanwhile the restored pages would hang from nothing: restore none.
  std::vector<int32_t> held;
  BlockHash parent{};
  for (int32_t i = 0; i < first_block; ++i) {
    const auto block = tokens.subspan(static_cast<size_t>(i) * bs, bs);
    const BlockHash h = hash_block_tokens(parent, block, extra);
    const int32_t id = pool_.lookup(h, parent, block);
    if (id < 0) break;
    pool_.touch(id);
    held.push_back(id);
    parent = h;
  }
  int32_t n = 0;
  if (static_cast<int32_t>(held.size()) == first_block) {
    n = std::min<int32_t>(static_cast<int32_t>(hashes.size()), pool_.num_free_blocks());
  }
  std::vector<int32_t> ids;
  pool_.allocate(n, ids);
  for (int32_t i = 0; i < n; ++i) {
    if (!write(ids[i], static_cast<size_t>(i))) {
      n = i;  // a page that did not land is not registered, nor anything after it
      break;
    }
  }
  for (int32_t i = 0; i < n; ++i) {
    const auto block = tokens.subspan(static_cast<size_t>(first_block + i) * bs, bs);
    if (!pool_.cache_block(ids[i], hashes[i], parent, block)) {
      n = i;  // another block holds the hash already: the chain goes on there or not at all
      break;
    }
    parent = hashes[i];
  }
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) pool_.release(*it);
  for (auto it = held.rbegin(); it != held.rend(); ++it) pool_.release(*it);
  return n;
}

void KvCacheManager::free(Request& request) {
  auto& blocks = request.kv.block_ids;
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    if (*it != kNullBlockId) pool_.release(*it);
  }
  blocks.clear();
  request.kv.num_cached_blocks = 0;
  request.kv.num_window_freed_blocks = 0;
}

int32_t KvCacheManager::free_outside_window(Request& request) {
  if (sliding_window_ <= 0) return 0;
  auto& kv = request.kv;
  const int64_t first_key = int64_t{request.num_computed_tokens} + 1 - sliding_window_;
  if (first_key <= 0) return 0;
  const int64_t bs = pool_.block_size();
  const int32_t before = static_cast<int32_t>(
      std::min<int64_t>(first_key / bs, static_cast<int64_t>(kv.block_ids.size())));
  if (before <= kv.num_window_freed_blocks) return 0;
  for (int32_t i = kv.num_window_freed_blocks; i < before; ++i) {
    pool_.release(kv.block_ids[i]);
    kv.block_ids[i] = kNullBlockId;
  }
  const int32_t released = before - kv.num_window_freed_blocks;
  kv.num_window_freed_blocks = before;
  window_released_ += released;
  return released;
}

double KvCacheManager::usage() const {
  const int32_t usable = pool_.num_usable_blocks();
  return static_cast<double>(usable - pool_.num_free_blocks()) / usable;
}

Status KvCacheManager::check_invariants(std::span<const Request* const> requests) const {
  LLMSERVE_RETURN_IF_ERROR(pool_.check_invariants());
  std::vector<int32_t> holders(pins_.begin(), pins_.end());
  for (const Request* r : requests) {
    for (size_t i = 0; i < r->kv.block_ids.size(); ++i) {
      const int32_t id = r->kv.block_ids[i];
      if (id == kNullBlockId && static_cast<int32_t>(i) < r->kv.num_window_freed_blocks) continue;
      if (id <= kNullBlockId || id >= pool_.num_blocks()) {
        return internal_error("request " + std::to_string(r->id) + " holds bad block id");
      }
      ++holders[id];
    }
    const int64_t need =
        (int64_t{r->num_computed_tokens} + pool_.block_size() - 1) / pool_.block_size();
    if (static_cast<int64_t>(r->kv.block_ids.size()) < need) {
      return internal_error("request " + std::to_string(r->id) + " has too few blocks");
    }
  }
  for (int32_t id = 1; id < pool_.num_blocks(); ++id) {
    if (holders[id] != pool_.ref_count(id)) {
      return internal_error("block " + std::to_string(id) + " ref count " +
                            std::to_string(pool_.ref_count(id)) + " but " +
                            std::to_string(holders[id]) + " holders");
    }
  }
  return Status::ok();
}

}  // namespace llmserve
