#include "engine/vision/encoder_cache.h"

namespace llmserve::vision {

ImageFeatures EncoderCache::get(uint64_t hash) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(hash);
  if (it == index_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  ++stats_.hits;
  return it->second->features;
}

void EncoderCache::put(uint64_t hash, ImageFeatures features) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(hash); it != index_.end()) {
    stats_.bytes -= bytes_of(it->second->features);
    --stats_.entries;
    lru_.erase(it->second);
    index_.erase(it);
  }
  const uint64_t bytes = bytes_of(features);
  if (bytes == 0 || bytes > budget_) return;
  while (stats_.bytes + bytes > budget_ && !lru_.empty()) {
    stats_.bytes -= bytes_of(lru_.back().features);
    --stats_.entries;
    ++stats_.evictions;
    index_.erase(lru_.back().hash);
    lru_.pop_back();
  }
  lru_.push_front({hash, std::move(features)});
  index_[hash] = lru_.begin();
  stats_.bytes += bytes;
  ++stats_.entries;
}

EncoderCacheStats EncoderCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace llmserve::vision
