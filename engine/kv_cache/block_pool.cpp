#include "engine/kv_cache/block_pool.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace llmserve {

BlockPool::BlockPool(int32_t num_blocks, int32_t block_size)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      sentinel_(num_blocks),
      ref_(num_blocks, 0),
      prev_(num_blocks + 1),
      next_(num_blocks + 1),
      in_queue_(num_blocks, 0),
      cached_(num_blocks, 0),
      hash_(num_blocks),
      parent_(num_blocks),
      tokens_(static_cast<size_t>(num_blocks) * block_size, 0) {
  assert(num_blocks >= 2 && block_size >= 1);
  prev_[sentinel_] = next_[sentinel_] = sentinel_;
  for (int32_t id = 1; id < num_blocks_; ++id) push_tail(id);
  prefix_map_.reserve(num_blocks);
}

void BlockPool::unlink(int32_t id) {
  next_[prev_[id]] = next_[id];
  prev_[next_[id]] = prev_[id];
  in_queue_[id] = 0;
  --num_free_;
}

void BlockPool::push_head(int32_t id) {
  prev_[id] = sentinel_;
  next_[id] = next_[sentinel_];
  prev_[next_[sentinel_]] = id;
  next_[sentinel_] = id;
  in_queue_[id] = 1;
  ++num_free_;
}

void BlockPool::push_tail(int32_t id) {
  next_[id] = sentinel_;
  prev_[id] = prev_[sentinel_];
  next_[prev_[sentinel_]] = id;
  prev_[sentinel_] = id;
  in_queue_[id] = 1;
  ++num_free_;
}

void BlockPool::uncache(int32_t id, bool record) {
  auto it = prefix_map_.find(hash_[id]);
  if (it != prefix_map_.end() && it->second == id) prefix_map_.erase(it);
  cached_[id] = 0;
  if (record) events_.removed(external_block_hash(hash_[id]));
}

void BlockPool::allocate(int32_t n, std::vector<int32_t>& out) {
  assert(n <= num_free_);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t id = next_[sentinel_];
    unlink(id);
    if (cached_[id]) uncache(id);
    ref_[id] = 1;
    out.push_back(id);
  }
}

int32_t BlockPool::lookup(const BlockHash& hash, const BlockHash& parent,
                          std::span<const int32_t> tokens) const {
  auto it = prefix_map_.find(hash);
  if (it == prefix_map_.end()) return -1;
  const int32_t id = it->second;
  if (!(parent_[id] == parent) || tokens.size() != static_cast<size_t>(block_size_)) return -1;
  const int32_t* stored = &tokens_[static_cast<size_t>(id) * block_size_];
  if (!std::equal(tokens.begin(), tokens.end(), stored)) return -1;
  return id;
}

void BlockPool::touch(int32_t block_id) {
  assert(block_id != kNullBlockId);
  if (ref_[block_id] == 0) unlink(block_id);
  ++ref_[block_id];
}

void BlockPool::release(int32_t block_id) {
  assert(block_id != kNullBlockId && ref_[block_id] > 0);
  if (--ref_[block_id] > 0) return;
  if (cached_[block_id]) {
    push_tail(block_id);
  } else {
    push_head(block_id);
  }
}

bool BlockPool::cache_block(int32_t block_id, const BlockHash& hash, const BlockHash& parent,
                            std::span<const int32_t> tokens) {
  assert(ref_[block_id] > 0 && !cached_[block_id]);
  assert(tokens.size() == static_cast<size_t>(block_size_));
  if (!prefix_map_.emplace(hash, block_id).second) return false;
  cached_[block_id] = 1;
  hash_[block_id] = hash;
  parent_[block_id] = parent;
  std::copy(tokens.begin(), tokens.end(), &tokens_[static_cast<size_t>(block_id) * block_size_]);
  events_.stored(external_block_hash(hash),
                 parent == BlockHash{} ? std::nullopt : std::optional(external_block_hash(parent)),
                 tokens, block_size_);
  return true;
}

bool BlockPool::reset_prefix_cache() {
  int32_t droppable = 0;
  for (int32_t id = 1; id < num_blocks_; ++id) droppable += cached_[id] && ref_[id] == 0;
  const bool all = droppable == num_cached_blocks();
  for (int32_t id = 1; id < num_blocks_; ++id) {
    if (cached_[id] && ref_[id] == 0) uncache(id, /*record=*/!all);
  }
  if (all) events_.cleared();
  return all;
}

std::vector<int32_t> BlockPool::free_queue() const {
  std::vector<int32_t> order;
  order.reserve(num_free_);
  for (int32_t id = next_[sentinel_]; id != sentinel_; id = next_[id]) order.push_back(id);
  return order;
}

Status BlockPool::check_invariants() const {
  auto fail = [](const std::string& what, int32_t id) {
    return internal_error("block pool: " + what + " (block " + std::to_string(id) + ")");
  };
  if (ref_[kNullBlockId] != 0 || in_queue_[kNullBlockId] || cached_[kNullBlockId]) {
    return fail("null block in use", kNullBlockId);
  }
  int32_t walked = 0;
  for (int32_t id = next_[sentinel_], prev = sentinel_; id != sentinel_;
       prev = id, id = next_[id]) {
    if (id <= kNullBlockId || id >= num_blocks_) return fail("bad id in free queue", id);
    if (prev_[id] != prev) return fail("broken back link", id);
    if (!in_queue_[id]) return fail("linked but not marked free", id);
    if (++walked > num_blocks_) return fail("free queue cycle", id);
  }
  if (walked != num_free_)
    return fail("free count " + std::to_string(num_free_) + " != queue", walked);
  int32_t used = 0, cached = 0;
  for (int32_t id = 1; id < num_blocks_; ++id) {
    if (ref_[id] < 0) return fail("negative ref count", id);
    if ((ref_[id] == 0) != (in_queue_[id] != 0)) return fail("free iff ref count 0 violated", id);
    used += ref_[id] > 0;
    if (cached_[id]) {
      ++cached;
      auto it = prefix_map_.find(hash_[id]);
      if (it == prefix_map_.end() || it->second != id) return fail("cached block not in map", id);
    }
  }
  if (used + num_free_ != num_usable_blocks()) return fail("used + free != usable", used);
  if (cached != num_cached_blocks()) return fail("prefix map holds uncached blocks", cached);
  return Status::ok();
}

}  // namespace llmserve
