#include "engine/kv_events/kv_event_log.h"

#include <utility>

namespace llmserve {

void KvEventLog::stored(uint64_t hash, std::optional<uint64_t> parent,
                        std::span<const int32_t> tokens, int32_t block_size,
                        const std::string& medium) {
  if (!enabled_) return;
  if (!events_.empty()) {
    if (auto* last = std::get_if<KvBlockStored>(&events_.back());
        last != nullptr && parent.has_value() && last->block_size == block_size &&
        last->medium == medium && last->block_hashes.back() == *parent) {
      last->block_hashes.push_back(hash);
      last->token_ids.insert(last->token_ids.end(), tokens.begin(), tokens.end());
      return;
    }
  }
  KvBlockStored e;
  e.block_hashes.push_back(hash);
  e.parent_block_hash = parent;
  e.token_ids.assign(tokens.begin(), tokens.end());
  e.block_size = block_size;
  e.medium = medium;
  events_.emplace_back(std::move(e));
}

void KvEventLog::removed(uint64_t hash, const std::string& medium) {
  if (!enabled_) return;
  if (!events_.empty()) {
    if (auto* last = std::get_if<KvBlockRemoved>(&events_.back());
        last != nullptr && last->medium == medium) {
      last->block_hashes.push_back(hash);
      return;
    }
  }
  events_.emplace_back(KvBlockRemoved{{hash}, medium});
}

void KvEventLog::cleared() {
  if (!enabled_) return;
  events_.emplace_back(KvAllBlocksCleared{});
}

std::vector<KvEvent> KvEventLog::take() {
  std::vector<KvEvent> out;
  out.swap(events_);
  return out;
}

}  // namespace llmserve
