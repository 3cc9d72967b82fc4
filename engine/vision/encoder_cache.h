// The image encoder's outputs by content hash (image_content_hash), so an image is encoded once
// per daemon while it stays in the cache: least recently used entries go first once the bytes
// held (features only, 4 bytes a float) pass the budget. Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace llmserve::vision {

struct EncoderCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  uint64_t bytes = 0;    // held now
  uint64_t entries = 0;  // held now
};

using ImageFeatures = std::shared_ptr<const std::vector<float>>;

class EncoderCache {
 public:
  // budget_bytes 0: nothing is kept.
  explicit EncoderCache(uint64_t budget_bytes) : budget_(budget_bytes) {}

  // The features under `hash` (now the most recently used), or null (a miss is counted).
  ImageFeatures get(uint64_t hash);
  // Keeps `features` under `hash` (replacing an entry there), then evicts the least recently
  // used entries until the bytes fit the budget; an entry larger than the budget is not kept.
  void put(uint64_t hash, ImageFeatures features);
  EncoderCacheStats stats() const;
  uint64_t budget_bytes() const { return budget_; }

 private:
  struct Entry {
    uint64_t hash;
    ImageFeatures features;
  };
  static uint64_t bytes_of(const ImageFeatures& f) { return f ? f->size() * sizeof(float) : 0; }

  const uint64_t budget_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // front: most recently used
  std::unordered_map<uint64_t, std::list<Entry>::iterator> index_;
  EncoderCacheStats stats_;
};

}  // namespace llmserve::vision
