#include "engine/kv_offload/kv_host_tier.h"

#include <cstring>
#include <string>

namespace llmserve {

KvHostTier::KvHostTier(int64_t budget, uint64_t page_bytes, size_t slots, KvHostBuffer slab)
    : budget_(budget), page_bytes_(page_bytes), free_slots_cap_(slots), slab_(std::move(slab)) {
  free_slots_.reserve(slots);
  for (size_t i = slots; i > 0; --i) free_slots_.push_back(i - 1);
}

Result<std::unique_ptr<KvHostTier>> KvHostTier::create(int64_t budget_bytes, uint64_t page_bytes,
                                                       const KvBlockIo& io) {
  // The least a page can charge: its payload, header and one block of token ids.
  const uint64_t min_charge = page_bytes + kKvPageHeaderBytes;
  if (page_bytes == 0 || budget_bytes <= 0 || static_cast<uint64_t>(budget_bytes) < min_charge) {
    return invalid_argument("kv_offload.host_bytes (" + std::to_string(budget_bytes) +
                            ") holds no KV page: one takes " + std::to_string(min_charge) +
                            " bytes or more");
  }
  const size_t slots = static_cast<size_t>(static_cast<uint64_t>(budget_bytes) / min_charge);
  LLMSERVE_ASSIGN_OR_RETURN(KvHostBuffer slab, io.alloc_host(slots * page_bytes));
  return std::unique_ptr<KvHostTier>(
      new KvHostTier(budget_bytes, page_bytes, slots, std::move(slab)));
}

bool KvHostTier::contains(const BlockHash& hash) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(hash);
  return it != index_.end() && it->second.committed;
}

KvHostPage KvHostTier::take_locked(
    std::unordered_map<BlockHash, Entry, BlockHashHasher>::iterator it) {
  Entry& e = it->second;
  KvHostPage p{e.header, std::move(e.tokens), {}};
  const std::byte* src = slot_ptr(e.slot);
  p.payload.assign(src, src + page_bytes_);
  free_slots_.push_back(e.slot);
  stats_.bytes -= e.bytes;
  --stats_.pages;
  lru_.erase(e.lru);
  index_.erase(it);
  return p;
}

std::byte* KvHostTier::reserve(const KvPageHeader& header, std::span<const int32_t> tokens,
                               std::vector<KvHostPage>& evicted) {
  const auto need = static_cast<int64_t>(
      kv_page_prefix_bytes(static_cast<uint32_t>(tokens.size())) + page_bytes_);
  std::lock_guard<std::mutex> lock(mu_);
  if (need > budget_ || index_.count(header.hash)) {
    ++stats_.full_refusals;
    return nullptr;
  }
  auto victim = lru_.begin();
  while ((stats_.bytes + need > budget_ || free_slots_.empty()) && victim != lru_.end()) {
    auto it = index_.find(*victim);
    ++victim;
    if (it->second.in_use > 0 || !it->second.committed) continue;
    evicted.push_back(take_locked(it));
    ++stats_.evicted_pages;
  }
  if (stats_.bytes + need > budget_ || free_slots_.empty()) {
    ++stats_.full_refusals;
    return nullptr;
  }
  Entry e;
  e.header = header;
  e.header.num_prefix_tokens = static_cast<uint32_t>(tokens.size());
  e.header.payload_bytes = page_bytes_;
  e.tokens.assign(tokens.begin(), tokens.end());
  e.slot = free_slots_.back();
  free_slots_.pop_back();
  e.bytes = need;
  e.in_use = 1;  // until commit
  // A child is inserted just before its parent in the LRU list: evicted first.
  auto parent = index_.find(header.parent);
  auto at =
      header.parent == BlockHash{} || parent == index_.end() ? lru_.end() : parent->second.lru;
  e.lru = lru_.insert(at, header.hash);
  stats_.bytes += need;
  ++stats_.pages;
  std::byte* out = slot_ptr(e.slot);
  index_.emplace(header.hash, std::move(e));
  return out;
}

void KvHostTier::commit(const BlockHash& hash) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(hash);
  if (it == index_.end() || it->second.committed) return;
  it->second.committed = true;
  it->second.in_use = 0;
  ++stats_.stored_pages;
}

void KvHostTier::abort(const BlockHash& hash) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(hash);
  if (it == index_.end() || it->second.committed) return;
  free_slots_.push_back(it->second.slot);
  stats_.bytes -= it->second.bytes;
  --stats_.pages;
  lru_.erase(it->second.lru);
  index_.erase(it);
}

std::optional<KvPageView> KvHostTier::acquire(const BlockHash& hash) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(hash);
  if (it == index_.end() || !it->second.committed) return std::nullopt;
  Entry& e = it->second;
  ++e.in_use;
  return KvPageView{e.header, e.tokens, std::span<const std::byte>(slot_ptr(e.slot), page_bytes_)};
}

void KvHostTier::release(const BlockHash& hash) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(hash);
  if (it != index_.end() && it->second.in_use > 0) --it->second.in_use;
}

void KvHostTier::touch_chain(std::span<const BlockHash> chain) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    auto e = index_.find(*it);
    if (e != index_.end()) lru_.splice(lru_.end(), lru_, e->second.lru);
  }
}

std::vector<KvHostPage> KvHostTier::drain() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<KvHostPage> out;
  for (auto v = lru_.begin(); v != lru_.end();) {
    auto it = index_.find(*v);
    ++v;
    if (it->second.in_use == 0 && it->second.committed) out.push_back(take_locked(it));
  }
  return out;
}

KvHostTierStats KvHostTier::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace llmserve
